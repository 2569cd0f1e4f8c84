"""The outcome of each event (AgentProcess.outcome): every attempt's end goes through one
place, which notes it and dispatches task_completed."""

from __future__ import annotations

from _process_support import Recorder
from tether import AgentProcess, HookBlocked, HookContext, HookEvent, ProcessConfig, TriggerEvent
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


async def test_an_event_a_task_created_hook_blocks_is_decided_dead_lettered_at_once() -> None:
    """Refused before it was queued: dead-lettered ("blocked by hook") with no
    task_completed, and a wait for its outcome ends then, not at its timeout."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)

    @process.hooks.on(HookEvent.TASK_CREATED)
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not from this desk")

    async with process:
        event_id = await process.inject(event())
        assert await process.outcome(event_id) == "dead_lettered"  # decided already
        [letter] = process.dead_letters
        assert (letter["event_id"], letter["reason"]) == (event_id, "blocked by hook")
    assert rec.of(HookEvent.TASK_COMPLETED) == []


async def test_an_event_injected_into_a_stopped_process_is_decided_dead_lettered() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    await process.start()
    await process.stop()
    event_id = await process.inject(event())
    assert await process.outcome(event_id) == "dead_lettered"


async def test_an_event_a_full_queue_refuses_is_decided_dead_lettered() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), max_queue_size=1))
    first = await process.inject(event())  # queued: the process never starts
    second = await process.inject(event())
    assert await process.outcome(second) == "dead_lettered"
    assert await process.outcome(first) is None  # still queued
    await process.stop()
