"""The outcome of each event (AgentProcess.outcome): every attempt's end goes through one
place, which notes it and dispatches task_completed."""

from __future__ import annotations

from _process_support import Recorder
from tether import AgentProcess, HookEvent, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel


def event() -> TriggerEvent:
    return TriggerEvent("helpdesk", "webhook", {"ticket": "Login page is down"})


async def test_outcome_waits_for_the_event_s_task_completed_and_says_success() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        event_id = await process.inject(event())
        assert await process.outcome(event_id, timeout=10) == "success"
    [completed] = rec.of(HookEvent.TASK_COMPLETED)
    assert (completed["event_id"], completed["outcome"]) == (event_id, "success")


async def test_an_event_a_stop_dead_letters_is_decided_dead_lettered() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    event_id = await process.inject(event())  # queued, never started
    await process.stop()
    assert await process.outcome(event_id) == "dead_lettered"


async def test_an_event_not_decided_yet_has_no_outcome_after_the_timeout() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    event_id = await process.inject(event())  # queued: the process never starts
    assert await process.outcome(event_id, timeout=0.01) is None
    await process.stop()
