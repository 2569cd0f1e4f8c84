"""Journal writes of an accepted event's progress: off the event loop, and a failed one never
stops the process.

While a process runs (``start()`` to the end of its teardown), every journal write goes to a
writer thread of its own, in order: a file another program holds locked makes that thread
wait (up to the journal's busy timeout per write), never the event loop, so one locked journal
cannot stall every process on the loop. A write made while the process is not running (an
event dead-lettered by a stopped process, say) runs at once, as before.

``inject`` journals an event ``queued`` before it queues it, and waits for that write (off the
loop): when it raises, the event is refused, and nothing of it is left queued. Every later
write of the event's progress (``done``, a retry's ``queued``, ``dead``, an amended or
redelivered dead letter) goes through ``JournalWrites.write`` and is not waited for (``running``,
which counts the attempt, is waited for by its worker, off the loop): when it
fails (the file locked past its busy timeout, a full disk) a warning is logged, redacted, it is
counted in ``status()`` (``journal_errors``, and the last error as ``journal_error``), and the
process goes on with its events.

Delivery stays at-least-once: a row whose write failed (or was still waiting when a crash came,
or was given up at a stop, see ``JOURNAL_DRAIN``) still holds the event as queued or running,
so the next process over the file (see ``_recovery``) runs it again; none is lost.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, ParamSpec

from ._supervise import describe

if TYPE_CHECKING:
    from .._redact import Redactor

__all__ = ["JOURNAL_DRAIN", "JournalWriter", "JournalWrites"]

logger = logging.getLogger("tether.process")

_P = ParamSpec("_P")

#: Seconds a stop waits for the writes still queued for its writer thread; those left then
#: are given up (their rows still say queued or running: run again after a restart).
JOURNAL_DRAIN: Final = 10.0

_Job = tuple[Callable[..., None], tuple[Any, ...], "concurrent.futures.Future[None]"]


class JournalWriter:
    """One thread that runs a process's journal writes in the order they were submitted.

    Started by the first ``submit``; ``close`` lets it finish what was submitted (within a
    deadline) and ends it, so a stopped process leaves no thread behind.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._give_up = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def submit(
        self, write: Callable[..., None], args: tuple[Any, ...]
    ) -> concurrent.futures.Future[None]:
        """Queue ``write(*args)``; its future holds its outcome (an exception if it failed)."""
        if self._thread is None:
            self._give_up.clear()
            self._thread = threading.Thread(
                target=self._run, name=f"tether-journal-{self.name}", daemon=True
            )
            self._thread.start()
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._jobs.put((write, args, done))
        return done

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            write, args, done = job
            try:
                if self._give_up.is_set():
                    raise sqlite3.OperationalError(
                        "given up at the process's stop (the file was still busy)"
                    )
                write(*args)
            except BaseException as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)

    async def close(self, within: float = JOURNAL_DRAIN) -> None:
        """Finish the submitted writes (giving up those left after ``within`` seconds), then
        end the thread. The writes run off the loop; this only waits for them. Writes
        submitted meanwhile still run, in order, before the thread ends."""
        thread = self._thread
        if thread is None:
            return
        drained: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._jobs.put((drained.set_result, (None,), concurrent.futures.Future()))
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(drained)), within)
        except TimeoutError:
            self._give_up.set()  # what is still queued fails at once: only the write under way
            await asyncio.wrap_future(drained)  # waits, bounded by the busy timeout
        self._jobs.put(None)  # after what was submitted while draining
        while thread.is_alive():  # only writes queued while draining are left: brief
            await asyncio.sleep(0.001)
        self._thread = None


class JournalWrites:
    """The journal writes of one process's events: off the loop while it runs, and counted,
    not raised, when they fail (see the module docstring).

    ``running`` says whether the process runs now: only then do writes go to the writer
    thread (a write made by a stopped process runs at once).
    """

    def __init__(self, name: str, redactor: Redactor, running: Callable[[], bool]) -> None:
        self.name = name
        self.redactor = redactor
        self._running = running
        #: Writes that failed since the process was created, and the last one's error.
        self.errors = 0
        self.error: str | None = None
        self._writer = JournalWriter(name)
        self._pending = 0  # on the loop's thread only

    @property
    def pending(self) -> int:
        """Writes handed to the writer thread whose outcome is not recorded yet."""
        return self._pending

    def _inline(self) -> bool:
        """Whether a write runs at once: the process is not running, and its writer thread
        is not finishing earlier writes (they stay in order)."""
        return not self._running() and not self._writer.running

    def write(
        self, about: str, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs
    ) -> None:
        """``write(*args)``, a journal write of the progress of ``about`` (an event id, or what
        the write is of), on the writer thread while the process runs; its ``sqlite3`` error
        is logged and counted, not raised (see the module docstring)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or self._inline():
            try:
                write(*args, **kwargs)
            except sqlite3.Error as exc:
                self._failed(about, write.__name__, exc)
            return
        name = write.__name__
        self._pending += 1
        done = self._writer.submit(lambda: write(*args, **kwargs), ())

        def settled(exc: BaseException | None) -> None:
            self._pending -= 1
            if exc is not None:
                self._failed(about, name, exc)

        def finished(future: concurrent.futures.Future[None]) -> None:  # the writer's thread
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settled, future.exception())

        done.add_done_callback(finished)

    def history_offload(self, write: Callable[[], None]) -> concurrent.futures.Future[None] | None:
        """Run a hook-run history write (same file) on the writer thread while the process
        runs, in order with its journal writes; None when it does not (written at once)."""
        if self._inline():
            return None
        return self._writer.submit(write, ())

    async def accept(self, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs) -> None:
        """``write(*args)`` waited for (off the loop while the process runs); raises its error."""
        if self._inline():
            write(*args, **kwargs)  # not running: nothing else waits on this loop for it
            return
        await asyncio.wrap_future(self._writer.submit(lambda: write(*args, **kwargs), ()))

    async def landed(
        self, about: str, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs
    ) -> None:
        """``write(*args)`` waited for (off the loop while the process runs); its ``sqlite3``
        error is logged and counted, not raised. For a write that must land before what
        follows: a run's ``running`` counts its attempt, so an event whose runs keep killing
        the host is dead-lettered once its retries are used, however soon each crash comes."""
        try:
            await self.accept(write, *args, **kwargs)
        except sqlite3.Error as exc:
            self._failed(about, write.__name__, exc)

    async def close(self) -> None:
        """Finish the queued writes (or give them up after JOURNAL_DRAIN); end the thread."""
        await self._writer.close()

    def _failed(self, about: str, name: str, exc: BaseException) -> None:
        self.errors += 1
        self.error = error = self.redactor.text(describe(exc))
        logger.warning(
            "%s",
            self.redactor.text(
                f"process {self.name}: journal write {name} of {about} failed; "
                f"the process goes on (a row left queued or running is run again after a "
                f"restart): {error}"
            ),
        )
