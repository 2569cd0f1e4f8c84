"""stop_timeout bounds a stop even when a run ignores its cancellation."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from _process_support import Messages, Recorder, Tools, eventually, ticket
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

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
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


@pytest.mark.slow
async def test_a_run_that_swallows_its_cancellation_is_abandoned_at_stop() -> None:
    await check_abandoned(StubbornModel())


@pytest.mark.slow
async def test_an_abandoned_run_that_fails_late_is_not_retried_or_recorded_again() -> None:
    await check_abandoned(StubbornModel(fails=True))


@pytest.mark.slow
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


class MixedModel:
    """Fails for a prompt with "boom"; for one with "stuck", swallows its cancellation and
    goes on until ``release`` is set; answers anything else."""

    name = "mixed"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.stuck_calls = 0
        self.waiting = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        text = str(messages[-1].get("content"))
        if "boom" in text:
            raise RuntimeError("model down")
        if "stuck" in text:
            self.stuck_calls += 1
            self.waiting += 1
            while not self.release.is_set():
                with contextlib.suppress(asyncio.CancelledError):
                    await self.release.wait()
            self.waiting -= 1
        return ModelReply(content="ok")

    async def aclose(self) -> None:
        pass


@pytest.mark.slow
async def test_a_crash_restart_dead_letters_an_abandoned_run_instead_of_running_it_again() -> None:
    from tether.process._config import RestartPolicy

    model = MixedModel()
    config = ProcessConfig(
        model=model,
        concurrency=2,
        stop_timeout=0.05,
        max_retries=0,
        restart=RestartPolicy(max_consecutive_failures=1, backoff=0),
    )
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
    await process.start()
    stuck = ticket("stuck forever")
    await process.inject(stuck)
    await eventually(lambda: model.waiting == 1, what="the stuck run")
    await process.inject(ticket("boom"))  # one failed run is a crash: a restart follows
    await eventually(
        lambda: [d["restart"] for d in rec.of(HookEvent.SESSION_START)] == [False, True],
        what="the restart",
    )
    [abandoned] = [d for d in process.dead_letters if d["event_id"] == stuck.event_id]
    assert abandoned["reason"] == "process failed"
    assert "abandoned, and not run again" in abandoned["error"]
    model.release.set()
    await eventually(lambda: model.waiting == 0, what="the abandoned run to end")
    await process.stop()
    assert model.stuck_calls == 1  # never run again after the restart
    outcomes = [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]
    assert outcomes.count((stuck.event_id, "dead_lettered")) == 1
    assert [o for e, o in outcomes if e == stuck.event_id] == ["dead_lettered"]


@pytest.mark.slow
@pytest.mark.parametrize("refuses", [True, False])
async def test_an_abandoned_run_stuck_in_a_guardrail_is_not_recorded_twice_or_run(
    refuses: bool,
) -> None:
    """Regression: a run abandoned in a guardrail scanner (not in the model) that then refused
    was dead-lettered a second time ("guardrail refused") with a second task_completed and a
    permission_denied; one that then allowed went on to run the model for its dead letter."""
    from tether.agent import GuardrailConfig

    release = asyncio.Event()
    entered = asyncio.Event()

    async def stubborn(payload: Any, prompt: str) -> str | None:
        entered.set()
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await release.wait()
        return "late refusal" if refuses else None

    model = StubbornModel()
    model.release.set()  # the model would answer at once: only the scanner is stuck
    config = ProcessConfig(
        model=model, stop_timeout=0.05, guardrails=GuardrailConfig(scanners=[stubborn])
    )
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.PERMISSION_DENIED)
    await process.start()
    event = ticket()
    await process.inject(event)
    await asyncio.wait_for(entered.wait(), timeout=5)
    await asyncio.wait_for(process.stop(), timeout=10)
    [abandoned] = process._abandoned
    release.set()
    await asyncio.wait_for(asyncio.shield(abandoned), timeout=5)
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (event.event_id, "process stopped")
    ]
    assert [d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ["dead_lettered"]
    assert rec.of(HookEvent.PERMISSION_DENIED) == []
    assert process.invocation_count == 0  # the abandoned event's run went no further
