"""A journal that cannot wedge: a locked file, a cancelled inject and a stop during a locked
write each end within their documented bound, and the writer thread survives them all.

The lock is real: another connection holds the file with ``BEGIN EXCLUSIVE``, as a write
stuck on a stalled disk would. (It is this process's: a journal file is one runtime's while
it runs, so no other program can lock it.) The busy timeout is raised to 60 s, so a write on
the locked file waits longer than any bound here: only the bounds can end the waits.
JOURNAL_ACCEPT and JOURNAL_DRAIN are cut to fractions of a second to keep the tests short;
each test checks a bound with a wide margin ("< 5 s" where the write alone would wait 60 s),
never a timing.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.process import _journaling, _teardown
from tether.store import _sqlite

ACCEPT = 0.3
DRAIN = 0.5


@pytest.fixture(autouse=True)
def short_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes on a locked file wait 60 s (each test has a file of its own, so its connection
    is opened with this timeout); inject and a stop give up after fractions of a second."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 60.0)
    monkeypatch.setattr(_journaling, "JOURNAL_ACCEPT", ACCEPT)
    monkeypatch.setattr(_teardown, "JOURNAL_DRAIN", DRAIN)


@asynccontextmanager
async def locked_by_another_program(path: Path) -> AsyncIterator[None]:
    """Another connection holding ``path`` with BEGIN EXCLUSIVE, on a thread of its own,
    until the block ends."""
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        db = sqlite3.connect(
            f"{path.resolve().as_uri()}?vfs=unix-excl", uri=True, isolation_level=None
        )
        try:
            db.execute("BEGIN EXCLUSIVE")
            held.set()
            done.wait()
            db.execute("ROLLBACK")
        finally:
            db.close()

    locker = threading.Thread(target=hold, name="test-locker")
    locker.start()
    try:
        assert await asyncio.to_thread(held.wait, 30)
        yield
    finally:
        done.set()
        await asyncio.to_thread(locker.join, 30)


def journaled(path: Path) -> AgentProcess:
    return AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=str(path)))


def journal_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("tether-journal-")]


def rows(path: Path) -> list[str]:
    """The journal's event ids, read by a connection of its own (as another program would)."""
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT event_id FROM events ORDER BY rowid")]
    finally:
        db.close()


async def runs_an_event(process: AgentProcess, rec: Recorder) -> None:
    """The process (its writer thread with it) still takes an event and runs it."""
    before = len(rec.of(HookEvent.TASK_COMPLETED))
    await process.inject(ticket("After"))
    await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == before + 1, what="a run")


async def test_inject_on_a_journal_another_program_holds_locked_fails_after_its_bound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        refused = ticket("Refused")
        async with locked_by_another_program(path):
            began = time.monotonic()
            with pytest.raises(sqlite3.OperationalError) as raised:
                await process.inject(refused)
            assert time.monotonic() - began < 5  # the write alone would wait 60 s
            assert str(raised.value) == (
                f"SQLite file {path}: the journal did not take the write of "
                f"{refused.event_id} within {ACCEPT:g} s (the file is held "
                f"locked, or the disk does not answer); it was given up"
            )
            status = process.status()
            assert (status["queue_size"], status["in_flight"], status["dead_letter_count"]) == (
                0,
                0,
                0,
            )
        # Given up before it took the file's lock, the write never lands once the lock goes.
        await runs_an_event(process, rec)
        assert refused.event_id not in rows(path)
        assert [d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)] != [refused.event_id]
    finally:
        await process.stop()


async def test_a_cancelled_inject_leaves_the_writer_thread_running_and_its_event_unjournaled(
    tmp_path: Path,
) -> None:
    """Regression: the writer thread set the result of the future the cancelled inject had
    cancelled; InvalidStateError ended the thread and every later inject hung."""
    path = tmp_path / "tether.db"
    process = journaled(path)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        cancelled = ticket("Cancelled")
        async with locked_by_another_program(path):
            injecting = asyncio.ensure_future(process.inject(cancelled))
            await asyncio.sleep(0.05)  # its write waits on the lock now
            injecting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await injecting
        await runs_an_event(process, rec)
        [thread] = journal_threads()
        assert thread.is_alive()
        assert cancelled.event_id not in rows(path)
        assert process.status()["queue_size"] == 0
        began = time.monotonic()
    finally:
        await process.stop()
    assert time.monotonic() - began < 5
    assert journal_threads() == []


