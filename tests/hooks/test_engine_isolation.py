"""Review of the hook engine: the data a hook is handed cannot leak back.

A hook gets the dispatch's own copy of the data. Whatever it keeps of that copy (the dict, a
list inside it, a thread or task still holding it after the hook timed out) must not reach the
caller's dict, the DispatchResult once the dispatch has returned, the hooks that run after a
timed-out one, or the next dispatch. Each test runs with and without a HistoryRecorder, whose
dispatches hand hooks write-noting containers instead of plain ones.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any

import pytest

from tether import HookBlocked, HookContext, HookEvent, HookManager, HookTimeoutError
from tether.hooks._background import drain
from tether.hooks._history import HistoryRecorder

UPS = HookEvent.USER_PROMPT_SUBMIT


def fresh() -> dict[str, Any]:
    return {"prompt": "hello", "event_id": "e1", "items": [1], "meta": {"tags": ["a"]}}


@pytest.fixture(params=["plain", "recorded"])
def manager(request: pytest.FixtureRequest) -> HookManager:
    manager = HookManager()
    if request.param == "recorded":
        manager.recorder = HistoryRecorder("p")
    return manager


async def test_a_hook_keeping_ctx_data_cannot_change_the_result_after_the_dispatch(
    manager: HookManager,
) -> None:
    """Regression: DispatchResult.data was the hooks' own dict, so a hook that kept it (or a
    task it started, as the reference's notify example does) changed the result later."""
    kept: list[dict[str, Any]] = []

    async def keeps(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"
        kept.append(ctx.data)

    manager.register(UPS, keeps)
    result = await manager.dispatch(UPS, fresh())
    kept[0]["prompt"] = "changed after the dispatch"
    kept[0]["extra"] = True
    del kept[0]["event_id"]

    assert result.data == {**fresh(), "prompt": "rewritten"}


async def test_a_hook_keeping_a_nested_value_cannot_change_the_result_after_the_dispatch(
    manager: HookManager,
) -> None:
    kept: list[Any] = []

    async def keeps(ctx: HookContext) -> None:
        kept.append(ctx.data["items"])
        kept.append(ctx.data["meta"]["tags"])

    manager.register(UPS, keeps)
    result = await manager.dispatch(UPS, fresh())
    kept[0].append(2)
    kept[1].clear()

    assert result.data == fresh()


async def test_a_hook_that_handed_ctx_data_a_dict_of_its_own_cannot_change_the_result_later(
    manager: HookManager,
) -> None:
    own = {"prompt": "from the hook", "items": [1]}

    async def replaces(ctx: HookContext) -> None:
        ctx.data = own

    manager.register(UPS, replaces)
    result = await manager.dispatch(UPS, fresh())
    own["prompt"] = "changed after the dispatch"
    own["items"].append(2)

    assert result.data == {"prompt": "from the hook", "items": [1]}
    result.data["items"].append(3)  # and the caller's writes do not reach the hook's dict
    assert own["items"] == [1, 2]


async def test_a_task_a_hook_started_cannot_change_the_result_when_it_runs(
    manager: HookManager,
) -> None:
    """The reference's advice for slow work: hand it to a task. The task gets ctx.data."""
    done = asyncio.Event()

    async def later(data: dict[str, Any]) -> None:
        data["prompt"] = "from the task"
        data["items"].append("from the task")
        done.set()

    async def hands_off(ctx: HookContext) -> None:
        asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(later(ctx.data)))

    manager.register(UPS, hands_off)
    result = await manager.dispatch(UPS, fresh())
    await asyncio.wait_for(done.wait(), 5)

    assert result.data == fresh()


async def test_a_timed_out_hooks_thread_cannot_change_what_later_hooks_or_the_result_see(
    manager: HookManager,
) -> None:
    """Regression: a hook cancelled at its timeout while a thread it started still held
    ctx.data (asyncio.to_thread goes on after the await is cancelled) could rewrite the prompt
    the later hooks checked and the dispatch returned."""
    release = threading.Event()
    written = threading.Event()
    seen: list[Any] = []

    async def slow(ctx: HookContext) -> None:
        data = ctx.data

        def work() -> None:
            release.wait(5)
            data["prompt"] = "from the thread"
            data["items"].append("from the thread")
            written.set()

        await asyncio.to_thread(work)

    async def checks(ctx: HookContext) -> None:
        release.set()
        await asyncio.to_thread(written.wait, 5)
        seen.append((ctx.data["prompt"], list(ctx.data["items"])))

    manager.register(UPS, slow, timeout=0.1, priority=1)
    manager.register(UPS, checks, timeout=10)
    result = await manager.dispatch(UPS, fresh())

    assert written.is_set()
    assert seen == [("hello", [1])]
    assert result.data == fresh()
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_a_failed_hooks_changes_made_before_it_failed_are_kept(manager: HookManager) -> None:
    """What a hook changed before its error stays (the reference undoes nothing); only what it
    holds on to is cut off."""

    async def half_done(ctx: HookContext) -> None:
        ctx.data["prompt"] = "half"
        await asyncio.sleep(0)
        raise RuntimeError("broke halfway")

    manager.register(UPS, half_done)
    result = await manager.dispatch(UPS, fresh())

    assert result.data["prompt"] == "half"
    assert [str(e) for _, e in result.errors] == ["broke halfway"]


async def test_the_callers_dict_and_the_next_dispatch_are_untouched_by_a_kept_reference(
    manager: HookManager,
) -> None:
    kept: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []

    async def keeps(ctx: HookContext) -> None:
        seen.append(copy.deepcopy(ctx.data))
        kept.append(ctx.data)

    manager.register(UPS, keeps)
    data = fresh()
    await manager.dispatch(UPS, data)
    kept[0]["prompt"] = "changed"
    kept[0]["items"].append(2)
    kept[0]["meta"]["tags"].append("b")
    await manager.dispatch(UPS, data)

    assert data == fresh()
    assert seen[1] == seen[0] == fresh()


