"""A write made at once (``Lease.write_now``, ``Seat.now``): committed on the calling thread
when nothing can make it wait, else nothing written and False (the caller hands it to the
writer thread); never a wait for another connection's lock; the WAL it grows checkpointed by
the writer thread.

The file is real; "another connection" is a second SQLite connection holding it with
``BEGIN EXCLUSIVE``, as another program's would."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from _process_support import locked
from tether.store import Journal, _sqlite, _writer
from tether.store._sqlite import Lease
from tether.store._writer import seat


def rows(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT event_id FROM events ORDER BY rowid")]
    finally:
        db.close()


def test_a_write_made_at_once_is_in_the_file_when_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    file = Lease(path)
    assert file.write_now(lambda: journal.queued({"event_id": "e1"}))
    assert rows(path) == ["e1"]  # read by another connection: committed
    journal.close()
    file.release()


def test_writes_made_together_at_once_share_one_transaction_and_fail_together(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    file = Lease(path)

    def both_then_broken() -> None:
        journal.queued({"event_id": "e1"})
        journal.queued({"event_id": "e2"})
        with file.writing() as db:  # a NOT NULL broken: the whole transaction goes
            db.execute("INSERT INTO events (process, event_id) VALUES ('p', 'bad')")

    assert not file.write_now(both_then_broken)
    assert rows(path) == []
    assert not file.db.in_transaction  # the shared connection is left outside any
    assert file.write_now(lambda: (journal.queued({"event_id": "e1"}), journal.done("e1")))
    assert rows(path) == []
    journal.close()
    file.release()


def test_a_file_another_connection_holds_locked_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared connection's busy timeout is an hour here: a write at once that waited for
    the lock would hang the test (its timeout ends it), not return False."""
    monkeypatch.setattr(_sqlite, "BUSY_TIMEOUT", 3600.0)
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    file = Lease(path)
    with locked(path):
        assert not file.write_now(lambda: journal.queued({"event_id": "e1"}))
    assert rows(path) == []
    assert file.write_now(lambda: journal.queued({"event_id": "e1"}))
    assert rows(path) == ["e1"]
    journal.close()
    file.release()


def test_a_file_another_thread_is_writing_is_not_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    file = Lease(path)
    inside, leave = threading.Event(), threading.Event()

    def writer_thread() -> None:
        with file.writing():
            inside.set()
            leave.wait(30)

    other = threading.Thread(target=writer_thread)
    other.start()
    try:
        assert inside.wait(30)
        assert not file.write_now(lambda: journal.queued({"event_id": "e1"}))
    finally:
        leave.set()
        other.join(30)
    assert rows(path) == []
    journal.close()
    file.release()


def test_a_file_deleted_while_open_is_not_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    file = Lease(path)
    file.db  # noqa: B018 - open: the file is known by what it was when opened
    path.unlink()
    assert not file.write_now(lambda: journal.queued({"event_id": "e1"}))
    journal.close()
    file.release()


async def test_writes_made_at_once_reach_the_database_file_through_the_thread_s_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write at once never checkpoints the WAL (a sync, on the loop); every
    CHECKPOINT_EVERY of them the writer thread is handed one, and the rows reach the database
    file itself (read here with the WAL set aside: a copy of the file alone)."""
    monkeypatch.setattr(_writer, "CHECKPOINT_EVERY", 5)
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    place = seat(path, "p")

    def in_the_file_alone() -> list[str]:
        alone = tmp_path / "alone.db"
        alone.write_bytes(path.read_bytes())  # without its -wal
        try:
            return rows(alone)
        except sqlite3.OperationalError:  # not even the table (made in the WAL) is there
            return []

    for n in range(4):
        assert place.now(lambda n=n: journal.queued({"event_id": f"e{n}"}))
    await place.submit(lambda: None)  # the thread has nothing of them to do
    assert in_the_file_alone() == []
    assert place.now(lambda: journal.queued({"event_id": "e4"}))
    await place.submit(lambda: None)  # after the checkpoint it was handed
    assert in_the_file_alone() == [f"e{n}" for n in range(5)]
    await asyncio.gather(*(done for done in place.leave() if done is not None))
    journal.close()
