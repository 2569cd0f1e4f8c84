"""Journal writes of an accepted event's progress: never a wait for the file on the event loop,
bounded, and a failed one never stops the process.

While a process runs (``start()`` to the end of its teardown), a journal write is made at once
on the loop when nothing can make it wait there (see ``store._writer.Seat.now``): the file's
lock free, no other connection holding the file, the file still the one opened; its own
connection never waits for a lock (busy timeout 0) and never checkpoints the WAL (the sync is
the writer thread's); one that fails is rolled back whole and handed to the thread, which runs
it again and reports what fails. A commit then costs SQLite's own work (the WAL
pages written into the OS, no sync), not a hand-over to a thread and back (two wakes, each a
switch of the GIL and on a busy host a wait for a CPU: more than the commit). Otherwise the
write goes to the file's writer thread (one per file, shared by every process over it: see
``store._writer``), in order, those waiting together committed in one transaction: a file
another program holds locked makes that thread wait (up to the journal's busy timeout), never
the event loop, so one locked journal cannot stall every process on the loop.

Order: a row of the event journal made at once never passes a row of the same process still on
the writer thread, and any other write (a run's steps waited for) passes nothing of the process
there (see ``JournalWrites._now``). A write not waited for that is a row of the event journal
(``done``, a retry's ``queued``, a dead letter) is held until the next write made at once
carries it in its transaction (an event's ``done`` rides with the next event's ``running``) or
the loop's next turn writes it; the saved context, a run's steps not waited for and the hook
history (batches of rows, JSON to make) go to the writer thread. A write made while the process
is not running (an event dead-lettered by a stopped process, say) runs at once, as before. A
process takes its seat at the writer with its first write, so one that never received an event
holds none.

``inject`` journals an event ``queued`` before it queues it, and waits for that write (at once,
or off the loop) to be committed, ``JOURNAL_ACCEPT`` seconds at most: when it raises, or does
not land in time (the file locked, a stalled disk), the event is refused (the caller gets the
``sqlite3`` error), and nothing of it is left queued. A write given up on that has not taken the
file's lock yet never lands (see ``_Waiter``). Every later write of the event's progress
(``done``, a retry's ``queued``, ``dead``, an amended or redelivered dead letter) goes through
``JournalWrites.write`` and is not waited for (``running``, which counts the attempt, is waited
for by its worker, the same way, within the same bound): when it fails (the file locked past its
busy timeout, a full disk, the file deleted or replaced) a warning is logged, redacted, it is
counted in ``status()`` (``journal_errors``, and the last error as ``journal_error``), and the
process goes on with its events.

The writer thread survives every write: one that fails settles its own future only, and one
whose waiter gave up before it began is skipped (that is no error). A stop waits for the
process's writes still queued ``JOURNAL_DRAIN`` seconds at most, whatever the file does; a
thread still inside a write then (a stalled disk) fails the process's writes left once it
returns, and gives the process's shares of the file back.

Delivery stays at-least-once: a row whose write failed (or was still held or waiting when a
crash came, or was given up at a stop, see ``JOURNAL_DRAIN``) still holds the event as queued or
running, so the next process over the file (see ``_recovery``) runs it again; none is lost.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, ParamSpec

from ._supervise import describe

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..store import Seat

__all__ = ["JOURNAL_ACCEPT", "JOURNAL_DRAIN", "JournalWrites", "WriterSeat"]

logger = logging.getLogger("tether.process")

_P = ParamSpec("_P")

#: Seconds a stop waits for its process's writes still queued for the writer thread; those
#: left then are given up (their rows still say queued or running: run again after a restart).
JOURNAL_DRAIN: Final = 10.0
#: Seconds ``inject()`` waits for its event's ``queued`` write (and a run for its
#: ``running`` write) before it gives up: the event is refused, the caller gets
#: ``sqlite3.OperationalError``. Twice the busy timeout: a write behind another on a locked
#: file still gets its own wait.
JOURNAL_ACCEPT: Final = 10.0


def _nothing() -> None:
    return None


def _is_row(write: Callable[..., None]) -> bool:
    """Whether ``write`` is one of the event journal's (a row or a few of ``events``)."""
    return isinstance(getattr(write, "__self__", None), _journal_class())


@functools.cache
def _journal_class() -> type:
    from ..store import Journal  # imported with the first write, not with tether

    return Journal


