"""How a recorded dispatch tells what each hook did: changes found by comparing the data
before and after each hook, the dispatch depth carried through suspended hooks and concurrent
tasks, and data a caller keeps.

Every test drives a real HookManager.dispatch with a HistoryRecorder attached and reads the
records back with ``runs()``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import types
from collections.abc import Generator
from typing import Any

import pytest

from tether import HookBlocked, HookContext, HookEvent, HookManager
from tether.hooks._background import drain
from tether.hooks._history import HistoryRecorder

UPS = HookEvent.USER_PROMPT_SUBMIT
CREATED = HookEvent.TASK_CREATED
DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


def recorded() -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    return manager, history


def outcomes(history: HistoryRecorder) -> dict[str, str]:
    return {run.hook_name: run.outcome for run in history.runs()}


async def test_writing_back_what_was_there_is_passed_and_a_real_write_is_applied() -> None:
    manager, history = recorded()

    async def same(ctx: HookContext) -> None:
        ctx.data["prompt"] = ctx.data["prompt"]
        ctx.data.setdefault("event_id", "other")  # present: not a write
        ctx.data.pop("absent", None)  # missing: not a write

    async def real(ctx: HookContext) -> None:
        ctx.data["note"] = "added"

    manager.register(UPS, same, name="same", priority=2)
    manager.register(UPS, real, name="real", priority=1)
    await manager.dispatch(UPS, DATA)
    assert outcomes(history) == {"same": "passed", "real": "applied"}


async def test_each_kind_of_write_marks_the_hook_that_made_it() -> None:
    writes = {
        "setitem": lambda d: d.__setitem__("x", 1),
        "delitem": lambda d: d.__delitem__("trigger_id"),
        "update": lambda d: d.update(x=2),
        "pop": lambda d: d.pop("trigger_type"),
        "popitem": lambda d: d.popitem(),
        "setdefault": lambda d: d.setdefault("new", 3),
        "clear": lambda d: d.clear(),
        "ior": lambda d: d.__ior__({"y": 4}),
        # Around the data's own methods: no write-noting container could see these.
        "unbound_setitem": lambda d: dict.__setitem__(d, "x", 5),
        "unbound_update": lambda d: dict.update(d, x=6),
        "init": lambda d: d.__init__(x=7),
    }
    for name, write in writes.items():
        manager, history = recorded()

        async def reads(ctx: HookContext) -> None:
            assert isinstance(ctx.data, dict)

        async def writes_once(ctx: HookContext, write: Any = write) -> None:
            write(ctx.data)

        manager.register(CREATED, reads, name="before", priority=2)
        manager.register(CREATED, writes_once, name=name, priority=1)
        manager.register(CREATED, reads, name="after", priority=0)
        await manager.dispatch(CREATED, DATA)
        assert outcomes(history) == {"before": "passed", name: "applied", "after": "passed"}


async def test_writes_the_caller_makes_after_the_dispatch_change_no_record() -> None:
    manager, history = recorded()

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["prompt"]

    manager.register(UPS, reads, name="reads")
    result = await manager.dispatch(UPS, DATA)
    result.data["prompt"] = "changed by the caller"
    result.data.update(more=1)
    assert outcomes(history) == {"reads": "passed"}
    assert history.runs()[0].patch_applied is False


async def test_a_hook_that_replaces_the_data_is_applied_and_later_writes_are_still_seen() -> None:
    manager, history = recorded()

    async def replaces(ctx: HookContext) -> None:
        ctx.data = {**ctx.data, "prompt": "rewritten"}

    async def echoes(ctx: HookContext) -> None:
        ctx.data = dict(ctx.data)  # the same content: no change

    async def writes(ctx: HookContext) -> None:
        ctx.data["extra"] = True

    manager.register(UPS, replaces, name="replaces", priority=3)
    manager.register(UPS, echoes, name="echoes", priority=2)
    manager.register(UPS, writes, name="writes", priority=1)
    result = await manager.dispatch(UPS, DATA)
    assert result.data["prompt"] == "rewritten"
    assert result.data["extra"] is True
    assert outcomes(history) == {"replaces": "applied", "echoes": "passed", "writes": "applied"}
    patched = {run.hook_name: run.patch_applied for run in history.runs()}
    assert patched == {"replaces": True, "echoes": False, "writes": False}


async def test_copies_and_pickles_of_the_data_are_plain_dicts() -> None:
    manager, _ = recorded()
    seen: dict[str, Any] = {}

    async def copies(ctx: HookContext) -> None:
        seen["deep"] = copy.deepcopy(ctx.data)
        seen["pickled"] = pickle.loads(pickle.dumps(ctx.data))

    manager.register(UPS, copies)
    await manager.dispatch(UPS, DATA)
    assert type(seen["deep"]) is dict
    assert seen["deep"] == DATA
    assert type(seen["pickled"]) is dict
    assert seen["pickled"] == DATA


async def test_depth_is_right_inside_a_hook_after_it_suspended() -> None:
    manager, history = recorded()

    async def nests_after_a_pause(ctx: HookContext) -> None:
        await asyncio.sleep(0)
        await manager.dispatch(CREATED, {"event_id": "inner"})
        await asyncio.sleep(0)
        await manager.dispatch(CREATED, {"event_id": "inner-2"})

    async def inner(ctx: HookContext) -> None:
        await asyncio.sleep(0)

    manager.register(UPS, nests_after_a_pause, name="outer")
    manager.register(CREATED, inner, name="inner")
    await manager.dispatch(UPS, DATA)
    depths = [(run.hook_name, run.dispatch_depth) for run in history.runs()]
    assert depths == [("inner", 1), ("inner", 1), ("outer", 0)]


async def dispatch_meanwhile(manager: HookManager, release: asyncio.Event) -> None:
    """Dispatch user_prompt_submit in a task; while its hook waits for ``release``, dispatch
    task_created from here; then release it."""
    waiting = asyncio.create_task(manager.dispatch(UPS, DATA))
    await asyncio.sleep(0.01)
    await manager.dispatch(CREATED, {"event_id": "other"})
    release.set()
    await waiting


async def test_a_suspended_hook_does_not_lend_its_depth_to_other_tasks() -> None:
    """Two dispatches interleave: while one's hook waits, the other starts at depth 0."""
    manager, history = recorded()
    release = asyncio.Event()

    async def waits(ctx: HookContext) -> None:
        await release.wait()

    async def quick(ctx: HookContext) -> None:
        return None

    manager.register(UPS, waits, name="waits")
    manager.register(CREATED, quick, name="quick")
    await dispatch_meanwhile(manager, release)
    assert {(r.hook_name, r.dispatch_depth) for r in history.runs()} == {
        ("waits", 0),
        ("quick", 0),
    }


