"""A file's writer thread commits the writes waiting together in one transaction (group
commit): each write undone alone when it fails, each future settled once its transaction
committed, the seats of several processes sharing the one thread.

The statements are read from the file's real SQLite connection (its trace callback)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.store import Journal, _sqlite
from tether.store._sqlite import Lease
from tether.store._writer import Seat, seat


@pytest.fixture
def statements(tmp_path: Path) -> Iterator[list[str]]:
    """Every statement run on the shared connection of ``tmp_path / "tether.db"``."""
    seen: list[str] = []
    db = _sqlite.connect(tmp_path / "tether.db")
    db.set_trace_callback(seen.append)
    yield seen
    db.set_trace_callback(None)


def rows(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[0] for r in db.execute("SELECT event_id FROM events ORDER BY rowid")]
    finally:
        db.close()


async def give_back(place: Seat) -> None:
    await asyncio.gather(*(done for done in place.leave() if done is not None))


async def held_by(gate: threading.Event, path: Path) -> asyncio.Future[None]:
    """A write holding the writer's thread (inside its transaction) until ``gate`` is set."""
    holding = seat(path, "holder")
    entered = threading.Event()

    def hold() -> None:
        entered.set()
        gate.wait(30)

    held = holding.submit(hold)
    holding.leave()
    for _ in range(3000):  # until the thread is inside it
        if entered.is_set():
            return held
        await asyncio.sleep(0.01)
    raise AssertionError("the writer thread never took the first write")


async def test_writes_of_several_processes_waiting_together_are_committed_at_once(
    tmp_path: Path, statements: list[str]
) -> None:
    path = tmp_path / "tether.db"
    journals = [Journal(path, f"p{i}") for i in range(4)]
    seats = [seat(path, journal.process) for journal in journals]
    gate = threading.Event()
    held = await held_by(gate, path)
    statements.clear()
    written = [
        place.submit(lambda j=journal, n=n: j.queued({"event_id": f"{j.process}-{n}"}))
        for n in range(3)
        for place, journal in zip(seats, journals, strict=True)
    ]
    gate.set()
    await held
    await asyncio.gather(*written)
    assert [s.split()[0] for s in statements] == ["COMMIT", "BEGIN", *["INSERT"] * 12, "COMMIT"]
    assert len(rows(path)) == 12
    for place in seats:
        await give_back(place)


async def test_a_failing_write_is_undone_alone_and_the_others_of_its_transaction_land(
    tmp_path: Path, statements: list[str]
) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    place = seat(path, "p")
    file = Lease(path)

    def half_written() -> None:  # its second row breaks a NOT NULL: the first must go too
        with file.writing(many=True) as db:
            db.executemany(
                "INSERT INTO events (process, event_id, event, state, updated_at) "
                "VALUES ('p', ?, '{}', 'queued', ?)",
                [("half-1", 1.0), ("half-2", None)],
            )

    gate = threading.Event()
    held = await held_by(gate, path)
    before = place.submit(lambda: journal.queued({"event_id": "before"}))
    failing = place.submit(half_written)
    after = place.submit(lambda: journal.queued({"event_id": "after"}))
    gate.set()
    await held
    await before
    with pytest.raises(sqlite3.IntegrityError):
        await failing
    await after
    assert rows(path) == ["before", "after"]
    assert statements.count("BEGIN IMMEDIATE") == statements.count("COMMIT") == 2
    await give_back(place)
    file.release()


async def test_a_write_waited_for_is_in_the_file_when_its_future_settles(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "p")
    place = seat(path, "p")
    for n in range(20):
        await place.submit(lambda n=n: journal.queued({"event_id": f"e{n}"}))
        assert rows(path)[-1] == f"e{n}"  # read by another connection: committed
    await give_back(place)
