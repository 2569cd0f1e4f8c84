"""stop_timeout bounds a stop even when a run ignores its cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig
from tether.models import ModelReply


class StubbornModel:
    """A model call that swallows its cancellation and goes on until ``release`` is set."""

    name = "stubborn"

    def __init__(self, fails: bool = False) -> None:
        self.release = asyncio.Event()
        self.fails = fails
        self.waiting = 0
        self.cancels_swallowed = 0

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ModelReply:
        self.waiting += 1
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancels_swallowed += 1  # the misbehaviour: carry on regardless
        self.waiting -= 1
        if self.fails:
            raise RuntimeError("late failure")
        return ModelReply(content="late answer")

    async def aclose(self) -> None:
        pass


async def check_abandoned(model: StubbornModel) -> None:
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.05, max_retries=3))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    event = ticket()
    await process.inject(event)
    await eventually(lambda: model.waiting == 1, what="the run in flight")

    await asyncio.wait_for(process.stop(), timeout=10)  # it used to wait on the run for ever
    assert model.cancels_swallowed >= 1
    assert process.state.value == "stopped"
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"]) == (event.event_id, "process stopped")
    assert [d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ["dead_lettered"]

    model.release.set()  # the abandoned run ends now: what it does is ignored
    await eventually(lambda: model.waiting == 0, what="the abandoned run to end")
    for _ in range(5):
        await asyncio.sleep(0)
    assert [d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ["dead_lettered"]
    assert len(process.dead_letters) == 1
    assert process.status()["in_flight"] == 0


async def test_a_run_that_swallows_its_cancellation_is_abandoned_at_stop() -> None:
    await check_abandoned(StubbornModel())


async def test_an_abandoned_run_that_fails_late_is_not_retried_or_recorded_again() -> None:
    await check_abandoned(StubbornModel(fails=True))


async def test_a_restarted_process_gets_no_extra_worker_from_an_abandoned_run() -> None:
    model = StubbornModel()
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.05))
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: model.waiting == 1, what="the run in flight")
    await process.stop()
    [abandoned] = process._abandoned
    await process.start()  # a new session, while the abandoned run still goes on
    model.release.set()
    # Its worker ends with the run instead of taking the new session's events.
    await asyncio.wait_for(asyncio.shield(abandoned), timeout=5)
    assert process._abandoned == set()
    await process.stop()