async def test_a_suspended_generator_based_hook_does_not_lend_its_depth_to_other_tasks() -> None:
    """Regression: a hook's awaitable that was no native coroutine (a generator-based or
    compiled one) was awaited with the depth cell left one deeper while it waited, so a
    dispatch another task made meanwhile was recorded as nested (depth 1)."""
    manager, history = recorded()
    release = asyncio.Event()

    class Waits:
        async def __call__(self, ctx: HookContext) -> None:
            raise AssertionError("replaced below, after registration")

    @types.coroutine
    def waits() -> Generator[Any, None, None]:
        yield from release.wait().__await__()

    async def quick(ctx: HookContext) -> None:
        return None

    manager.register(UPS, Waits(), name="waits")
    Waits.__call__ = lambda self, ctx: waits()  # type: ignore[method-assign]
    manager.register(CREATED, quick, name="quick")
    await dispatch_meanwhile(manager, release)
    assert {(r.hook_name, r.dispatch_depth, r.outcome) for r in history.runs()} == {
        ("waits", 0, "passed"),
        ("quick", 0, "passed"),
    }


async def test_a_hook_that_raises_after_suspending_leaves_the_depth_as_it_was() -> None:
    manager, history = recorded()

    async def fails_later(ctx: HookContext) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("late failure")

    async def quick(ctx: HookContext) -> None:
        return None

    manager.register(UPS, fails_later, name="fails_later", priority=1)
    manager.register(UPS, quick, name="quick")
    manager.register(CREATED, quick, name="after")
    await manager.dispatch(UPS, DATA)
    await manager.dispatch(CREATED, {"event_id": "next"})
    runs = [(r.hook_name, r.outcome, r.dispatch_depth) for r in history.runs()]
    assert runs == [("fails_later", "failed", 0), ("quick", "passed", 0), ("after", "passed", 0)]


async def test_an_async_hook_that_suspends_dispatches_one_level_deeper_and_leaks_nothing() -> None:
    manager, history = recorded()
    done = asyncio.Event()

    async def audit(ctx: HookContext) -> None:
        await asyncio.sleep(0)
        await manager.dispatch(CREATED, {"event_id": "from-audit"})
        done.set()

    async def quick(ctx: HookContext) -> None:
        return None

    manager.register(UPS, audit, name="audit", mode="async")
    manager.register(CREATED, quick, name="nested")
    await manager.dispatch(UPS, DATA)
    await asyncio.wait_for(done.wait(), 5)
    await manager.dispatch(CREATED, {"event_id": "top"})
    assert await drain(5, manager)
    depths = sorted((r.hook_name, r.dispatch_depth) for r in history.runs())
    assert depths == [("audit", 0), ("nested", 0), ("nested", 1)]


