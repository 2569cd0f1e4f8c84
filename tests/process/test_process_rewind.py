"""rewind(): drop the newest messages of the conversation, never under a running task."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from _process_support import GatedModel, HeldRewind, Recorder, eventually, hold_a_second_run, ticket
from tether import AgentProcess, ProcessBusyError, ProcessConfig, ProcessStateError
from tether.hooks import HookBlocked, HookContext, HookEvent
from tether.models import ScriptedModel


async def run_tickets(process: AgentProcess, rec: Recorder, *texts: str) -> None:
    for n, text in enumerate(texts, start=len(rec.of(HookEvent.TASK_COMPLETED)) + 1):
        await process.inject(ticket(text))
        await eventually(lambda n=n: len(rec.of(HookEvent.TASK_COMPLETED)) >= n, what=text)


def rewinds(
    process: AgentProcess, messages: int, errors: list[BaseException]
) -> Callable[[HookContext], Awaitable[None]]:
    """A hook that awaits ``process.rewind(messages)`` and keeps the ProcessStateError it gets."""

    async def forget(ctx: HookContext) -> None:
        try:
            await process.rewind(messages)
        except ProcessStateError as exc:
            errors.append(exc)

    return forget


async def hold_an_event_in_a_rewind(
    process: AgentProcess, rec: Recorder, audit: HeldRewind
) -> tuple[asyncio.Task[bool], str]:
    """Finish "first", start a rewind of one message that ``audit`` holds, and let a worker take
    a "second" event meanwhile; the rewind's task and the held event's id."""
    await run_tickets(process, rec, "first")
    rewinding = asyncio.create_task(process.rewind(1))
    await audit.entered.wait()
    held: str = await process.inject(ticket("second"))
    await eventually(lambda: process._live.queue.empty(), what="a worker takes it")
    return rewinding, held


#: The conversation after "first", "second" and "third" with "second" rewound.
SECOND_REWOUND = ["ticket: first", "Noted.", "ticket: third", "Noted."]


def contents(messages: list[dict[str, Any]]) -> list[str]:
    """Each message's first line (a prompt goes on with the event's id)."""
    return [str(m["content"]).split("\n")[0] for m in messages]


async def test_rewind_drops_the_newest_messages_and_fires_rewind() -> None:
    model = ScriptedModel(reply="Noted.")
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED)
    async with process:
        await run_tickets(process, rec, "first", "second")
        assert len(process.context.conversation) == 4
        assert await process.rewind(2) is True
        await run_tickets(process, rec, "third")
    [change] = rec.of(HookEvent.CONFIG_CHANGE)
    assert {k: v for k, v in change.items() if k != "dropping"} == {
        "source": "operator",
        "change": "rewind",
        "dropped": 2,
        "size_before": 4,
        "size_after": 2,
    }
    assert contents(change["dropping"]) == ["ticket: second", "Noted."]
    sent = contents(model.requests[-1]["messages"][1:])  # after the system message
    assert sent == ["ticket: first", "Noted.", "ticket: third"]


@pytest.mark.parametrize("messages", [0, -1, True, 1.5])
async def test_rewind_needs_a_whole_number_of_messages(messages: Any) -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    with pytest.raises(ValueError, match="messages must be a whole number of at least 1"):
        await process.rewind(messages)


async def test_rewinding_more_than_the_conversation_holds_changes_nothing() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED)
    async with process:
        await run_tickets(process, rec, "first")
        with pytest.raises(ValueError, match=r"cannot rewind 3 messages: .* holds 2"):
            await process.rewind(3)
    assert len(process.context.conversation) == 2
    assert rec.of(HookEvent.CONFIG_CHANGE) == []


async def test_an_agents_rewind_blocked_by_a_hook_keeps_the_conversation() -> None:
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("no forgetting")

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, refuse)
    async with process:
        await run_tickets(process, rec, "first")
        assert await process.rewind(2, source="agent") is False
        assert len(process.context.conversation) == 2
        assert await process.rewind(2) is True  # an operator's rewind always applies
        assert len(process.context.conversation) == 0


async def test_a_rewind_is_not_a_change_rollback_undoes() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await run_tickets(process, rec, "first")
        await process.rewind(1)
    assert process.config_history == []


async def test_a_hook_awaiting_rewind_of_its_own_process_gets_a_clear_error() -> None:
    """A task_completed hook runs inside the worker whose run rewind() would wait for."""
    errors: list[BaseException] = []
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1)
    process.hooks.register(HookEvent.TASK_COMPLETED, rewinds(process, 2, errors))
    async with process:
        await run_tickets(process, rec, "first")
    [error] = errors
    assert str(error) == (
        "rewind() of process 'triage' was awaited from inside its own hook or run, which would "
        "wait on itself; schedule it instead: asyncio.create_task(process.rewind())"
    )
    assert len(process.context.conversation) == 2


async def test_a_config_change_hook_awaiting_rewind_of_its_own_process_gets_the_error() -> None:
    """Outside a worker too: the task dispatching the operator's change is marked."""
    errors: list[BaseException] = []
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    process.hooks.register(HookEvent.CONFIG_CHANGE, rewinds(process, 1, errors))
    await process.set_mission("Keep the queue short.")
    assert "awaited from inside its own hook or run" in str(errors[0])


