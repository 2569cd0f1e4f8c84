"""Review: stop_timeout bounds a stop, however many events are left and however slow the
task_completed hooks of their dead letters are.

Every event left is dead-lettered (in memory and the journal) before any of those hooks runs;
the hooks then run until the stop's deadline (what is left of stop_timeout after the runs, plus
ABANDON_GRACE), and the dead letters of the events whose task_completed was cut off say so.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from _process_support import GatedModel, Recorder, eventually, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.process._dead_letters import UNFIRED
from tether.store import Journal

QUEUED = 20
HOOK_SECONDS = 0.5
STOP_TIMEOUT = 0.5


class SlowCompletion:
    """A task_completed hook taking HOOK_SECONDS; notes how many dead letters it found."""

    def __init__(self, process: AgentProcess) -> None:
        self.process = process
        self.dead_letters_seen: list[int] = []
        self.finished: list[str] = []

    async def __call__(self, ctx: HookContext) -> None:
        self.dead_letters_seen.append(len(self.process.dead_letters))
        await asyncio.sleep(HOOK_SECONDS)
        self.finished.append(ctx.data["event_id"])


@pytest.mark.slow
async def test_a_stop_with_a_full_queue_and_slow_task_completed_hooks_is_bounded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: stop() fired task_completed for each of the events it dead-lettered, one
    after the other, so 21 events behind a 0.5 s hook held it for over ten seconds whatever
    stop_timeout said."""
    db = str(tmp_path / "tether.db")
    model = GatedModel()  # the run in flight never ends by itself: stop_timeout cuts it off
    process = AgentProcess(
        "triage", ProcessConfig(model=model, stop_timeout=STOP_TIMEOUT, journal_path=db)
    )
    slow = SlowCompletion(process)
    process.hooks.register(HookEvent.TASK_COMPLETED, slow)
    await process.start()
    ids = [await process.inject(ticket(f"ticket {i}")) for i in range(QUEUED + 1)]
    await eventually(lambda: model.active == 1, what="the first run in flight")

    loop = asyncio.get_running_loop()
    began = loop.time()
    with caplog.at_level(logging.WARNING, logger="tether.process"):
        await asyncio.wait_for(process.stop(), timeout=30)
    took = loop.time() - began

    unbounded = (QUEUED + 1) * HOOK_SECONDS  # one hook after another, as it used to be
    assert took < unbounded / 2, f"stop() took {took:.1f}s"
    assert process.state.value == "stopped"
    # All dead-lettered, with their reason, before the first task_completed hook ran.
    assert sorted(d["event_id"] for d in process.dead_letters) == sorted(ids)
    assert {d["reason"] for d in process.dead_letters} == {"process stopped"}
    assert slow.dead_letters_seen[:1] in ([], [QUEUED + 1])
    # Those whose task_completed was cut off say so, in memory and in the journal alike.
    unfired = {d["event_id"] for d in process.dead_letters if UNFIRED in (d["error"] or "")}
    assert unfired, "the deadline cut none off"
    assert unfired.isdisjoint(slow.finished)
    assert len(unfired) + len(slow.finished) == QUEUED + 1
    journaled = Journal(db, "triage").dead_letters()
    assert sorted(raw["event_id"] for raw, *_ in journaled) == sorted(ids)
    assert {raw["event_id"] for raw, _, _, error, _ in journaled if UNFIRED in (error or "")} == (
        unfired
    )
    assert {reason for _, _, reason, _, _ in journaled} == {"process stopped"}
    assert f"task_completed ran for {len(unfired)} of the {QUEUED + 1} events" in caplog.text


@pytest.mark.slow
async def test_a_stop_before_start_is_bounded_too() -> None:
    """Regression: stopping a process that never started dead-lettered the events injected
    meanwhile and then fired task_completed for each, one 0.5 s hook after another."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), stop_timeout=0.1))
    slow = SlowCompletion(process)
    process.hooks.register(HookEvent.TASK_COMPLETED, slow)
    ids = [await process.inject(ticket(f"ticket {i}")) for i in range(QUEUED)]

    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(process.stop(), timeout=30)
    took = loop.time() - began

    assert took < QUEUED * HOOK_SECONDS / 2, f"stop() took {took:.1f}s"
    assert [d["event_id"] for d in process.dead_letters] == ids
    unfired = [d["event_id"] for d in process.dead_letters if UNFIRED in (d["error"] or "")]
    assert unfired == ids[len(slow.finished) :]  # cut off in order: the first ones ran


async def test_quick_task_completed_hooks_all_run_and_no_dead_letter_is_marked() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), stop_timeout=0.1))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    ids = [await process.inject(ticket(f"ticket {i}")) for i in range(QUEUED)]
    await process.stop()
    assert [d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ids
    assert {d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)} == {"dead_lettered"}
    assert all(UNFIRED not in (d["error"] or "") for d in process.dead_letters)
