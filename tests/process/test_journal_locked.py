"""A journal file another program holds locked: the process runs its events on, says so in
status() and the log, and refuses (raises on) an inject the journal could not take.

The lock is real: a second SQLite connection to the file holds ``BEGIN EXCLUSIVE``. The busy
timeout is cut to 50 ms so a write on the locked file fails fast.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from _process_support import FailsOnceModel, GatedModel, Recorder, eventually, locked, ticket
from tether import AgentProcess, HookBlocked, HookContext, HookEvent, ProcessConfig, TriggerEvent
from tether.api._views import process_detail
from tether.models import ScriptedModel
from tether.process import JournalWrites
from tether.store import Journal, StepStore, _sqlite


@pytest.fixture(autouse=True)
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes on a locked file fail after 50 ms, not 5 s (each test has a file of its own, so
    its connection is opened with this timeout)."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 0.05)


def journaled(path: Path, model: Any, **config: Any) -> AgentProcess:
    return AgentProcess("triage", ProcessConfig(model=model, journal_path=str(path), **config))


def outcomes(rec: Recorder) -> list[tuple[str, str]]:
    return [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]


def journal_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "tether.process"
        and r.levelno == logging.WARNING
        and "journal write" in r.getMessage()
    ]


def unfinished_ids(path: Path) -> list[str]:
    return [event["event_id"] for event, _ in Journal(path, "triage").unfinished()]


async def run_on_locked_journal(path: Path, rec: Recorder, process: AgentProcess) -> TriggerEvent:
    """Inject an event (journaled), lock the file, start ``process``: the event's recovery
    ``queued``, ``running`` and ``done`` writes fail. Return the event once it completed."""
    event = ticket()
    await process.inject(event)
    with locked(path):
        await process.start()
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
        # The writes run on the process's writer thread, one after another, each failing at
        # the busy timeout: the lock is held until all of them have failed.
        await eventually(lambda: process.journal_pending == 0, what="the writes to fail")
    return event


async def test_a_run_whose_journal_writes_fail_on_a_locked_file_succeeds_and_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path, ScriptedModel())
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    caplog.set_level(logging.WARNING, "tether.process")
    try:
        event = await run_on_locked_journal(path, rec, process)
        assert outcomes(rec) == [(event.event_id, "success")]
        status = process.status()
        assert (status["state"], status["restart_count"], status["dead_letter_count"]) == (
            "running",
            0,
            0,
        )
        assert status["journal_errors"] >= 2  # running and done at least
        assert status["journal_errors"] == len(journal_warnings(caplog))  # one warning each
        assert f"SQLite file {path}: database is locked" in status["journal_error"]
        detail = process_detail(process)
        assert (detail["journal_errors"], detail["journal_error"]) == (
            status["journal_errors"],
            status["journal_error"],
        )
        # The journal was not told the event is done: it holds it still, to run again.
        assert unfinished_ids(path) == [event.event_id]
    finally:
        await process.stop()


async def test_an_event_whose_done_was_not_journaled_runs_again_in_the_next_process(
    tmp_path: Path,
) -> None:
    """At-least-once: the next process over the file recovers the event and runs it."""
    path = tmp_path / "tether.db"
    first = journaled(path, ScriptedModel())
    rec = Recorder().attach(first.hooks, HookEvent.TASK_COMPLETED)
    try:
        event = await run_on_locked_journal(path, rec, first)
    finally:
        await first.stop()

    second = journaled(path, ScriptedModel())
    again = Recorder().attach(second.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with second:
        await eventually(lambda: again.of(HookEvent.TASK_COMPLETED), what="the run again")
    [start] = again.of(HookEvent.SESSION_START)
    assert start["recovered"]["event_ids"] == [event.event_id]
    assert outcomes(again) == [(event.event_id, "success")]
    assert (second.status()["journal_errors"], unfinished_ids(path)) == (0, [])


async def test_a_retry_on_a_locked_journal_runs_again_and_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path, FailsOnceModel(), retry_backoff=0.01)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        event = ticket()
        await process.inject(event)
        with locked(path):
            await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="2 runs")
            await eventually(lambda: process.journal_pending == 0, what="the writes to fail")
        assert outcomes(rec) == [(event.event_id, "retrying"), (event.event_id, "success")]
        status = process.status()
        assert (status["state"], status["restart_count"], status["dead_letter_count"]) == (
            "running",
            0,
            0,
        )
        assert status["journal_errors"] >= 2  # the retry's queued among them
    finally:
        await process.stop()


async def test_a_dead_letter_on_a_locked_journal_is_kept_and_the_process_runs_on(
    tmp_path: Path,
) -> None:
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not now")

    path = tmp_path / "tether.db"
    process = journaled(path, ScriptedModel())
    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, refuse)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    try:
        event = await run_on_locked_journal(path, rec, process)
        [dead] = process.dead_letters
        assert (dead["event_id"], dead["reason"]) == (event.event_id, "blocked by hook")
        assert outcomes(rec) == [(event.event_id, "blocked")]
        status = process.status()
        assert (status["state"], status["restart_count"]) == ("running", 0)
        assert status["journal_errors"] >= 2  # running and dead at least
    finally:
        await process.stop()


async def test_once_the_lock_is_released_later_events_are_journaled_again(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    model = GatedModel()
    model.gate.set()
    process = journaled(path, model)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    try:
        first = await run_on_locked_journal(path, rec, process)
        errors = process.status()["journal_errors"]
        assert errors >= 1

        model.gate.clear()  # the later run waits on it: its row is seen running
        later = ticket("Printer on fire")
        await process.inject(later)
        await eventually(lambda: model.active, what="the later run to start")
        states = [(e["event_id"], state) for e, _, state in journal_states(path)]
        assert states == [(first.event_id, "queued"), (later.event_id, "running")]
        model.gate.set()
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="the later run")
        assert outcomes(rec)[1] == (later.event_id, "success")
        # The later one is done once its write lands (written off the loop, not waited for).
        await eventually(
            lambda: unfinished_ids(path) == [first.event_id], what="the later one's done write"
        )
        assert process.status()["journal_errors"] == errors
    finally:
        await process.stop()


def journal_states(path: Path) -> list[tuple[dict[str, Any], int, str]]:
    return Journal(path, "triage").unfinished_states()


async def test_inject_on_a_locked_journal_raises_naming_the_file_and_queues_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path, ScriptedModel())
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        refused = ticket("Refused")
        with locked(path), pytest.raises(sqlite3.OperationalError) as raised:
            await process.inject(refused)
        assert str(raised.value) == f"SQLite file {path}: database is locked"
        status = process.status()
        assert (status["queue_size"], status["in_flight"], status["dead_letter_count"]) == (0, 0, 0)
        assert status["journal_errors"] == 0  # raised to the caller, not counted

        accepted = ticket("Accepted")
        await process.inject(accepted)
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the accepted run")
        # Queued first, the refused one would have run first.
        assert outcomes(rec) == [(accepted.event_id, "success")]
        assert process.dead_letters == []
        assert refused.event_id not in unfinished_ids(path)
        # The accepted one is done once its write lands (written off the loop, not waited for).
        await eventually(lambda: unfinished_ids(path) == [], what="the accepted one's done write")
    finally:
        await process.stop()


async def test_a_journal_error_naming_a_file_whose_path_holds_a_secret_shows_no_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The error names the file; a declared secret in its path is redacted in log and status."""
    canary = "canary-5f3c9e"
    path = tmp_path / canary / "tether.db"
    process = journaled(path, ScriptedModel(), secrets={"TENANT": canary})
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    caplog.set_level(logging.WARNING, "tether.process")
    try:
        await run_on_locked_journal(path, rec, process)
        status = process.status()
        assert status["journal_errors"] >= 1
        assert "database is locked" in status["journal_error"]
        assert canary not in status["journal_error"]
        warnings = journal_warnings(caplog)
        assert warnings
        assert "database is locked" in warnings[0]
        assert canary not in caplog.text
    finally:
        await process.stop()


