"""Review: redelivering dead letters never loses one, in memory or in the journal.

``redeliver_dead_letters()`` injects each chosen dead letter in turn; each inject fires
task_created, whose hooks may take a while. A caller that gives up meanwhile (a timeout, a
cancelled request) or a host that dies meanwhile must find the dead letters not yet
redelivered still there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from _process_support import GatedModel, Recorder, eventually, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.store import Journal


async def stopped_with_dead_letters(db: str, count: int) -> list[str]:
    """Dead-letter ``count`` events in the journal at ``db`` (stopped before it started)."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=db))
    ids = [await process.inject(ticket(f"ticket {i}")) for i in range(count)]
    await process.stop()
    assert [d["event_id"] for d in process.dead_letters] == ids
    return ids


async def test_a_redelivery_given_up_midway_keeps_the_dead_letters_it_did_not_redeliver(
    tmp_path: Path,
) -> None:
    """Regression: every chosen dead letter left the list and the journal before the first was
    injected; a redelivery cancelled in the first task_created lost all of them."""
    db = str(tmp_path / "tether.db")
    ids = await stopped_with_dead_letters(db, 3)
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=db))
    entered = asyncio.Event()

    async def slow_intake(ctx: HookContext) -> None:
        entered.set()
        await asyncio.Event().wait()  # the redelivery gives up before this ends

    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        assert [d["event_id"] for d in process.dead_letters] == ids  # reloaded from the journal
        process.hooks.register(HookEvent.TASK_CREATED, slow_intake)
        redelivery = asyncio.create_task(process.redeliver_dead_letters())
        await entered.wait()
        redelivery.cancel()
        await asyncio.wait([redelivery])
        assert sorted(d["event_id"] for d in process.dead_letters) == sorted(ids)
        assert sorted(raw["event_id"] for raw, *_ in Journal(db, "triage").dead_letters()) == (
            sorted(ids)
        )
    assert rec.seen == []


async def test_dead_letters_redelivered_by_two_callers_at_once_run_once_each(
    tmp_path: Path,
) -> None:
    """Two redeliveries at once inject each dead letter once between them."""
    db = str(tmp_path / "tether.db")
    ids = await stopped_with_dead_letters(db, 3)
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, journal_path=db))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)

    async def yielding_intake(ctx: HookContext) -> None:
        await asyncio.sleep(0)

    process.hooks.register(HookEvent.TASK_CREATED, yielding_intake)
    async with process:
        counts = await asyncio.gather(
            process.redeliver_dead_letters(), process.redeliver_dead_letters()
        )
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, what="3 runs")
    assert sum(counts) == 3
    assert sorted(d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)) == sorted(ids)
    assert len(model.prompts) == 3
    assert Journal(db, "triage").dead_letters() == []


async def test_a_redelivered_dead_letter_is_recovered_behind_the_events_queued_before_it(
    tmp_path: Path,
) -> None:
    """A redelivery queues the event anew: the journal (which recovery reads in the order
    events were queued) has it behind those already waiting, as the queue does."""
    db = str(tmp_path / "tether.db")
    [old] = await stopped_with_dead_letters(db, 1)
    model = GatedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, journal_path=db))
    async with process:
        running = await process.inject(ticket("running"))
        await eventually(lambda: model.active == 1, what="the run")
        waiting = await process.inject(ticket("waiting"))
        assert await process.redeliver_dead_letters() == 1
        order = [raw["event_id"] for raw, _ in Journal(db, "triage").unfinished()]
        model.gate.set()
    assert order == [running, waiting, old]
