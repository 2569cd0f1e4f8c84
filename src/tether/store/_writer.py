"""One writer thread per SQLite file: the writes of every process over the file, in the order
they were submitted, those waiting together committed in one transaction (group commit).

A process hands its writes to its file's writer through a ``Seat`` (see ``seat``): the first
seat taken on a file starts its thread, and the last one given back ends it, so a file's
processes share one thread however many they are, and a process that never wrote holds
none.

The thread takes every write waiting in its queue (up to ``BATCH``) and runs them in one
transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``), the file checked once before (see
Lease.check). Each write makes its changes through ``Lease.writing``: one that fails undoes
itself alone and fails its own future. A transaction that cannot begin (the file locked past
the busy timeout, deleted or replaced) or commit (a full disk) fails every write in it. A
write's future (an asyncio future of the loop that submitted it) is settled once its
transaction committed: a write waited for is in the file (WAL, synchronous=NORMAL: it
survives a crash of the host process) when its waiter wakes. The futures a transaction
settles are handed to their loop in one call: the thread wakes the loop once per batch (every
wake of a thread or loop costs a switch of the GIL, and on a busy host a wait for a CPU).

A write that cannot wait is made at once instead, on the loop's thread, when nothing can make
it wait there (``Seat.now``, see ``Lease.write_now``): the thread and back cost more than
the commit. Such writes never checkpoint the WAL (its copy into the file, then a sync); every
``CHECKPOINT_EVERY`` of them the thread is handed a checkpoint, as SQLite would make one every
1,000 pages of WAL. ``Seat.waiting`` counts a seat's writes the thread has not settled: its
process keeps its own writes in order with it.

The thread survives every write: a write whose future was cancelled before it began is
skipped (no error), and the writes still queued of a seat given up (its process's stop
waited long enough, see ``Seat.given_up``) fail at once. What a seat runs as it is given back
(``then``: its process gives its shares of the file back) runs on the thread after the
seat's writes, whatever became of them, outside any transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from ..errors import TetherError
from ._sqlite import JournalFileGone, Lease

__all__ = ["BATCH", "Seat", "seat"]

logger = logging.getLogger("tether.store")

#: The most writes one transaction takes.
BATCH: Final = 256
#: Writes made at once (see Seat.now) between two checkpoints of the WAL the writer thread is
#: handed. Such a write is a few pages of the WAL (its row, its index entries): about SQLite's
#: own 1,000 pages between checkpoints.
CHECKPOINT_EVERY: Final = 300

_Done = asyncio.Future[None]
#: A future, the outcome to settle it with, and the seat whose write it is (None: not one).
_Outcome = tuple[_Done, "BaseException | None", "Seat | None"]


class _Job:
    """A write and its future; ``alone``: run outside any transaction, even once its seat
    is given up (what a seat runs as it is given back)."""

    __slots__ = ("alone", "done", "seat", "write")

    def __init__(self, write: Callable[[], None], seat: Seat, *, alone: bool = False) -> None:
        self.write = write
        self.done: _Done = asyncio.get_running_loop().create_future()
        self.seat = seat
        self.alone = alone


class _Lost(TetherError):
    """A write after which the batch's transaction was gone (SQLite rolls a whole transaction
    back on some errors: a full disk, an I/O error)."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class Seat:
    """One process's place at its file's writer: its writes run in the order submitted.
    Used from the event loop's thread."""

    __slots__ = ("_writer", "given_up", "name", "waiting")

    def __init__(self, writer: _FileWriter, name: str) -> None:
        self._writer = writer
        self.name = name
        #: Set when its process stops waiting for it: its writes still queued fail at once.
        self.given_up = False
        #: Its writes submitted that the thread has not settled yet.
        self.waiting = 0

    def submit(self, write: Callable[[], None]) -> _Done:
        """Queue ``write()``; its future (of the running loop) holds its outcome (an
        exception if it failed) once committed. Cancelling the future before the write
        began skips it."""
        job = _Job(write, self)
        self.waiting += 1
        self._writer.jobs.put(job)
        return job.done

    def now(self, write: Callable[[], None]) -> bool:
        """Run ``write()`` at once on this thread (the loop's), committed when this returns
        True, if that cannot wait (see ``Lease.write_now``); False: nothing was written
        (submit it). The caller keeps its writes in order: a write made at once passes those
        still queued (see ``waiting``).

        The thread and back cost two wakes (each a switch of the GIL, and on a busy host a
        wait for a CPU), more than the commit; the thread still takes every write that would
        wait, and checkpoints the WAL those made at once grow (every CHECKPOINT_EVERY)."""
        writer = self._writer
        if not writer.file.write_now(write):
            return False
        writer.unchecked += 1
        if writer.unchecked >= CHECKPOINT_EVERY:
            writer.unchecked = 0
            writer.jobs.put(_Job(writer.checkpoint, self, alone=True))
        return True

    def leave(self, then: Callable[[], None] | None = None) -> tuple[_Done, _Done | None]:
        """Give the seat back: ``then()`` runs on the thread after the seat's writes. The
        futures of ``then`` and, when this was the file's last seat, of the thread's end
        (set as its last step: ``join`` then returns at once)."""
        job = _Job(then or _nothing, self, alone=True)
        writer = self._writer
        writer.jobs.put(job)
        with _lock:
            writer.seats -= 1
            last = writer.seats == 0
            if last:  # no seat is taken on it any more: the next one starts a thread anew
                if _writers.get(writer.key) is writer:
                    del _writers[writer.key]
                writer.ended = asyncio.get_running_loop().create_future()
                writer.jobs.put(None)
        return job.done, writer.ended if last else None

    def join(self, timeout: float) -> None:
        """Wait for the writer's thread to end, ``timeout`` seconds at most."""
        self._writer.thread.join(timeout)