async def take_over_on_a_locked_step_journal(
    process: AgentProcess, path: Path, rec: Recorder, runs: int
) -> int:
    """Give ``process`` a step journal in ``path`` and its writes (as a cluster's takeover
    does), run one event while the file is held locked; the writes' failures (the
    conversation's save at the run's end)."""
    writes = JournalWrites("triage", process.redactor, running=lambda: True, path=str(path))
    process.use_steps(StepStore(path, "triage"), writes)
    try:
        with locked(path):
            await process.start()
            await process.inject(ticket())
            await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == runs)
            await eventually(lambda: writes.errors >= 1, what="the save failed")
    finally:
        await process.stop()  # (the file free again: a stop's last save lands)
        await writes.close()
    return writes.errors


async def test_the_failed_writes_of_each_step_journal_given_are_counted_and_kept(
    tmp_path: Path,
) -> None:
    """A cluster gives a process a step journal and its writes at each takeover (use_steps):
    status() counts their failures with its own, and keeps those of the writes given before."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))  # no journal
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    first = await take_over_on_a_locked_step_journal(process, tmp_path / "1.db", rec, 1)
    assert process.status()["journal_errors"] == first
    assert "database is locked" in (process.journal_error or "")
    second = await take_over_on_a_locked_step_journal(process, tmp_path / "2.db", rec, 2)
    status = process.status()
    assert status["journal_errors"] == first + second
    assert f"SQLite file {tmp_path / '2.db'}: database is locked" in status["journal_error"]


async def test_a_stop_whose_last_save_fails_on_a_locked_step_journal_stops_and_counts_it(
    tmp_path: Path,
) -> None:
    """The stop writes what is left of the context itself: on a file still locked then, that
    write fails, is counted with the process's journal errors, and the stop ends as stops do
    (it raised the sqlite3 error before)."""
    path = tmp_path / "steps.db"
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))  # no journal
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    writes = JournalWrites("triage", process.redactor, running=lambda: True, path=str(path))
    process.use_steps(StepStore(path, "triage"), writes)
    with locked(path):
        await process.start()
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 1)
        await eventually(lambda: writes.errors >= 1, what="the save failed")
        before = process.status()["journal_errors"]
        await process.stop()
        assert process.state.value == "stopped"
        assert process.status()["journal_errors"] > before
        assert "database is locked" in (process.journal_error or "")
    await writes.close()