async def test_a_scheduled_rewind_from_a_hook_runs_once_the_run_is_done() -> None:
    scheduled: list[asyncio.Task[bool]] = []

    async def forget(ctx: HookContext) -> None:
        scheduled.append(asyncio.create_task(process.rewind(2)))

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1)
    process.hooks.register(HookEvent.TASK_COMPLETED, forget, once=True)
    async with process:
        await run_tickets(process, rec, "first")
        assert await scheduled[0] is True
    assert len(process.context.conversation) == 0


async def test_rewind_waits_for_the_run_in_flight_and_holds_the_queued_events() -> None:
    model = GatedModel(reply="Noted.")
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED)
    async with process:
        await hold_a_second_run(process, model, rec)
        await process.inject(ticket("third"))  # queued behind it
        rewinding = asyncio.create_task(process.rewind(2))
        await asyncio.sleep(0.01)  # let the rewind begin: it now holds new runs
        assert not rewinding.done()
        model.gate.set()
        assert await rewinding is True
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, what="third")
    [change] = rec.of(HookEvent.CONFIG_CHANGE)
    assert (change["size_before"], change["size_after"]) == (4, 2)  # after "second", before "third"
    assert contents(change["dropping"]) == ["ticket: second", "Noted."]
    assert model.prompts[-1].startswith("ticket: third")
    assert contents(process.context.conversation.recent()) == SECOND_REWOUND


async def test_rewind_gives_up_on_a_run_that_does_not_finish_and_changes_nothing() -> None:
    model = GatedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED)
    async with process:
        await hold_a_second_run(process, model, rec)
        with pytest.raises(ProcessBusyError, match="still runs 1 task"):
            await process.rewind(2, timeout=0.05)
        assert len(process.context.conversation) == 2
        model.gate.set()  # the hold is released: queued and new events run again
        await process.inject(ticket("third"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, what="third")
    assert rec.of(HookEvent.CONFIG_CHANGE) == []


async def test_a_stopped_process_can_be_rewound() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await run_tickets(process, rec, "first")
    assert await process.rewind(1) is True
    assert contents(process.context.conversation.recent()) == ["ticket: first"]


async def test_an_event_taken_while_rewind_hooks_run_waits_and_the_told_messages_go() -> None:
    """Regression: a worker already waiting on the queue took an event while the rewind's
    config_change hooks ran and ran it; the rewind then dropped that new exchange instead of
    the messages the hooks were told about."""
    audit = HeldRewind()
    entered, release = audit.entered, audit.release

    model = ScriptedModel(reply="Noted.")
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    async with process:
        await run_tickets(process, rec, "first", "second")
        rewinding = asyncio.create_task(process.rewind(2))
        await entered.wait()
        await process.inject(ticket("third"))
        await eventually(lambda: process._live.queue.empty(), what="a worker takes it")
        in_flight = process.status()["in_flight"]
        release.set()
        assert await rewinding is True
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, what="third")
    assert in_flight == 0  # held, not run, while the hooks ran
    [change] = rec.of(HookEvent.CONFIG_CHANGE)
    assert contents(change["dropping"]) == ["ticket: second", "Noted."]
    assert contents(model.requests[-1]["messages"][1:]) == [
        "ticket: first",
        "Noted.",
        "ticket: third",
    ]
    assert contents(process.context.conversation.recent()) == SECOND_REWOUND


async def test_an_event_held_during_a_rewind_is_dead_lettered_when_the_process_stops() -> None:
    audit = HeldRewind()
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    async with process:
        rewinding, held = await hold_an_event_in_a_rewind(process, rec, audit)
    audit.release.set()
    assert await rewinding is True
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (held, "process stopped")
    ]
    assert contents(process.context.conversation.recent()) == ["ticket: first"]


async def test_a_rewind_whose_hooks_change_the_conversation_drops_nothing() -> None:
    """Only the messages config_change was told about may go: here they moved, so none do."""

    async def note(ctx: HookContext) -> None:
        await process.context.conversation.extend([{"role": "user", "content": "aside"}])

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(reply="Noted.")))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, note)
    async with process:
        await run_tickets(process, rec, "first")
        with pytest.raises(ProcessBusyError, match="changed while the config_change hooks"):
            await process.rewind(1)
    assert contents(process.context.conversation.recent()) == ["ticket: first", "Noted.", "aside"]


async def test_an_event_held_during_a_rewind_keeps_its_place_ahead_of_the_queue_on_stop() -> None:
    """Regression: a worker stopped while it held an event during a rewind put it back at the
    tail of the queue (dead-lettered after the events injected later), and without a
    task_completed when the queue had filled up meanwhile."""
    audit = HeldRewind()
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), max_queue_size=2))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    async with process:
        rewinding, held = await hold_an_event_in_a_rewind(process, rec, audit)
        later = [await process.inject(ticket(text)) for text in ("third", "fourth")]
    audit.release.set()
    assert await rewinding is True
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (held, "process stopped"),
        (later[0], "process stopped"),
        (later[1], "process stopped"),
    ]
    completed = [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)[1:]]
    assert completed == [(e, "dead_lettered") for e in (held, *later)]