_writers: dict[str, _FileWriter] = {}
_lock = threading.Lock()


def seat(path: str | Path, name: str) -> Seat:
    """A seat at the writer of the file ``path`` (started if it has none) for the process
    ``name``. Raises the ``sqlite3`` error of a file that cannot be opened."""
    key = str(Path(path).resolve())
    with _lock:
        writer = _writers.get(key)
        if writer is None:
            writer = _writers[key] = _FileWriter(key, str(path))
        writer.seats += 1
    return Seat(writer, name)


def _nothing() -> None:
    return None


class _FileWriter:
    """The thread writing one file, and the queue of its writes (None: the end)."""

    def __init__(self, key: str, shown: str) -> None:
        self.key = key
        self._shown = shown  # the path as the first process over it names it, for errors
        self.file = Lease(key)  # the writer's share: the connection outlives every seat
        self.seats = 0
        self.unchecked = 0  # writes made at once since the last checkpoint (see Seat.now)
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.ended: _Done | None = None
        self.thread = threading.Thread(
            target=self._run, name=f"tether-journal-{Path(key).name}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        try:
            while self._take_turn():
                pass
        finally:
            self.file.release()
            if self.ended is not None:
                ended: list[_Outcome] = [(self.ended, None, None)]
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self.ended.get_loop().call_soon_threadsafe(_settle, ended)

    def _take_turn(self) -> bool:
        """Run the writes waiting now (at least one); False once the queue has ended."""
        # The writes queued while the thread waited for the GIL (the loop's whole turn: it
        # holds the GIL until it waits) are all here by now: they share the transaction.
        jobs = [self.jobs.get()]
        while jobs[-1] is not None and len(jobs) < BATCH:
            try:
                jobs.append(self.jobs.get_nowait())
            except queue.Empty:
                break
        batch: list[_Job] = []
        for job in jobs:  # None, the queue's end, comes last of all
            if job is None or job.alone:
                self._commit(batch)
                batch = []
            if job is None:
                return False
            if job.alone:
                self._alone(job)
            elif self._begins(job):
                batch.append(job)
        self._commit(batch)
        return True

    def checkpoint(self) -> None:
        """Copy the WAL into the file (PASSIVE: what no reader needs still), as SQLite does
        after a commit of the shared connection past 1,000 pages of WAL."""
        with self.file.write_lock:
            self.file.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _alone(self, job: _Job) -> None:
        outcome = _outcome(job.write)  # run even if its waiter gave it up
        if outcome is not None:
            logger.error(
                "journal writer of %s: %s of process %s failed",
                self._shown,
                "a checkpoint" if job.write == self.checkpoint else "what runs at its end",
                job.seat.name,
                exc_info=outcome,
            )
        _post([job], [None])  # it ran (its failure logged above)

    def _begins(self, job: _Job) -> bool:
        if job.done.cancelled():
            _post([job], [None])  # its waiter gave it up before it began: skipped, no error
            return False
        if job.seat.given_up:
            error = sqlite3.OperationalError(
                f"SQLite file {self._shown}: given up at the process's stop (the file was "
                f"still busy)"
            )
            _post([job], [error])
            return False
        return True

    def _commit(self, jobs: list[_Job]) -> None:
        while jobs:
            jobs = self._transaction(jobs)

    def _transaction(self, jobs: list[_Job]) -> list[_Job]:
        """Run ``jobs`` in one transaction and settle them; hand back those not run because
        a write lost the transaction (they run in another)."""
        outcomes: list[BaseException | None] = []
        try:
            with self.file.writing(self._shown) as db:
                for job in jobs:
                    outcomes.append(_outcome(job.write))
                    if not db.in_transaction:
                        raise _Lost(outcomes[-1])
        except _Lost as lost:
            error = lost.error or sqlite3.OperationalError(
                f"SQLite file {self._shown}: the transaction was rolled back"
            )
            ran = len(outcomes)
            _post(jobs[:ran], [outcome or error for outcome in outcomes])
            return jobs[ran:]
        except sqlite3.Error as exc:  # no BEGIN (a locked or gone file) or no COMMIT
            error = exc if isinstance(exc, JournalFileGone) else _naming(exc, self._shown)
            outcomes += [None] * (len(jobs) - len(outcomes))  # not run: nothing landed
            _post(jobs, [outcome or error for outcome in outcomes])
            return []
        _post(jobs, outcomes)
        return []


def _naming(exc: sqlite3.Error, shown: str) -> sqlite3.Error:
    return type(exc)(f"SQLite file {shown}: {exc}")


def _outcome(write: Callable[[], None]) -> BaseException | None:
    try:
        write()
    except BaseException as exc:
        return exc
    return None


def _post(jobs: list[_Job], outcomes: list[BaseException | None]) -> None:
    """Hand each job's outcome to its future's loop, one call per loop (the writer's
    thread)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Outcome]] = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        seat = None if job.alone else job.seat  # (what a seat submitted: see Seat.waiting)
        by_loop.setdefault(job.done.get_loop(), []).append((job.done, outcome, seat))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(_settle, settled)


def _settle(outcomes: list[_Outcome]) -> None:
    """Settle each future (on its loop's thread); one its waiter cancelled stays so. A seat's
    write settled no longer waits on the thread."""
    for done, outcome, seat in outcomes:
        if seat is not None:
            seat.waiting -= 1
        if done.done():
            continue
        if outcome is None:
            done.set_result(None)
        else:
            done.set_exception(outcome)