async def test_a_stop_during_a_write_on_a_locked_journal_returns_within_its_drain(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: the stop waited for the write under way (then for the thread) without
    bound: 31 s and counting with a file held locked."""
    path = tmp_path / "tether.db"
    process = journaled(path)
    caplog.set_level(logging.ERROR, "tether.process")
    await process.start()
    async with locked_by_another_program(path):
        injecting = asyncio.ensure_future(process.inject(ticket("Waits")))
        await asyncio.sleep(0.05)  # its write waits on the lock now
        began = time.monotonic()
        await process.stop()
        assert time.monotonic() - began < 5  # the write alone would wait 60 s
        assert process.status()["state"] == "stopped"
        with pytest.raises(sqlite3.OperationalError):
            await injecting  # its own bound passed meanwhile
        assert journal_threads()  # still inside the write: left to end on its own
        assert any("still inside a write" in r.getMessage() for r in caplog.records)
    # Once the lock goes, the write returns and the thread ends, giving the file back.
    await eventually(lambda: not journal_threads(), what="the writer thread to end")
    assert str(path.resolve()) not in _sqlite._connections


async def test_a_stop_with_writes_queued_behind_a_locked_one_gives_them_up_within_its_drain(
    tmp_path: Path,
) -> None:
    """The events a stop dead-letters queue their writes behind one waiting on the lock: the
    stop still returns within its drain, those writes given up (their rows stay queued: run
    again after a restart, at-least-once)."""
    path = tmp_path / "tether.db"
    process = AgentProcess(
        "triage",
        ProcessConfig(model=ScriptedModel(latency=3600), journal_path=str(path), stop_timeout=0.1),
    )
    await process.start()
    first = ticket("Runs until the stop")
    later = [ticket(f"Queued {i}") for i in range(3)]
    for event in (first, *later):
        await process.inject(event)
    async with locked_by_another_program(path):
        began = time.monotonic()
        await process.stop()
        assert time.monotonic() - began < 5
        assert {d["event_id"] for d in process.dead_letters} == {
            e.event_id for e in (first, *later)
        }
    await eventually(lambda: not journal_threads(), what="the writer thread to end")
    assert rows(path) == [e.event_id for e in (first, *later)]


async def test_a_run_whose_running_write_waits_past_its_bound_runs_and_is_reported(
    tmp_path: Path,
) -> None:
    """A worker waits for its event's running write within JOURNAL_ACCEPT, then runs the
    event anyway: the write is counted as failed, the event is not held up."""
    path = tmp_path / "tether.db"
    process = journaled(path)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    event = ticket()
    await process.inject(event)  # journaled at once: not running yet
    async with locked_by_another_program(path):
        await process.start()
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
        assert [d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ["success"]
        status = process.status()
        assert status["journal_errors"] >= 1
        assert "did not take the write of" in status["journal_error"]
        began = time.monotonic()
        await process.stop()
        assert time.monotonic() - began < 5
    await eventually(lambda: not journal_threads(), what="the writer thread to end")
    assert rows(path) == [event.event_id]  # its done was given up: run again after a restart


async def test_the_writer_thread_survives_a_failing_write_and_skips_a_cancelled_one(
    tmp_path: Path,
) -> None:
    writer = _journaling.WriterSeat("survivor", str(tmp_path / "tether.db"))
    gate = threading.Event()
    ran: list[str] = []

    def failing() -> None:
        raise RuntimeError("not a sqlite error")

    try:
        entered = threading.Event()

        def hold() -> None:  # holds the thread while the next ones queue
            entered.set()
            gate.wait(30)

        held = writer.submit(hold)
        await eventually(entered.is_set, what="the thread to take it")
        failed = writer.submit(failing)
        skipped = writer.submit(lambda: ran.append("skipped"))
        assert skipped.cancel()  # its waiter gave it up before it began
        landed = writer.submit(lambda: ran.append("landed"))
        gate.set()
        assert await asyncio.wait_for(landed, 10) is None
        assert await asyncio.wait_for(held, 10) is None
        with pytest.raises(RuntimeError, match="not a sqlite error"):
            await asyncio.wait_for(failed, 10)
        assert ran == ["landed"]
        assert [t.is_alive() for t in journal_threads()] == [True]
    finally:
        gate.set()
        await writer.close()
    assert journal_threads() == []


@pytest.mark.parametrize("what", ["deleted", "replaced"])
async def test_a_journal_file_deleted_or_replaced_while_running_is_shown_and_refuses_events(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, what: str
) -> None:
    """Regression: injects went on into the unlinked file, accepted and lost to any restart."""
    path = tmp_path / "tether.db"
    process = journaled(path)
    caplog.set_level(logging.ERROR, "tether.process")
    await process.start()
    try:
        await process.inject(ticket("Before"))
        assert process.status()["journal_file"] is None
        if what == "deleted":
            path.unlink()
        else:
            other = tmp_path / "other.db"
            sqlite3.connect(other).close()
            other.replace(path)
        assert process.status()["journal_file"] == what
        refused = ticket("Refused")
        with pytest.raises(sqlite3.OperationalError, match=f"{what} while open"):
            await process.inject(refused)
        assert str(path) in caplog.text
        assert [r.levelname for r in caplog.records if "while open" in r.getMessage()] == ["ERROR"]
        assert process.status()["queue_size"] == 0
    finally:
        await process.stop()


SHM_TRUNCATER = """
import asyncio, sys
from pathlib import Path

from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel


async def main() -> None:
    path = Path(sys.argv[1])
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=str(path)))
    await process.start()
    for i in range(20):
        await process.inject(TriggerEvent("t", "manual", {"ticket": f"before {i}"}))
        # What another program (a cleanup script, a backup tool) may do to a WAL file's
        # shared-memory index: truncate it under the runtime.
        Path(f"{path}-shm").write_bytes(b"")
    for i in range(20):
        await process.outcome(
            await process.inject(TriggerEvent("t", "manual", {"ticket": f"after {i}"})), timeout=30
        )
    await process.stop()
    print("alive", process.status()["invocation_count"], flush=True)


asyncio.run(main())
"""


async def test_a_truncated_wal_index_does_not_kill_the_runtime(tmp_path: Path) -> None:
    """Regression: a ``-shm`` file truncated (or left unwritable) under SQLite's memory map
    killed the whole runtime with SIGBUS. The WAL index now lives in the runtime's memory."""
    path = tmp_path / "tether.db"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SHM_TRUNCATER, str(path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == 0, child.returncode  # -7 (SIGBUS) before
    assert out.decode().split() == ["alive", "40"]
