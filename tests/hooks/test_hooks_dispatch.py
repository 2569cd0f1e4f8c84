"""Dispatch semantics: data, blocking, errors, timeouts, once, snapshots and error listeners."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import types
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from _cancellation_support import sleep_until_cancelled

from tether.hooks import (
    DispatchResult,
    HookBlocked,
    HookContext,
    HookErrorInfo,
    HookEvent,
    HookManager,
    HookTimeoutError,
)
from tether.hooks._history import HistoryRecorder

PROMPT = HookEvent.USER_PROMPT_SUBMIT
INFO = HookEvent.TASK_COMPLETED


async def noop(ctx: HookContext) -> None:
    return None


# -- data ------------------------------------------------------------------------------------


async def test_the_callers_dict_is_untouched_including_nested_dicts() -> None:
    manager = HookManager()
    data: dict[str, Any] = {"prompt": "hi", "meta": {"tags": ["a"]}}

    @manager.on(PROMPT)
    async def change(ctx: HookContext) -> None:
        ctx.data["prompt"] = "changed"
        ctx.data["meta"]["tags"].append("b")
        ctx.data["meta"]["new"] = 1
        ctx.data["added"] = True

    result = await manager.dispatch(PROMPT, data)

    assert data == {"prompt": "hi", "meta": {"tags": ["a"]}}
    assert result.data == {
        "prompt": "changed",
        "meta": {"tags": ["a", "b"], "new": 1},
        "added": True,
    }


async def test_a_later_hook_sees_what_an_earlier_hook_changed() -> None:
    manager = HookManager()
    seen: list[str] = []

    @manager.on(PROMPT, priority=1)
    async def first(ctx: HookContext) -> None:
        ctx.set("prompt", ctx.get("prompt") + " (rewritten)")

    @manager.on(PROMPT)
    async def second(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])

    result = await manager.dispatch(PROMPT, {"prompt": "hello"})

    assert seen == ["hello (rewritten)"]
    assert result.data["prompt"] == "hello (rewritten)"


async def test_a_hook_may_replace_the_data_dict_and_later_hooks_see_the_new_one() -> None:
    manager = HookManager()
    seen: list[dict[str, Any]] = []

    @manager.on(PROMPT, priority=1)
    async def replace(ctx: HookContext) -> None:
        ctx.data = {"prompt": "new"}

    @manager.on(PROMPT)
    async def read(ctx: HookContext) -> None:
        seen.append(ctx.data)

    result = await manager.dispatch(PROMPT, {"prompt": "old", "other": 1})

    assert seen == [{"prompt": "new"}]
    assert result.data == {"prompt": "new"}


async def test_a_dispatch_without_hooks_returns_the_data_and_fires_nothing() -> None:
    data = {"prompt": "hi"}

    result = await HookManager().dispatch(PROMPT, data)

    assert result.fired == 0
    assert not result.blocked
    assert result.errors == []
    assert result.data == data
    assert result.data is not data


async def test_a_dispatch_without_data_gives_hooks_an_empty_dict() -> None:
    manager = HookManager()
    seen: list[dict[str, Any]] = []

    @manager.on(HookEvent.SESSION_START)
    async def read(ctx: HookContext) -> None:
        seen.append(ctx.data)

    await manager.dispatch(HookEvent.SESSION_START)

    assert seen == [{}]


async def test_the_context_carries_event_process_id_metadata_and_a_utc_timestamp() -> None:
    manager = HookManager()
    seen: list[HookContext] = []
    metadata = {"process_name": "helper", "process_id": "63712925"}

    @manager.on(HookEvent.SESSION_START)
    async def read(ctx: HookContext) -> None:
        seen.append(ctx)

    before = datetime.now(UTC)
    await manager.dispatch(
        HookEvent.SESSION_START, {"restart": False}, process_id="helper", metadata=metadata
    )

    (ctx,) = seen
    assert ctx.event is HookEvent.SESSION_START
    assert ctx.process_id == "helper"
    assert ctx.metadata == metadata
    assert ctx.metadata is not metadata
    assert ctx.timestamp.tzinfo is not None
    assert ctx.timestamp.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= ctx.timestamp <= datetime.now(UTC)


async def test_a_dispatched_context_has_every_slot_a_constructed_context_has() -> None:
    """The manager builds contexts field by field on its hot path; none may be missing."""
    manager = HookManager()
    seen: list[HookContext] = []

    @manager.on(PROMPT)
    async def read(ctx: HookContext) -> None:
        seen.append(ctx)

    await manager.dispatch(PROMPT, {"prompt": "x"})

    reference = HookContext(PROMPT, "", {"prompt": "x"})
    for slot in HookContext.__slots__:
        assert hasattr(seen[0], slot) == hasattr(reference, slot), slot
    assert repr(seen[0]) == repr(reference)
    assert seen[0].envelope().keys() == reference.envelope().keys()


async def test_a_dispatch_result_has_every_field_set() -> None:
    """The manager builds results field by field on its hot path; none may be missing."""
    manager = HookManager()
    manager.register(PROMPT, noop)

    result = await manager.dispatch(PROMPT, {"prompt": "x"})

    for f in dataclasses.fields(DispatchResult):
        assert hasattr(result, f.name), f.name
    assert result == DispatchResult(fired=1, data={"prompt": "x"})


async def test_dispatch_accepts_an_event_value_string() -> None:
    manager = HookManager()
    manager.register(PROMPT, noop)

    result = await manager.dispatch("user_prompt_submit")

    assert result.fired == 1


async def test_dispatch_of_an_unknown_event_raises_value_error() -> None:
    with pytest.raises(ValueError, match="valid events are"):
        await HookManager().dispatch("user_prompt_submitt")


async def test_context_get_returns_a_default_for_a_missing_key() -> None:
    ctx = HookContext("task_created", "p", {"a": 1})

    assert ctx.get("a") == 1
    assert ctx.get("missing") is None
    assert ctx.get("missing", "d") == "d"


# -- blocking and errors ------------------------------------------------------------------------


async def test_hook_blocked_stops_the_remaining_hooks() -> None:
    manager = HookManager()
    ran: list[str] = []

    @manager.on(PROMPT, priority=2)
    async def first(ctx: HookContext) -> None:
        ran.append("first")

    @manager.on(PROMPT, priority=1)
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("prompts may not ask for passwords")

    @manager.on(PROMPT)
    async def never(ctx: HookContext) -> None:
        ran.append("never")

    result = await manager.dispatch(PROMPT, {"prompt": "password?"})

    assert result.blocked
    assert result.reason == "prompts may not ask for passwords"
    assert ran == ["first"]
    assert result.fired == 2
    assert result.errors == []


async def test_an_exception_is_isolated_and_recorded_with_the_hook_id() -> None:
    manager = HookManager()
    ran: list[str] = []
    boom = RuntimeError("boom")

    async def broken(ctx: HookContext) -> None:
        raise boom

    broken_id = manager.register(PROMPT, broken, priority=1)

    @manager.on(PROMPT)
    async def after(ctx: HookContext) -> None:
        ran.append("after")

    result = await manager.dispatch(PROMPT)

    assert result.errors == [(broken_id, boom)]
    assert not result.blocked
    assert ran == ["after"]
    assert result.fired == 1  # the hook that raised is in errors, not in fired


async def test_fired_counts_only_the_hooks_that_ran_without_error() -> None:
    manager = HookManager()

    async def raises(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    async def hangs(ctx: HookContext) -> None:
        await asyncio.sleep(10)

    async def passes(ctx: HookContext) -> None:
        ctx.set("seen", True)

    manager.register(PROMPT, raises, priority=3)
    manager.register(PROMPT, hangs, priority=2, timeout=0.01)
    manager.register(PROMPT, passes, priority=1)

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert len(result.errors) == 2
    assert result.fired == 1
    assert result.data["seen"] is True


async def test_a_fail_closed_hook_that_raises_blocks_and_is_not_counted_as_fired() -> None:
    manager = HookManager()

    async def raises(ctx: HookContext) -> None:
        raise RuntimeError("policy down")

    manager.register(PROMPT, raises, fail_closed=True)

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert result.blocked
    assert result.reason == "hook failed (fail_closed): policy down"
    assert (result.fired, len(result.errors)) == (0, 1)


async def test_a_hook_that_blocks_counts_as_fired() -> None:
    manager = HookManager()

    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked("no")

    manager.register(PROMPT, refuses)

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert (result.blocked, result.fired, result.errors) == (True, 1, [])


async def test_an_exception_after_suspending_is_isolated_too() -> None:
    manager = HookManager()

    async def broken(ctx: HookContext) -> None:
        await asyncio.sleep(0)
        raise KeyError("late")

    hook_id = manager.register(PROMPT, broken)

    result = await manager.dispatch(PROMPT)

    assert [(i, type(e)) for i, e in result.errors] == [(hook_id, KeyError)]


async def test_an_attribute_error_raised_by_a_hook_is_recorded_like_any_error() -> None:
    manager = HookManager()

    async def broken(ctx: HookContext) -> None:
        raise AttributeError("no such thing")

    hook_id = manager.register(PROMPT, broken)

    result = await manager.dispatch(PROMPT)

    assert [(i, type(e)) for i, e in result.errors] == [(hook_id, AttributeError)]


async def test_a_failing_hook_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    manager = HookManager()

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    manager.register(PROMPT, broken)

    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        await manager.dispatch(PROMPT)

    assert any("boom" in r.getMessage() for r in caplog.records)


# -- timeouts ------------------------------------------------------------------------------------


async def test_a_hook_running_past_its_timeout_is_cancelled_and_recorded() -> None:
    manager = HookManager()
    cancelled: list[bool] = []
    ran: list[str] = []

    async def slow(ctx: HookContext) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    slow_id = manager.register(PROMPT, slow, timeout=0.05, priority=1)

    @manager.on(PROMPT)
    async def after(ctx: HookContext) -> None:
        ran.append("after")

    result = await manager.dispatch(PROMPT)

    ((hook_id, error),) = result.errors
    assert hook_id == slow_id
    assert isinstance(error, HookTimeoutError)
    assert isinstance(error, TimeoutError)
    assert "timed out" in str(error)
    assert cancelled == [True]
    assert ran == ["after"]
    assert not result.blocked


@pytest.mark.slow
async def test_a_hook_that_swallows_its_cancellation_is_still_bounded() -> None:
    manager = HookManager()

    async def stubborn(ctx: HookContext) -> None:
        for _ in range(4):  # swallows its cancellation, again and again (not for ever)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue

    manager.register(PROMPT, stubborn, timeout=0.05)

    result = await asyncio.wait_for(manager.dispatch(PROMPT), timeout=5)

    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_the_default_timeout_bounds_hooks_without_their_own() -> None:
    manager = HookManager(default_timeout=0.05)

    async def slow(ctx: HookContext) -> None:
        await asyncio.sleep(10)

    manager.register(PROMPT, slow)

    result = await manager.dispatch(PROMPT)

    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_a_hook_timeout_overrides_the_default_timeout() -> None:
    manager = HookManager(default_timeout=0.01)

    async def short_nap(ctx: HookContext) -> None:
        await asyncio.sleep(0.05)

    manager.register(PROMPT, short_nap, timeout=5)

    result = await manager.dispatch(PROMPT)

    assert result.errors == []


async def test_a_standalone_manager_has_no_default_timeout() -> None:
    manager = HookManager()
    manager.register(PROMPT, noop)

    assert manager.default_timeout is None
    assert manager.describe(PROMPT)[0].timeout is None


async def test_a_suspending_hook_that_finishes_in_time_is_not_an_error() -> None:
    manager = HookManager(default_timeout=5)
    ran: list[str] = []

    @manager.on(PROMPT)
    async def brief(ctx: HookContext) -> None:
        await asyncio.sleep(0.001)
        ran.append("done")

    result = await manager.dispatch(PROMPT)

    assert result.errors == []
    assert ran == ["done"]


async def test_a_hook_returning_an_awaitable_that_is_not_a_coroutine_is_awaited() -> None:
    manager = HookManager()
    done: list[str] = []

    class FutureHook:
        async def __call__(self, ctx: HookContext) -> None:
            raise AssertionError("replaced below, after registration")

    hook = FutureHook()

    def returns_future(self: FutureHook, ctx: HookContext) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: done.append("done"))
        asyncio.get_running_loop().call_soon(future.set_result, None)
        return future

    manager.register(PROMPT, hook)
    FutureHook.__call__ = returns_future  # type: ignore[method-assign,assignment]

    result = await manager.dispatch(PROMPT)

    assert result.errors == []
    assert done == ["done"]


async def test_a_hook_coroutine_returning_a_value_is_a_plain_run() -> None:
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    ran: list[str] = []

    async def answers(ctx: HookContext) -> str:
        ran.append("answers")
        return "a value the dispatch has no use for"

    async def after(ctx: HookContext) -> None:
        ran.append("after")

    manager.register(PROMPT, answers, name="answers", priority=2)
    manager.register(PROMPT, after, name="after", priority=1)
    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert (result.errors, result.fired, ran) == ([], 2, ["answers", "after"])
    assert [run.outcome for run in history.runs()] == ["passed", "passed"]


async def test_a_generator_based_coroutine_hook_is_bounded_by_its_timeout() -> None:
    manager = HookManager()

    class Stalls:
        async def __call__(self, ctx: HookContext) -> None:
            raise AssertionError("replaced below, after registration")

    @types.coroutine
    def stalls() -> Generator[Any, None, None]:
        yield from asyncio.sleep(10).__await__()

    manager.register(PROMPT, Stalls(), timeout=0.05)
    Stalls.__call__ = lambda self, ctx: stalls()  # type: ignore[method-assign]
    result = await manager.dispatch(PROMPT)

    assert [type(error) for _, error in result.errors] == [HookTimeoutError]


async def test_a_fail_closed_hook_error_blocks_a_blockable_event() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def policy(ctx: HookContext) -> None:
        raise RuntimeError("policy service down")

    hook_id = manager.register(PROMPT, policy, fail_closed=True, priority=1)

    @manager.on(PROMPT)
    async def after(ctx: HookContext) -> None:
        ran.append("after")

    result = await manager.dispatch(PROMPT)

    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed)")
    assert "policy service down" in result.reason
    assert [i for i, _ in result.errors] == [hook_id]
    assert ran == []


async def test_a_fail_closed_hook_timeout_blocks_the_prompt() -> None:
    manager = HookManager()

    async def slow_policy(ctx: HookContext) -> None:
        await asyncio.sleep(10)

    manager.register(PROMPT, slow_policy, fail_closed=True, timeout=0.05)

    result = await manager.dispatch(PROMPT)

    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed)")
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_fail_closed_has_no_effect_on_a_non_blockable_event() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def policy(ctx: HookContext) -> None:
        raise RuntimeError("down")

    manager.register(INFO, policy, fail_closed=True, priority=1)

    @manager.on(INFO)
    async def after(ctx: HookContext) -> None:
        ran.append("after")

    result = await manager.dispatch(INFO)

    assert not result.blocked
    assert result.reason is None
    assert len(result.errors) == 1
    assert ran == ["after"]


async def test_a_fail_closed_hook_that_succeeds_does_not_block() -> None:
    manager = HookManager()
    manager.register(PROMPT, noop, fail_closed=True)

    result = await manager.dispatch(PROMPT)

    assert not result.blocked


# -- once ----------------------------------------------------------------------------------------


async def test_a_once_hook_runs_on_the_first_dispatch_only() -> None:
    manager = HookManager()
    runs: list[int] = []

    @manager.on(HookEvent.SESSION_START, once=True)
    async def first_start(ctx: HookContext) -> None:
        runs.append(1)

    await manager.dispatch(HookEvent.SESSION_START)
    await manager.dispatch(HookEvent.SESSION_START)

    assert runs == [1]
    assert manager.registered(HookEvent.SESSION_START) == []


async def test_a_once_hook_is_removed_before_it_runs() -> None:
    manager = HookManager()
    seen: list[bool] = []

    async def once(ctx: HookContext) -> None:
        seen.append(hook_id in manager)
        raise RuntimeError("fails, but is gone anyway")

    hook_id = manager.register(HookEvent.SESSION_START, once, once=True)

    await manager.dispatch(HookEvent.SESSION_START)

    assert seen == [False]
    assert hook_id not in manager


async def test_a_once_hook_runs_at_most_once_under_overlapping_dispatches() -> None:
    manager = HookManager()
    runs: list[str] = []
    both_started = asyncio.Event()
    started = 0

    async def gate(ctx: HookContext) -> None:
        # Both dispatches take their snapshot (holding the once hook) before either reaches it.
        nonlocal started
        started += 1
        if started == 2:
            both_started.set()
        await both_started.wait()

    async def once(ctx: HookContext) -> None:
        runs.append(ctx.process_id)
        await asyncio.sleep(0.01)

    gate_id = manager.register(PROMPT, gate, priority=1)
    manager.register(PROMPT, once, once=True)

    first, second = await asyncio.gather(
        manager.dispatch(PROMPT, process_id="a"), manager.dispatch(PROMPT, process_id="b")
    )

    assert len(runs) == 1
    assert first.fired + second.fired == 3  # the gate twice, the once hook once
    assert manager.registered(PROMPT) == [gate_id]


async def test_a_once_hook_dispatched_twice_at_the_same_time_runs_once() -> None:
    manager = HookManager()
    runs: list[str] = []

    @manager.on(PROMPT, once=True)
    async def once(ctx: HookContext) -> None:
        runs.append(ctx.process_id)
        await asyncio.sleep(0.01)

    await asyncio.gather(
        manager.dispatch(PROMPT, process_id="a"), manager.dispatch(PROMPT, process_id="b")
    )

    assert len(runs) == 1


# -- snapshot and cache ---------------------------------------------------------------------------


async def test_a_hook_registered_during_a_dispatch_runs_from_the_next_one() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def late(ctx: HookContext) -> None:
        ran.append("late")

    @manager.on(PROMPT, priority=1)
    async def registrar(ctx: HookContext) -> None:
        ran.append("registrar")
        if not manager.registered(PROMPT)[1:]:
            manager.register(PROMPT, late)

    await manager.dispatch(PROMPT)
    assert ran == ["registrar"]

    await manager.dispatch(PROMPT)
    assert ran == ["registrar", "registrar", "late"]


async def test_a_hook_removed_during_a_dispatch_still_runs_in_that_dispatch_only() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def victim(ctx: HookContext) -> None:
        ran.append("victim")

    @manager.on(PROMPT, priority=1)
    async def remover(ctx: HookContext) -> None:
        ran.append("remover")
        await manager.remove(victim_id)

    victim_id = manager.register(PROMPT, victim)

    await manager.dispatch(PROMPT)
    assert ran == ["remover", "victim"]

    await manager.dispatch(PROMPT)
    assert ran == ["remover", "victim", "remover"]


def test_the_sorted_chain_is_cached_until_a_registration_changes() -> None:
    manager = HookManager()
    manager.register(PROMPT, noop, priority=1)
    manager.register(PROMPT, noop)

    first = manager._resolved(PROMPT)
    assert manager._resolved(PROMPT) is first

    manager.register(HookEvent.SESSION_END, noop)
    changed = manager._resolved(PROMPT)
    assert changed is not first
    assert changed == first
    assert manager._resolved(PROMPT) is changed


async def test_priority_order_is_right_after_the_cache_is_invalidated() -> None:
    manager = HookManager()
    order: list[str] = []

    def make(name: str, priority: int) -> str:
        async def hook(ctx: HookContext) -> None:
            order.append(name)

        return manager.register(PROMPT, hook, priority=priority)

    make("b", 1)
    await manager.dispatch(PROMPT)
    make("a", 2)
    make("c", 0)
    await manager.dispatch(PROMPT)

    assert order == ["b", "a", "b", "c"]


# -- error listeners ---------------------------------------------------------------------------


async def test_a_sync_error_listener_receives_hook_error_info() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)
    boom = RuntimeError("boom")

    async def broken(ctx: HookContext) -> None:
        raise boom

    hook_id = manager.register(PROMPT, broken, name="broken-policy")

    await manager.dispatch(PROMPT, process_id="helper")

    assert infos == [HookErrorInfo("user_prompt_submit", hook_id, "broken-policy", "helper", boom)]


async def test_an_async_error_listener_is_awaited() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []

    @manager.on_error
    async def listener(info: HookErrorInfo) -> None:
        await asyncio.sleep(0)
        infos.append(info)

    async def slow(ctx: HookContext) -> None:
        await asyncio.sleep(10)

    manager.register(PROMPT, slow, timeout=0.01)

    await manager.dispatch(PROMPT)

    assert [type(i.error) for i in infos] == [HookTimeoutError]


async def test_a_failing_error_listener_is_logged_and_the_dispatch_completes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = HookManager()
    later: list[HookErrorInfo] = []

    def bad_listener(info: HookErrorInfo) -> None:
        raise ValueError("listener broke")

    manager.on_error(bad_listener)
    manager.on_error(later.append)

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    manager.register(PROMPT, broken)

    with caplog.at_level(logging.ERROR, logger="tether.hooks"):
        result = await manager.dispatch(PROMPT)

    assert len(result.errors) == 1
    assert len(later) == 1
    assert any("listener" in r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)


async def test_no_listener_is_called_when_no_hook_fails() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)
    manager.register(PROMPT, noop)

    await manager.dispatch(PROMPT)

    assert infos == []


async def test_a_blocking_hook_is_not_reported_as_an_error() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)

    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("no")

    manager.register(PROMPT, refuse)

    await manager.dispatch(PROMPT)

    assert infos == []


async def test_lists_tuples_and_other_objects_in_the_data_are_copied_too() -> None:
    class Box:
        def __init__(self) -> None:
            self.items: list[int] = []

    manager = HookManager()
    box = Box()
    data: dict[str, Any] = {"rows": [[1], [2]], "pair": ([1], "x"), "box": box, "n": 3}

    @manager.on(PROMPT)
    async def change(ctx: HookContext) -> None:
        ctx.data["rows"][0].append(9)
        ctx.data["pair"][0].append(9)
        ctx.data["box"].items.append(9)

    result = await manager.dispatch(PROMPT, data)

    assert data["rows"] == [[1], [2]]
    assert data["pair"] == ([1], "x")
    assert box.items == []
    assert result.data["rows"] == [[1, 9], [2]]
    assert result.data["pair"] == ([1, 9], "x")
    assert result.data["box"].items == [9]


# -- enabling and describing ----------------------------------------------------------------------


async def test_a_disabled_hook_is_skipped_until_it_is_enabled_again() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def hook(ctx: HookContext) -> None:
        ran.append("ran")

    hook_id = manager.register(PROMPT, hook)

    assert manager.set_enabled(hook_id, False) == 1
    assert (await manager.dispatch(PROMPT)).fired == 0
    assert manager.set_enabled(hook_id, True) == 1
    assert (await manager.dispatch(PROMPT)).fired == 1
    assert ran == ["ran"]


async def test_set_enabled_by_tag_covers_every_hook_with_the_tag() -> None:
    manager = HookManager()
    manager.register(PROMPT, noop, tag="audit")
    manager.register(INFO, noop, tag="audit")
    manager.register(PROMPT, noop)

    assert manager.set_enabled("audit", False) == 2
    assert (await manager.dispatch(PROMPT)).fired == 1
    assert (await manager.dispatch(INFO)).fired == 0
    assert manager.set_enabled("no-such-tag", False) == 0


def test_describe_without_an_event_lists_every_event_in_run_order() -> None:
    manager, shared = HookManager(), HookManager()
    first = manager.register(INFO, noop)
    second = manager.register(PROMPT, noop, priority=1)
    third = manager.register(PROMPT, noop, priority=2)
    elsewhere = shared.register(HookEvent.SESSION_END, noop)
    manager.share(shared)

    infos = manager.describe()

    assert [(i.event, i.hook_id) for i in infos] == [
        ("task_completed", first),
        ("user_prompt_submit", third),
        ("user_prompt_submit", second),
        ("session_end", elsewhere),
    ]


# -- cancellation ------------------------------------------------------------------------------


def cancelled_elsewhere() -> asyncio.Future[None]:
    """A future that someone else cancels: awaiting it raises CancelledError in the awaiter."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.cancel)
    return future


