"""Review of the hook engine: a dispatch that completed its chain hands its async hooks their
event, whatever happens after (an error listener that is slow, a cancellation meanwhile)."""

from __future__ import annotations

import asyncio

import pytest

from tether import HookContext, HookErrorInfo, HookEvent, HookManager
from tether.hooks._background import drain
from tether.hooks._history import HistoryRecorder

COMPLETED = HookEvent.TASK_COMPLETED
DONE = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual", "outcome": "failed"}


async def test_an_async_hook_gets_its_event_even_if_the_dispatch_is_cancelled_in_a_listener() -> (
    None
):
    """Regression: the async hooks were queued after the error listeners were awaited, so a
    dispatch cancelled while a listener ran (a worker being stopped) lost its audit hook's run."""
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    audited: list[str] = []
    listening = asyncio.Event()

    async def fails(ctx: HookContext) -> None:
        raise RuntimeError("broken")

    async def audit(ctx: HookContext) -> None:
        audited.append(ctx.data["outcome"])

    async def slow_listener(info: HookErrorInfo) -> None:
        listening.set()
        await asyncio.sleep(30)

    manager.register(COMPLETED, fails, name="fails")
    manager.register(COMPLETED, audit, mode="async", name="audit")
    manager.on_error(slow_listener)
    task = asyncio.create_task(manager.dispatch(COMPLETED, DONE))
    await asyncio.wait_for(listening.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await drain(5)
    assert audited == ["failed"]
    outcomes = {run.hook_name: run.outcome for run in history.runs()}
    assert outcomes == {"fails": "failed", "audit": "passed"}