class _Waiter:
    """The loop's side of a write it waits for (see ``JournalWrites.accept``).

    The writer's thread asks ``proceed`` once it holds the file's lock (the wait for another
    program's lock comes before): the write lands only if the waiter has not given up by
    then. A waiter that gives up while the write is past that point (a stalled disk) cannot
    stop it: ``late`` says so, and the thread logs it if it lands.
    """

    __slots__ = ("_lock", "_state", "late")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "waiting"  # then "writing" (the thread's) or "abandoned" (the waiter's)
        self.late = False

    def proceed(self) -> bool:
        with self._lock:
            if self._state == "abandoned":
                return False
            self._state = "writing"
            return True

    def give_up(self) -> None:
        with self._lock:
            if self._state == "writing":
                self.late = True
            else:
                self._state = "abandoned"


class WriterSeat:
    """A process's seat at its journal file's writer thread (one for every process over the
    file: see ``store._writer``): its writes run in the order submitted.

    Taken by the first ``submit`` (or ``now``); ``close`` lets the writes submitted finish
    (within a deadline) and gives the seat back, the last seat given back ending the thread.
    """

    def __init__(self, name: str, path: str | None) -> None:
        self.name = name
        self.path = path
        self._seat: Seat | None = None

    @property
    def running(self) -> bool:
        """Whether this process holds a seat at its file's writer."""
        return self._seat is not None

    @property
    def waiting(self) -> int:
        """This process's writes submitted that the thread has not settled yet."""
        return 0 if self._seat is None else self._seat.waiting

    def submit(self, write: Callable[[], None]) -> asyncio.Future[None]:
        """Queue ``write()``; its future holds its outcome (an exception if it failed), once
        committed. Cancelling the future before the write began skips it. Raises the
        ``sqlite3`` error of a file the writer cannot open."""
        return self._taken().submit(write)

    def now(self, write: Callable[[], None]) -> bool:
        """Run ``write()`` at once if that cannot wait: True once committed; False, nothing
        written, and it is to be submitted (see ``store._writer.Seat.now``; the caller keeps
        the order). Raises the ``sqlite3`` error of a file the writer cannot open."""
        return self._taken().now(write)

    def _taken(self) -> Seat:
        if self._seat is None:
            from ..store import seat

            assert self.path is not None, "a process without a journal writes nothing"
            self._seat = seat(self.path, self.name)
        return self._seat

    async def close(
        self, within: float = JOURNAL_DRAIN, then: Callable[[], None] | None = None
    ) -> bool:
        """Finish the submitted writes and give the seat back, returning within ``within``
        seconds whatever the file does; True if everything was done in time.

        ``then`` (giving the files back) runs on the writer's thread after this process's
        writes: past the deadline, those still queued fail at once (given up) and the thread,
        still inside a write (a locked file: until its busy timeout; a stalled disk: until the
        disk answers), runs ``then`` when that write returns.
        """
        place, self._seat = self._seat, None
        if place is None:
            if then is not None:
                then()
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        drained = place.submit(lambda: None)
        finished, _ = await asyncio.wait({drained}, timeout=within)
        if finished:
            drained.exception()  # failed with its batch (a gone file, say) is drained all the same
            left, ended = place.leave(then)
            waits = {done for done in (left, ended) if done is not None}
            _, pending = await asyncio.wait(waits, timeout=max(0.0, deadline - loop.time()))
            if not pending:
                if ended is not None:  # the file's last seat: its thread ended, or all but
                    place.join(max(0.0, deadline - loop.time()))
                return True
        else:
            drained.cancel()  # skipped by the thread if it has not begun
            place.given_up = True  # before leaving: what is still queued fails at once
            place.leave(then)
        logger.error(
            "process %s: its journal writer was still inside a write when the wait for it "
            "ended (%g s at most); the writes left are given up (run again after a "
            "restart) and its files are given back when that write returns",
            self.name,
            within,
        )
        return False