async def test_a_prompt_change_a_later_hook_undoes_is_not_a_patch_applied() -> None:
    manager, history = recorded()

    async def rewrites(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"

    async def restores(ctx: HookContext) -> None:
        ctx.data["prompt"] = DATA["prompt"]

    manager.register(UPS, rewrites, name="rewrites", priority=1)
    manager.register(UPS, restores, name="restores")
    await manager.dispatch(UPS, DATA)
    runs = {run.hook_name: (run.outcome, run.patch_applied) for run in history.runs()}
    assert runs == {"rewrites": ("applied", False), "restores": ("applied", False)}


async def test_only_the_hook_that_changed_the_prompt_is_a_patch_applied() -> None:
    """The prompt a dispatch started with is known from the first write: a hook before it, and
    one writing another key, are not patch_applied."""
    manager, history = recorded()

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["prompt"] == DATA["prompt"]

    async def tags(ctx: HookContext) -> None:
        ctx.data["tag"] = "x"

    async def rewrites(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"

    manager.register(UPS, reads, name="reads", priority=3)
    manager.register(UPS, tags, name="tags", priority=2)
    manager.register(UPS, rewrites, name="rewrites", priority=1)
    await manager.dispatch(UPS, DATA)
    runs = {run.hook_name: (run.outcome, run.patch_applied) for run in history.runs()}
    assert runs == {
        "reads": ("passed", False),
        "tags": ("applied", False),
        "rewrites": ("applied", True),
    }


async def test_a_hook_writing_in_a_loop_keeps_one_bounded_record() -> None:
    """Regression: each write appended a note, so a hook writing a million times held a
    million notes in the history ring."""
    manager, history = recorded()

    async def churns(ctx: HookContext) -> None:
        for i in range(10_000):
            ctx.data["count"] = i
            ctx.data.setdefault("items", []).append(i)
        ctx.data["prompt"] = "churned"

    manager.register(UPS, churns, name="churns")
    await manager.dispatch(UPS, DATA)
    assert len(history) == 1  # one run of one dispatch, however often the hook wrote
    (run,) = history.runs()
    assert (run.outcome, run.patch_applied) == ("applied", True)


async def test_writes_after_the_dispatch_are_put_on_no_hook_and_stay_bounded() -> None:
    manager, history = recorded()

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["prompt"] == DATA["prompt"]

    manager.register(UPS, reads, name="reads")
    result = await manager.dispatch(UPS, DATA)
    for i in range(1000):  # the caller's own writes, after the chain
        result.data["prompt"] = f"later {i}"
        result.data["extra"] = {"n": i}
        result.data["extra"]["n"] = -i
    assert [(r.outcome, r.patch_applied) for r in history.runs()] == [("passed", False)]
    assert len(history) == 1


NESTED = {
    "tool_name": "refund",
    "arguments": {"amount": 120, "lines": [{"sku": "A", "qty": 1}]},
    "request_id": "r1",
}


async def test_a_write_inside_a_nested_value_is_applied_to_the_hook_that_made_it() -> None:
    writes = {
        "dict": lambda d: d["arguments"].__setitem__("amount", 0),
        "list": lambda d: d["arguments"]["lines"].append({"sku": "B", "qty": 2}),
        "deep": lambda d: d["arguments"]["lines"][0].update(qty=5),
        "list_item": lambda d: d["arguments"]["lines"].__setitem__(0, {"sku": "C"}),
        "clear": lambda d: d["arguments"]["lines"].clear(),
    }
    for name, write in writes.items():
        manager, history = recorded()

        async def reads(ctx: HookContext) -> None:
            assert ctx.data["arguments"]["amount"] >= 0

        async def writes_once(ctx: HookContext, write: Any = write) -> None:
            write(ctx.data)

        manager.register(HookEvent.PERMISSION_REQUEST, reads, name="before", priority=2)
        manager.register(HookEvent.PERMISSION_REQUEST, writes_once, name=name, priority=1)
        manager.register(HookEvent.PERMISSION_REQUEST, reads, name="after", priority=0)
        await manager.dispatch(HookEvent.PERMISSION_REQUEST, NESTED)
        assert outcomes(history) == {"before": "passed", name: "applied", "after": "passed"}
    assert NESTED["arguments"] == {"amount": 120, "lines": [{"sku": "A", "qty": 1}]}


async def test_nested_writes_of_the_same_value_and_after_the_dispatch_change_nothing() -> None:
    manager, history = recorded()

    async def same(ctx: HookContext) -> None:
        ctx.data["arguments"]["amount"] = 120

    manager.register(HookEvent.PERMISSION_REQUEST, same, name="same")
    result = await manager.dispatch(HookEvent.PERMISSION_REQUEST, NESTED)
    result.data["arguments"]["amount"] = 1
    result.data["arguments"]["lines"].append("later")
    assert outcomes(history) == {"same": "passed"}


async def test_nested_values_copy_and_pickle_as_plain_dicts_and_lists() -> None:
    manager, _ = recorded()
    seen: dict[str, Any] = {}

    async def copies(ctx: HookContext) -> None:
        seen["deep"] = copy.deepcopy(ctx.data)
        seen["pickled"] = pickle.loads(pickle.dumps(ctx.data))
        seen["json"] = json.loads(json.dumps(ctx.data))

    manager.register(HookEvent.PERMISSION_REQUEST, copies)
    await manager.dispatch(HookEvent.PERMISSION_REQUEST, NESTED)
    for how in ("deep", "pickled", "json"):
        assert seen[how] == NESTED
        assert type(seen[how]["arguments"]) is dict
        assert type(seen[how]["arguments"]["lines"]) is list


async def test_a_replacement_keeps_nested_writes_tracked_and_async_hooks_get_plain_copies() -> None:
    manager, history = recorded()
    seen: dict[str, Any] = {}

    async def replaces(ctx: HookContext) -> None:
        ctx.data = {**ctx.data, "request_id": "r2"}

    async def nested(ctx: HookContext) -> None:
        ctx.data["arguments"]["lines"].pop()

    async def audit(ctx: HookContext) -> None:
        seen["lines"] = type(ctx.data["arguments"]["lines"])

    manager.register(HookEvent.PERMISSION_REQUEST, replaces, name="replaces", priority=2)
    manager.register(HookEvent.PERMISSION_REQUEST, nested, name="nested", priority=1)
    manager.register(HookEvent.PERMISSION_REQUEST, audit, name="audit", mode="async")
    await manager.dispatch(HookEvent.PERMISSION_REQUEST, NESTED)
    assert await drain(5, manager)
    assert outcomes(history) == {"replaces": "applied", "nested": "applied", "audit": "passed"}
    assert seen["lines"] is list


async def test_a_command_hook_killed_at_its_own_timeout_is_recorded_timed_out() -> None:
    import sys

    from tether import ShellHook

    manager, history = recorded()
    hook = ShellHook([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.3)
    manager.register(CREATED, hook.callback, name="slow")
    result = await manager.dispatch(CREATED, {"event_id": "e"})
    assert "timed out after 0.3s" in str(result.errors[0][1])
    assert outcomes(history) == {"slow": "timed_out"}


async def test_a_hook_can_yaml_dump_the_recorded_data_like_a_plain_dict() -> None:
    """Regression: yaml.safe_dump refused the recorded dispatch's data (a dict subclass)."""
    import yaml

    manager, history = recorded()
    dumped: list[str] = []

    async def dumps(ctx: HookContext) -> None:
        ctx.data["items"] = [{"sku": "A"}]
        dumped.append(yaml.safe_dump(ctx.data))
        dumped.append(yaml.dump(ctx.data))
        for name in ("CSafeDumper", "CDumper"):  # the libyaml ones, where built
            if hasattr(yaml, name):
                dumped.append(yaml.dump(ctx.data, Dumper=getattr(yaml, name)))

    manager.register(UPS, dumps, name="dumps")
    nested = {**DATA, "args": {"lines": [{"qty": 1}]}}  # copied as tracked dicts and lists
    await manager.dispatch(UPS, nested)
    plain = yaml.safe_dump({**nested, "items": [{"sku": "A"}]})
    assert len(dumped) >= 2
    assert set(dumped) == {plain}
    assert outcomes(history) == {"dumps": "applied"}


@pytest.mark.parametrize("hooks", [1, 3])
async def test_a_recorded_result_is_deep_copied_whenever_a_hook_wrote_to_flat_data(
    hooks: int,
) -> None:
    """Recorded flat data no hook wrote to is copied shallowly into the result (a deep copy of
    it); a value a hook wrote, in any chain, is copied deeply all the same."""
    manager, history = recorded()
    lists: list[list[int]] = []
    kept: list[dict[str, Any]] = []

    async def writer(ctx: HookContext) -> None:
        mine = [1]
        lists.append(mine)
        kept.append(ctx.data)
        ctx.data["items"] = mine

    async def reader(ctx: HookContext) -> None:
        kept.append(ctx.data)

    manager.register(UPS, writer, name="writer")
    for _ in range(hooks - 1):
        manager.register(UPS, reader)
    result = await manager.dispatch(UPS, DATA)
    lists[0].append(2)  # what the hook kept of what it wrote
    kept[0]["prompt"] = "changed after the dispatch"
    assert result.data == {**DATA, "items": [1]}
    assert result.data["items"] is not lists[0]
    assert outcomes(history)["writer"] == "applied"


async def test_a_write_before_a_block_is_deep_copied_however_many_hooks_it_cut_off() -> None:
    """Regression: the write's note and the block's made up for the two hooks the block cut
    off, so the marks had the length of a chain no hook wrote to, and the result shared the
    list the first hook wrote (and kept)."""
    manager, history = recorded()
    lists: list[list[int]] = []

    async def writer(ctx: HookContext) -> None:
        mine = [1]
        lists.append(mine)
        ctx.data["items"] = mine

    async def blocker(ctx: HookContext) -> None:
        raise HookBlocked("no")

    async def later(ctx: HookContext) -> None:
        return None

    manager.register(UPS, writer, name="writer", priority=4)
    manager.register(UPS, blocker, name="blocker", priority=3)
    manager.register(UPS, later, priority=2)
    manager.register(UPS, later, priority=1)
    result = await manager.dispatch(UPS, DATA)
    lists[0].append(2)
    assert result.blocked
    assert result.data["items"] == [1]
    assert outcomes(history) == {"writer": "applied", "blocker": "blocked"}


async def test_a_recorded_result_of_flat_data_no_hook_wrote_to_is_its_own_dict() -> None:
    manager, history = recorded()
    kept: list[dict[str, Any]] = []

    async def same(ctx: HookContext) -> None:
        kept.append(ctx.data)
        ctx.data["prompt"] = ctx.data["prompt"]  # written back as it was: no change

    manager.register(UPS, same, name="same")
    data = dict(DATA)
    result = await manager.dispatch(UPS, data)
    kept[0]["prompt"] = "changed after the dispatch"
    result.data["event_id"] = "the caller's own"
    assert result.data == {**DATA, "event_id": "the caller's own"}
    assert type(result.data) is dict
    assert data == DATA
    assert outcomes(history) == {"same": "passed"}


async def test_a_factory_context_with_no_dict_data_is_an_error_and_keeps_the_depth() -> None:
    """Regression: recorded, the factory's data was tracked as if it were a dict, so the
    dispatch raised (it never raises a hook's or a factory's error) and left the depth one
    level deeper for every dispatch after it."""
    manager, history = recorded()

    def factory(event: HookEvent, process_id: str, data: Any, metadata: Any) -> HookContext:
        return HookContext(event, process_id, ["not", "a", "dict"], metadata)  # type: ignore[arg-type]

    async def sees(ctx: HookContext) -> None:
        return None

    manager.register(UPS, sees, name="sees")
    result = await manager.dispatch(UPS, DATA, context_factory=factory)
    assert result.data == DATA
    assert [type(error).__name__ for _, error in result.errors] == ["HookError"]
    assert result.fired == 0
    await manager.dispatch(UPS, DATA)
    assert [run.dispatch_depth for run in history.runs()] == [0, 0]


async def test_a_factory_context_with_no_dict_data_blames_only_a_hook_that_ran() -> None:
    """The error goes to the last hook that ran on the data; a hook its matcher skipped is
    not blamed (fired never goes below zero), and with no hook run it is only logged."""
    manager, _ = recorded()

    def factory(event: HookEvent, process_id: str, data: Any, metadata: Any) -> HookContext:
        return HookContext(event, process_id, ["not", "a", "dict"], metadata)  # type: ignore[arg-type]

    async def sees(ctx: HookContext) -> None:
        return None

    runs = manager.register(UPS, sees, name="runs", priority=2)
    manager.register(UPS, sees, name="skipped", priority=1, matcher={"trigger_id": "other"})
    result = await manager.dispatch(UPS, DATA, context_factory=factory)
    assert (result.fired, result.data) == (0, DATA)
    assert [hook_id for hook_id, _ in result.errors] == [runs]
    manager.set_enabled(runs, False)
    result = await manager.dispatch(UPS, DATA, context_factory=factory)
    assert (result.fired, result.errors, result.data) == (0, [], DATA)
