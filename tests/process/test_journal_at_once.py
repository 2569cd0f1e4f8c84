"""A running process's journal writes made at once on the loop when the file is free (see
``_journaling``): a write waited for is committed before it returns without the writer
thread; a write not waited for (``done``) is held and rides with the next write made at once,
or is handed over at the loop's next turn; a row never passes a row of the same process still
on the writer thread.

The file is real; the writer thread is held busy by a write of the test's that waits on an
event (its transaction open), as a slow disk would hold it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from _process_support import eventually
from tether._redact import Redactor
from tether.process._journaling import JournalWrites
from tether.store import Journal
from tether.store._writer import seat


def rows(path: Path) -> dict[str, str]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT event_id, state FROM events ORDER BY rowid").fetchall())
    finally:
        db.close()


def writes_of(path: Path) -> tuple[JournalWrites, Journal]:
    return JournalWrites("p", Redactor(), lambda: True, str(path)), Journal(path, "p")


async def test_a_write_waited_for_is_committed_at_once_without_the_writer_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    writes, journal = writes_of(path)
    await writes.accept("e1", journal.queued, {"event_id": "e1"}, 0)
    assert rows(path) == {"e1": "queued"}
    assert writes._writer.waiting == 0  # nothing was handed to the thread
    await writes.close()
    journal.close()


async def test_a_write_not_waited_for_rides_with_the_next_write_made_at_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    writes, journal = writes_of(path)
    await writes.accept("e1", journal.queued, {"event_id": "e1"}, 0)
    writes.write("e1", journal.done, "e1")
    assert writes.pending == 1  # held: not written yet
    assert rows(path) == {"e1": "queued"}
    await writes.accept("e2", journal.queued, {"event_id": "e2"}, 0)  # no turn of the loop
    assert rows(path) == {"e2": "queued"}
    assert writes.pending == 0
    await writes.close()
    journal.close()


async def test_a_write_held_is_written_at_the_loop_s_next_turn(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    writes, journal = writes_of(path)
    await writes.accept("e1", journal.queued, {"event_id": "e1"}, 0)
    writes.write("e1", journal.done, "e1")
    await asyncio.sleep(0)
    assert rows(path) == {}
    assert writes.pending == 0
    await writes.close()
    journal.close()


async def test_a_row_does_not_pass_a_row_of_its_process_on_the_writer_thread(
    tmp_path: Path,
) -> None:
    """e1's ``queued`` waits on the thread, which is busy outside any transaction (what
    another seat runs as it is given back: the file free meanwhile). e1's ``done``, not
    waited for, could be written at once; landing first, it would leave the row queued: it
    goes behind on the thread."""
    path = tmp_path / "tether.db"
    writes, journal = writes_of(path)
    holder = seat(path, "holder")
    inside, gate = threading.Event(), threading.Event()
    outside, gate_outside = threading.Event(), threading.Event()

    def hold() -> None:  # in a transaction: the file's lock held
        inside.set()
        gate.wait(30)

    def hold_outside() -> None:  # outside any: the lock free
        outside.set()
        gate_outside.wait(30)

    await writes.accept("e0", journal.queued, {"event_id": "e0"}, 0)  # its seat: one thread
    held = holder.submit(hold)
    await eventually(inside.is_set, what="the thread to take the holding write")
    left, _ = holder.leave(hold_outside)
    accepted = asyncio.create_task(writes.accept("e1", journal.queued, {"event_id": "e1"}, 0))
    await asyncio.sleep(0)  # the file is held: submitted, behind hold_outside
    gate.set()
    await held
    await eventually(outside.is_set, what="the thread to run what the holder left")
    writes.write("e1", journal.done, "e1")
    await asyncio.sleep(0)  # the held done is handed over
    gate_outside.set()
    await left
    await accepted
    await eventually(lambda: writes.pending == 0, what="the done write")
    assert rows(path) == {"e0": "queued"}
    assert writes.errors == 0
    await writes.close()
    journal.close()


def test_the_old_name_of_a_writer_seat_still_works_and_says_it_is_deprecated() -> None:
    from tether.process import _journaling

    with pytest.warns(DeprecationWarning, match="JournalWriter is renamed WriterSeat"):
        assert _journaling.JournalWriter is _journaling.WriterSeat