class JournalWrites:
    """The journal writes of one process's events: off the loop while it runs, bounded, and
    counted, not raised, when they fail (see the module docstring).

    ``running`` says whether the process runs now: only then do writes go to the writer
    thread (a write made by a stopped process runs at once). ``path`` names the file in
    errors.
    """

    def __init__(
        self, name: str, redactor: Redactor, running: Callable[[], bool], path: str | None = None
    ) -> None:
        self.name = name
        self.redactor = redactor
        self.path = path
        self._running = running
        #: Writes that failed since the process was created, and the last one's error.
        self.errors = 0
        self.error: str | None = None
        self._tally: JournalWrites | None = None  # counts these failures too (see count_in)
        self._writer = WriterSeat(name, path)
        self._pending = 0  # on the loop's thread only
        #: Writes not waited for, held until the next write made at once carries them (in
        #: its transaction, ahead of it) or the loop's next turn hands them over: (about,
        #: name, write) each, in order.
        self._held: list[tuple[str, str, Callable[[], None]]] = []
        self._rows_on_thread = 0  # rows of the event journal submitted, not settled yet
        self._gone_told = False

    @property
    def pending(self) -> int:
        """Writes held, or handed to the writer thread, whose outcome is not recorded yet."""
        return self._pending + len(self._held)

    def _inline(self) -> bool:
        """Whether a write runs at once: the process is not running, and its writer thread
        is not finishing earlier writes (they stay in order)."""
        return not self._running() and not self._writer.running and not self._held

    def write(
        self, about: str, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs
    ) -> None:
        """``write(*args)``, a journal write of the progress of ``about`` (an event id, or what
        the write is of), not waited for: while the process runs, held until the next write
        made at once or the loop's next turn (see ``_hand_over``); its ``sqlite3`` error is
        logged and counted, not raised (see the module docstring)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self._inline():
            try:
                write(*args, **kwargs)
            except sqlite3.Error as exc:
                self.failed(about, write.__name__, exc)
            return
        held = (about, write.__name__, functools.partial(write, *args, **kwargs))
        if not _is_row(write):
            # The saved context, a run's steps: a batch of rows, JSON to make; the thread's.
            self._submit_held()  # (the writes held go first: they stay in order)
            self._submit(*held, row=False)
            return
        # A row of the event journal (``done``, a retry's ``queued``, a dead letter): cheap
        # enough to ride with the next write made at once.
        self._held.append(held)
        if len(self._held) == 1:
            loop.call_soon(self._hand_over)

    def _hand_over(self) -> None:
        """Write what is held: at once if that can be, else on the writer thread."""
        if not self._held:
            return
        try:
            if self._now(_nothing, row=True):
                return
        except sqlite3.Error:
            pass  # the writer cannot open the file: each write held fails below, counted
        self._submit_held()

    def _now(self, write: Callable[[], None], *, row: bool) -> bool:
        """The writes held and then ``write``, at once, in one transaction (see
        WriterSeat.now), if that keeps them in order: a ``row`` of the event journal (as the
        writes held are) passes no row of this process still on the writer thread; any other
        write passes nothing of it there. True once committed, False when nothing was
        written (then submit them)."""
        if self._rows_on_thread if row else self._writer.waiting:
            return False
        held = self._held
        if not held:
            return self._writer.now(write)

        def together() -> None:
            for _, _, each in held:
                each()
            write()

        if not self._writer.now(together):
            return False
        self._held = []
        return True

    def _submit_held(self) -> None:
        """Hand the writes held to the writer thread, in order; each failure is counted."""
        held, self._held = self._held, []
        for each in held:
            self._submit(*each, row=True)

    def _submit(self, about: str, name: str, write: Callable[[], None], *, row: bool) -> None:
        """Hand ``write`` to the writer thread; its failure is counted."""
        try:
            done = self._thread(write, row=row)
        except sqlite3.Error as exc:  # the writer could not open the file
            self.failed(about, name, exc)
            return
        self._pending += 1
        done.add_done_callback(functools.partial(self._settled, about, name))

    def _thread(self, write: Callable[[], None], *, row: bool) -> asyncio.Future[None]:
        """``write`` submitted to the writer thread; a ``row`` counted until it settles."""
        done = self._writer.submit(write)
        if row:
            self._rows_on_thread += 1
            done.add_done_callback(self._row_settled)
        return done

    def _row_settled(self, _: asyncio.Future[None]) -> None:
        self._rows_on_thread -= 1

    def _settled(self, about: str, name: str, done: asyncio.Future[None]) -> None:
        self._pending -= 1
        if not done.cancelled() and (exc := done.exception()) is not None:
            self.failed(about, name, exc)

    def history_offload(self, write: Callable[[], None]) -> asyncio.Future[None] | None:
        """Run a hook-run history write (same file: a batch of runs, JSON to make) on the
        writer thread while the process runs, in order with its journal writes; None when it
        does not run (the caller writes it at once)."""
        if self._inline():
            return None
        try:
            self._submit_held()  # (the writes held go first: they stay in order)
            return self._writer.submit(write)
        except sqlite3.Error:
            return None  # written at once: it fails there, and is kept for a later flush

    async def accept(
        self, about: str, write: Callable[..., None], *args: Any, **kwargs: Any
    ) -> None:
        """``write(*args, proceed=...)`` (``Journal.queued`` or ``running``) waited for: at
        once when that can be (see ``_now``), else on the writer thread, ``JOURNAL_ACCEPT``
        seconds at most; raises its error, or ``sqlite3.OperationalError`` past the bound. A
        caller cancelled or past the bound gives the write up: unless it had taken the file's
        lock already, it never lands."""
        if self._inline():
            write(*args, **kwargs)  # not running: nothing else waits on this loop for it
            return
        row = _is_row(write)
        if self._now(functools.partial(write, *args, **kwargs), row=row):
            return  # committed at once, with the writes held
        self._submit_held()
        waiter = _Waiter()
        done = self._thread(
            functools.partial(write, *args, proceed=waiter.proceed, **kwargs), row=row
        )

        def landed_late(done: asyncio.Future[None]) -> None:
            error = done.exception()  # (retrieved: one given up may fail unseen)
            if waiter.late and error is None:
                logger.error(
                    "%s",
                    self.redactor.text(
                        f"process {self.name}: journal write {write.__name__} of {about} "
                        f"landed after its waiter gave up on it (a slow disk): its row stands "
                        f"and is run again after a restart"
                    ),
                )

        done.add_done_callback(landed_late)
        try:
            async with asyncio.timeout(JOURNAL_ACCEPT):
                await asyncio.shield(done)  # its waiter gives it up, not cancels it
        except TimeoutError:
            waiter.give_up()
            raise sqlite3.OperationalError(
                f"SQLite file {self.path}: the journal did not take the write of {about} "
                f"within {JOURNAL_ACCEPT:g} s (the file is held locked, or the "
                f"disk does not answer); it was given up"
            ) from None
        except BaseException as exc:
            waiter.give_up()  # cancelled: not an error of the writer's
            self._notice(exc)
            raise

    async def landed(
        self, about: str, write: Callable[..., None], *args: Any, **kwargs: Any
    ) -> None:
        """``write(*args)`` waited for as ``accept`` does; its ``sqlite3`` error (or the
        bound passing) is logged and counted, not raised. For a write that must land before
        what follows: a run's ``running`` counts its attempt, so an event whose runs keep
        killing the host is dead-lettered once its retries are used, however soon each crash
        comes."""
        try:
            await self.accept(about, write, *args, **kwargs)
        except sqlite3.Error as exc:
            self.failed(about, write.__name__, exc)

    async def close(
        self, within: float = JOURNAL_DRAIN, then: Callable[[], None] | None = None
    ) -> bool:
        """Finish the queued writes (or give them up past ``within`` seconds); end the
        thread, ``then`` running once it is done with the file (see WriterSeat.close)."""
        self._hand_over()
        return await self._writer.close(within, then)

    def count_in(self, tally: JournalWrites) -> None:
        """Count this one's failures in ``tally``'s ``errors`` and ``error`` too: a cluster's
        step journal writes, in those of its process (see ``DurableRuns.use``)."""
        self._tally = None if tally is self else tally

    def _count(self, error: str) -> None:
        self.errors += 1
        self.error = error
        if self._tally is not None:
            self._tally._count(error)

    def failed(self, about: str, name: str, exc: BaseException) -> None:
        """Log and count the failure ``exc`` of the write ``name`` of ``about`` (made here, or
        by a stop itself: see ``DurableRuns.close``)."""
        error = self.redactor.text(describe(exc))
        self._count(error)
        self._notice(exc)
        logger.warning(
            "%s",
            self.redactor.text(
                f"process {self.name}: journal write {name} of {about} failed; "
                f"the process goes on (a row left queued or running is run again after a "
                f"restart): {error}"
            ),
        )

    def _notice(self, exc: BaseException) -> None:
        """Log once, as an error, that the journal file was deleted or replaced."""
        from ..store import JournalFileGone

        if isinstance(exc, JournalFileGone) and not self._gone_told:
            self._gone_told = True
            logger.error("%s", self.redactor.text(f"process {self.name}: {describe(exc)}"))


def __getattr__(name: str) -> Any:
    if name == "JournalWriter":  # its name until it said what it is: a seat at the writer
        import warnings

        warnings.warn("JournalWriter is renamed WriterSeat", DeprecationWarning, stacklevel=2)
        return WriterSeat
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
