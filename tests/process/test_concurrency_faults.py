"""Review: what no layer isolates (a BaseException, a stray CancelledError) never loses an event.

The hook engine isolates a hook's ``Exception`` (and ``SystemExit``); the agent loop a tool's
``Exception``. Anything else reaching a worker, or raised by a lifecycle hook, must still leave
every event completed, dead-lettered with a reason, or queued for the restarted process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig, ProcessState, RestartPolicy, TriggerEvent
from tether.hooks import HookContext, HookEvent
from tether.models import ScriptedModel
from tether.store import Journal

#: Crash on the first failure, restart at once, at most twice.
QUICK_RESTART = RestartPolicy(max_consecutive_failures=1, max_restarts=2, backoff=0.001)


class Abort(BaseException):
    """A BaseException of the user's own (not an Exception: no layer isolates it)."""


def once(event: HookEvent, process: AgentProcess, *, when: int = 1) -> list[int]:
    """Register a hook on ``event`` that raises Abort at its ``when``-th call; returns calls."""
    calls: list[int] = []

    async def abort(ctx: HookContext) -> None:
        calls.append(len(calls) + 1)
        if len(calls) == when:
            raise Abort(f"{event.value} gave up")

    process.hooks.register(event, abort)
    return calls


def completed(rec: Recorder) -> list[tuple[str, str]]:
    return [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]


async def crash_on_the_first_of_two(
    process: AgentProcess, first: TriggerEvent, second: TriggerEvent
) -> tuple[Recorder, ProcessState]:
    """Run ``first`` (its crash set up by the test) and ``second``, and check that the first
    failed and the second ran; a recorder of task_completed and session_start, and the state
    once both were done."""
    rec = Recorder().attach(
        process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START, priority=10
    )
    async with process:
        await process.inject(first)
        await process.inject(second)
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="both events")
        state = process.state
    assert completed(rec) == [(first.event_id, "failed"), (second.event_id, "success")]
    return rec, state


async def test_a_prompt_hook_raising_a_base_exception_dead_letters_the_event_and_restarts() -> None:
    """Regression: the worker died with the event: no dead letter, no task_completed, and the
    process stayed "running" with no worker left, so the next event never ran."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), restart=QUICK_RESTART))
    once(HookEvent.USER_PROMPT_SUBMIT, process)
    first = ticket("first")
    rec, _ = await crash_on_the_first_of_two(process, first, ticket("second"))
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"], dead["error"]) == (
        first.event_id,
        "process failed",
        "Abort: user_prompt_submit gave up",
    )
    assert [d["restart"] for d in rec.of(HookEvent.SESSION_START)] == [False, True]


async def test_a_tool_raising_a_stray_cancelled_error_dead_letters_the_event_and_restarts() -> None:
    """Regression: a CancelledError that was not the worker's own cancellation (a future the
    tool awaited was cancelled elsewhere) parked the event as cut off and killed the worker."""

    async def lookup(ticket_id: str) -> str:
        """Look a ticket up."""
        gone: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        gone.cancel()  # e.g. a request another task gave up on
        return await gone

    model = ScriptedModel(tool_calls=[("lookup", {"ticket_id": "T-1"})])
    config = ProcessConfig(model=model, tools=[lookup], restart=QUICK_RESTART)
    process = AgentProcess("triage", config)
    first = ticket("first")
    await crash_on_the_first_of_two(process, first, ticket("second"))
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (first.event_id, "process failed")
    ]
    assert process.status()["last_error"] == "worker crashed: CancelledError"


async def test_a_crash_after_a_finished_run_never_dead_letters_that_run(tmp_path: Path) -> None:
    """A task_completed hook raising a BaseException after a success crashes the process, but
    the event ran: it is neither dead-lettered (a redelivery would run it twice) nor left in
    the journal for recovery."""
    db = tmp_path / "tether.db"
    config = ProcessConfig(model=ScriptedModel(), restart=QUICK_RESTART, journal_path=str(db))
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, priority=10)
    once(HookEvent.TASK_COMPLETED, process)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.SESSION_START)) == 2, what="the restart")
    assert process.dead_letters == []
    journal = Journal(db, "triage")
    assert journal.unfinished() == []
    assert journal.dead_letters() == []


async def test_an_event_a_hook_crashed_on_is_a_dead_letter_the_next_process_reloads(
    tmp_path: Path,
) -> None:
    """The crash's dead letter is journaled: a new process over the file lists it and does not
    run it (recovery never runs it a second time)."""
    db = str(tmp_path / "tether.db")
    restart = RestartPolicy(policy="never", max_consecutive_failures=1)
    first = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(), restart=restart, journal_path=db)
    )
    once(HookEvent.USER_PROMPT_SUBMIT, first)
    event = ticket()
    await first.start()
    await first.inject(event)
    await eventually(lambda: first.state == ProcessState.FAILED and first.dead_letters)
    await first.stop()

    model = ScriptedModel()
    second = AgentProcess("triage", ProcessConfig(model=model, journal_path=db))
    rec = Recorder().attach(second.hooks, HookEvent.SESSION_START)
    async with second:
        pass
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] == {
        "events": 0,
        "event_ids": [],
        "dead_letters": 1,
    }
    assert [(d["event_id"], d["reason"]) for d in second.dead_letters] == [
        (event.event_id, "process failed")
    ]
    assert model.prompts == []


async def test_a_session_end_hook_raising_a_base_exception_still_stops_the_process() -> None:
    """Regression: stop() raised out of session_end and left the process "stopping" for good,
    its workers running, and every later stop() waiting forever."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    once(HookEvent.SESSION_END, process)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    with pytest.raises(Abort):
        await asyncio.wait_for(process.stop(), 10)
    assert process.state == ProcessState.STOPPED
    assert process.status()["in_flight"] == 0
    await asyncio.wait_for(process.stop(), 10)  # a second stop() returns at once
    event = ticket()
    await process.inject(event)  # refused with a reason, not queued for nobody
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (event.event_id, "process stopped")
    ]
    assert rec.seen == []