async def test_a_hooks_own_cancelled_error_is_isolated_like_any_other_error() -> None:
    """Regression: it escaped dispatch() although nobody cancelled the dispatching task."""
    manager = HookManager()
    ran: list[str] = []

    async def waits_on_a_cancelled_future(ctx: HookContext) -> None:
        await cancelled_elsewhere()

    hook_id = manager.register(PROMPT, waits_on_a_cancelled_future, priority=1)

    @manager.on(PROMPT)
    async def after(ctx: HookContext) -> None:
        ran.append("after")

    result = await manager.dispatch(PROMPT)

    assert [(i, type(e)) for i, e in result.errors] == [(hook_id, asyncio.CancelledError)]
    assert ran == ["after"]


async def test_a_hook_that_handles_a_cancelled_future_goes_on_running() -> None:
    """Regression: the manager closed such a hook as if its own task had been cancelled."""
    manager = HookManager(default_timeout=5)

    @manager.on(PROMPT)
    async def with_fallback(ctx: HookContext) -> None:
        try:
            await cancelled_elsewhere()
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            ctx.set("answer", "fallback")

    result = await manager.dispatch(PROMPT)

    assert result.errors == []
    assert result.data == {"answer": "fallback"}


async def test_cancelling_the_dispatching_task_cancels_the_running_hook() -> None:
    manager = HookManager(default_timeout=5)
    started = asyncio.Event()
    cancelled: list[bool] = []

    @manager.on(PROMPT)
    async def slow(ctx: HookContext) -> None:
        await sleep_until_cancelled(started, cancelled)

    task = asyncio.create_task(manager.dispatch(PROMPT))
    await started.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