async def test_an_async_hook_writing_nested_data_reaches_neither_the_result_nor_other_hooks(
    manager: HookManager,
) -> None:
    seen: list[Any] = []

    async def scribbles(ctx: HookContext) -> None:
        ctx.data["items"].append("async")
        ctx.data["meta"]["tags"].append("async")

    async def reads(ctx: HookContext) -> None:
        seen.append((list(ctx.data["items"]), list(ctx.data["meta"]["tags"])))

    manager.register(UPS, scribbles, mode="async", priority=1)
    manager.register(UPS, reads, mode="async")
    result = await manager.dispatch(UPS, fresh())
    assert await drain(5)

    assert result.data == fresh()
    assert seen == [([1], ["a"])]


async def test_an_async_hook_gets_the_data_as_the_chain_left_it_not_as_a_kept_reference_changes(
    manager: HookManager,
) -> None:
    kept: list[dict[str, Any]] = []
    seen: list[Any] = []
    gate = asyncio.Event()

    async def keeps(ctx: HookContext) -> None:
        ctx.data["prompt"] = "from the chain"
        kept.append(ctx.data)

    async def audits(ctx: HookContext) -> None:
        await gate.wait()
        seen.append((ctx.data["prompt"], list(ctx.data["items"])))

    manager.register(UPS, keeps)
    manager.register(UPS, audits, mode="async")
    await manager.dispatch(UPS, fresh())
    kept[0]["prompt"] = "changed after the dispatch"
    kept[0]["items"].append(2)
    gate.set()
    assert await drain(5)

    assert seen == [("from the chain", [1])]


async def test_a_blocked_dispatch_returns_the_changes_the_hooks_before_the_block_made(
    manager: HookManager,
) -> None:
    """The reference: ``data`` is the payload after the hooks ran; a block stops the rest."""
    ran: list[str] = []

    async def rewrites(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"
        ran.append("rewrites")

    async def refuses(ctx: HookContext) -> None:
        ctx.data["refused_by"] = "policy"
        ran.append("refuses")
        raise HookBlocked("no")

    async def after(ctx: HookContext) -> None:
        ctx.data["prompt"] = "never"
        ran.append("after")

    manager.register(UPS, rewrites, priority=2)
    manager.register(UPS, refuses, priority=1)
    manager.register(UPS, after)
    result = await manager.dispatch(UPS, fresh())

    assert (result.blocked, result.reason, result.fired) == (True, "no", 2)
    assert ran == ["rewrites", "refuses"]
    assert result.data == {**fresh(), "prompt": "rewritten", "refused_by": "policy"}


async def test_a_timed_out_hooks_thread_writing_during_a_later_hook_is_not_put_on_that_hook() -> (
    None
):
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    release = threading.Event()
    written = threading.Event()

    async def slow(ctx: HookContext) -> None:
        data = ctx.data

        def work() -> None:
            release.wait(5)
            data["prompt"] = "from the thread"
            data["meta"]["tags"].append("from the thread")
            written.set()

        await asyncio.to_thread(work)

    async def reads(ctx: HookContext) -> None:
        release.set()
        await asyncio.to_thread(written.wait, 5)

    manager.register(UPS, slow, timeout=0.1, priority=1, name="slow")
    manager.register(UPS, reads, timeout=10, name="reads")
    await manager.dispatch(UPS, fresh())

    assert written.is_set()
    runs = {run.hook_name: (run.outcome, run.patch_applied) for run in history.runs()}
    assert runs == {"slow": ("timed_out", False), "reads": ("passed", False)}


async def test_an_async_hooks_write_inside_a_nested_value_is_recorded_applied() -> None:
    """Regression: the data before an async hook ran was kept as a shallow copy, which shared
    its nested dicts with the hook's data, so a nested write was recorded ``passed``."""
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")

    async def zeroes(ctx: HookContext) -> None:
        ctx.data["arguments"]["amount"] = 0

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["arguments"]["amount"] == 120

    manager.register(HookEvent.PERMISSION_REQUEST, zeroes, mode="async", name="zeroes")
    manager.register(HookEvent.PERMISSION_REQUEST, reads, mode="async", name="reads")
    data = {"tool_name": "refund", "arguments": {"amount": 120}, "request_id": "r1"}
    await manager.dispatch(HookEvent.PERMISSION_REQUEST, data)
    assert await drain(5)

    runs = {run.hook_name: (run.outcome, run.patch_applied) for run in history.runs()}
    assert runs == {"zeroes": ("applied", False), "reads": ("passed", False)}


@pytest.mark.slow
async def test_a_thread_still_writing_to_the_data_after_its_hook_timed_out_cannot_fail_the_dispatch(
    manager: HookManager,
) -> None:
    """Regression: copying the data away from a timed-out hook looped over a dict its thread
    was still adding keys to: "dictionary changed size during iteration" out of dispatch()."""
    stop = threading.Event()

    async def churns(ctx: HookContext) -> None:
        table = ctx.data["table"]

        def work() -> None:
            i = 0
            while not stop.is_set():
                table[f"k{i}"] = i
                i += 1

        await asyncio.to_thread(work)

    manager.register(UPS, churns, timeout=0.05)
    data = {"prompt": "hello", "table": {f"x{i}": i for i in range(200_000)}}
    try:
        result = await manager.dispatch(UPS, data)
    finally:
        stop.set()

    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert len(data["table"]) == 200_000
    assert all(key in result.data["table"] for key in data["table"])