async def test_the_queue_is_dead_lettered_when_session_end_raises_at_stop() -> None:
    """Events still queued at a stop whose session_end hook raises are dead-lettered too."""
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    once(HookEvent.SESSION_END, process)
    events = [ticket(f"ticket {i}") for i in range(3)]
    for event in events:  # queued before start: no worker takes them before the stop
        await process.inject(event)
    blocker = asyncio.Event()

    async def hold(ctx: HookContext) -> None:
        await blocker.wait()

    process.hooks.register(HookEvent.SESSION_START, hold)
    starting = asyncio.create_task(process.start())
    await eventually(lambda: process.state == ProcessState.RUNNING)
    with pytest.raises(Abort):
        await asyncio.wait_for(process.stop(), 10)
    blocker.set()
    await starting
    assert process.state == ProcessState.STOPPED
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (e.event_id, "process stopped") for e in events
    ]
    assert model.prompts == []


async def test_a_session_end_hook_raising_at_a_crash_does_not_stall_the_restart() -> None:
    """Regression: the supervisor died in session_end; the process stayed "failed" for good,
    accepting events (a restart seemed to be coming) that never ran."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), restart=QUICK_RESTART))
    once(HookEvent.USER_PROMPT_SUBMIT, process)  # the crash
    once(HookEvent.SESSION_END, process)  # and the session_end of that crash raises too
    _, state = await crash_on_the_first_of_two(process, ticket("first"), ticket("second"))
    assert state == ProcessState.RUNNING


async def test_a_session_start_hook_raising_leaves_the_process_failed_not_running() -> None:
    """Regression: start() raised but the process said "running" with no worker, and queued
    every event it was sent for nobody to run."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    once(HookEvent.SESSION_START, process)
    with pytest.raises(Abort):
        await process.start()
    assert process.state == ProcessState.FAILED
    event = ticket()
    await process.inject(event)
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (event.event_id, "process stopped")
    ]
    await process.start()  # it can be started again
    assert process.state == ProcessState.RUNNING
    await process.stop()


async def test_a_restart_whose_session_start_raises_is_supervised_and_tried_again() -> None:
    """Regression: the failed restart left the process "failed" with its queue kept for a
    restart that never came."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), restart=QUICK_RESTART))
    once(HookEvent.USER_PROMPT_SUBMIT, process)  # the crash
    once(HookEvent.SESSION_START, process, when=2)  # the first restart fails too
    rec, _ = await crash_on_the_first_of_two(process, ticket("first"), ticket("second"))
    starts: list[Any] = [d["restart"] for d in rec.of(HookEvent.SESSION_START)]
    assert starts == [False, True, True]
    assert process.restart_count == 2


async def test_a_task_completed_hook_raising_at_stop_loses_none_of_the_queued_events() -> None:
    """Regression: the first dead_lettered task_completed raised out of stop(): the events
    after it were taken from the queue and never dead-lettered."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    once(HookEvent.TASK_COMPLETED, process)
    events = [ticket(f"ticket {i}") for i in range(3)]
    for event in events:
        await process.inject(event)
    await asyncio.wait_for(process.stop(), 10)
    assert process.state == ProcessState.STOPPED
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (e.event_id, "process stopped") for e in events
    ]


async def test_a_task_completed_hook_raising_for_a_cut_off_run_still_stops_the_process() -> None:
    """Regression: stop() raised while dead-lettering the run it cut off, the queued events
    were never dead-lettered and the process stayed "stopping" (a second stop() hung)."""
    model = ScriptedModel(latency=3600)
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.01))
    once(HookEvent.TASK_COMPLETED, process)
    running, queued = ticket("running"), ticket("queued")
    await process.start()
    await process.inject(running)
    await eventually(lambda: model.requests, what="the run")
    await process.inject(queued)
    await asyncio.wait_for(process.stop(), 10)
    assert process.state == ProcessState.STOPPED
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (running.event_id, "process stopped"),
        (queued.event_id, "process stopped"),
    ]
    await asyncio.wait_for(process.stop(), 10)