async def test_a_hook_that_calls_sys_exit_is_isolated_like_any_error() -> None:
    """The reference: an exception other than HookBlocked never reaches the process."""
    import sys

    manager = HookManager()
    ran: list[str] = []

    async def exits(ctx: HookContext) -> None:
        sys.exit(3)

    async def after(ctx: HookContext) -> None:
        ran.append("after")

    async def policy_exits(ctx: HookContext) -> None:
        sys.exit("policy store gone")

    manager.register(HookEvent.TASK_CREATED, exits, priority=2)
    manager.register(HookEvent.TASK_CREATED, after, priority=1)
    result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    assert ran == ["after"]
    assert [type(e) for _, e in result.errors] == [SystemExit]
    assert result.blocked is False
    manager.register(HookEvent.TASK_CREATED, policy_exits, priority=3, fail_closed=True)
    refused = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    assert refused.blocked is True
    assert refused.reason == "hook failed (fail_closed): policy store gone"
    handled = manager.register("ticket.classify", lambda: sys.exit(1))
    assert await manager.call("ticket.classify") == [None]
    assert await manager.remove(handled)


async def test_a_dispatch_with_no_hooks_gives_a_result_of_its_own_data() -> None:
    """Regression: with no hook registered, the result's data was a shallow copy, so a nested
    list in it was the caller's own (with a hook, it is a deep copy)."""
    manager = HookManager()
    data = {"prompt": "hi", "items": [1], "meta": {"tags": ["a"]}}
    result = await manager.dispatch(PROMPT, data)
    result.data["items"].append(2)
    result.data["meta"]["tags"].append("b")
    assert data == {"prompt": "hi", "items": [1], "meta": {"tags": ["a"]}}
