"""HistoryRecorder.add_listener: each dispatch's runs as they are recorded, in the task that
dispatched (telemetry parents its spans there); a failing listener never fails a dispatch."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tether import HookBlocked, HookEvent, HookManager, HookRun
from tether.hooks._history import HistoryRecorder


async def passes(ctx: Any) -> None:
    return None


async def refuses(ctx: Any) -> None:
    raise HookBlocked("no")


def recorded_manager() -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager()
    history = HistoryRecorder("p")
    manager.recorder = history
    return manager, history


async def test_a_listener_gets_each_dispatch_s_runs_in_the_dispatching_task() -> None:
    manager, history = recorded_manager()
    manager.on(HookEvent.TASK_CREATED, name="first")(passes)
    manager.on(HookEvent.TASK_CREATED, name="second")(refuses)
    heard: list[tuple[list[HookRun], asyncio.Task[Any] | None]] = []
    history.add_listener(lambda runs: heard.append((runs, asyncio.current_task())))
    await manager.dispatch(HookEvent.TASK_CREATED, {}, process_id="p")
    [(runs, task)] = heard
    assert [(r.hook_name, r.outcome) for r in runs] == [("first", "passed"), ("second", "blocked")]
    assert task is asyncio.current_task()
    assert [r.hook_name for r in history.runs()] == ["first", "second"]  # the ring still has them


async def test_a_failing_listener_is_logged_and_the_dispatch_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager, history = recorded_manager()
    manager.on(HookEvent.TASK_CREATED, name="gate")(refuses)
    later: list[int] = []

    def broken(runs: list[HookRun]) -> None:
        raise RuntimeError("listener bug")

    history.add_listener(broken)
    history.add_listener(lambda runs: later.append(len(runs)))
    with caplog.at_level(logging.ERROR, logger="tether.hooks"):
        result = await manager.dispatch(HookEvent.TASK_CREATED, {}, process_id="p")
    assert result.blocked
    assert later == [1]  # the listeners after the broken one still heard
    assert "a hook-run listener failed" in caplog.text


async def test_a_removed_listener_hears_no_more() -> None:
    manager, history = recorded_manager()
    manager.on(HookEvent.TASK_CREATED)(passes)
    heard: list[int] = []

    def listener(runs: list[HookRun]) -> None:
        heard.append(len(runs))

    history.add_listener(listener)
    await manager.dispatch(HookEvent.TASK_CREATED, {}, process_id="p")
    history.remove_listener(listener)
    history.remove_listener(listener)  # twice: nothing happens
    await manager.dispatch(HookEvent.TASK_CREATED, {}, process_id="p")
    assert heard == [1]


async def test_background_hook_runs_reach_the_listener_too() -> None:
    manager, history = recorded_manager()
    done = asyncio.Event()

    async def audit(ctx: Any) -> None:
        done.set()

    manager.on(HookEvent.TASK_COMPLETED, name="audit", mode="async")(audit)
    heard: list[HookRun] = []
    history.add_listener(heard.extend)
    await manager.dispatch(HookEvent.TASK_COMPLETED, {}, process_id="p")
    await asyncio.wait_for(done.wait(), 5)
    for _ in range(100):
        if heard:
            break
        await asyncio.sleep(0.01)
    assert [(r.hook_name, r.mode) for r in heard] == [("audit", "async")]


async def test_a_listener_leaves_the_batched_sink_as_it_was() -> None:
    written: list[HookRun] = []
    history = HistoryRecorder("p", sink=written.extend)
    manager = HookManager()
    manager.recorder = history
    manager.on(HookEvent.TASK_CREATED, name="h")(passes)
    heard: list[HookRun] = []
    history.add_listener(heard.extend)
    await manager.dispatch(HookEvent.TASK_CREATED, {}, process_id="p")
    history.flush()
    assert [r.hook_name for r in written] == [r.hook_name for r in heard] == ["h"]
