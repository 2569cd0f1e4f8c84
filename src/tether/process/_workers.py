"""The worker tasks of one process (WorkerPool): made at the first event queued (a process
that never received an event holds none), which of them run an event now, and halting them
within ``stop_timeout`` at a stop (a run that ignores its cancellation is abandoned
ABANDON_GRACE later: see ``WorkerPool.halt``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..hooks import CLOSING

if TYPE_CHECKING:
    from ._event import TriggerEvent

__all__ = ["ABANDON_GRACE", "Runner", "WorkerPool"]

logger = logging.getLogger("tether.process")

#: Seconds a stop waits for a run it cancelled at stop_timeout before abandoning it.
ABANDON_GRACE: Final = 1.0


class Runner(Protocol):
    """What the workers run (the process's EventRunner)."""

    def work(self) -> Coroutine[Any, Any, None]:
        """One worker's loop: take events and attempt each, until a stop or a crash."""
        ...


class WorkerPool:
    """The worker tasks of one process, which of them run an event now, and halting them.

    While the process runs the pool is open (``open``): its workers are made at the first
    event queued (``wake``), all at once, and live until the pool is halted (a stop, or a
    crash's pause); the next start opens it again.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        #: The events whose run is under way (by id), with their attempt: a worker given up
        #: on takes its event out, to be dead-lettered and never run again.
        self.inflight: dict[str, tuple[TriggerEvent, int]] = {}
        # (Tuples replaced as a whole: a process that never started holds none of its own.)
        self.tasks: tuple[asyncio.Task[None], ...] = ()
        #: The workers running an event now, with its id.
        self.busy: dict[asyncio.Task[None], str] = {}
        #: Workers given up on at a stop: their run ignored its cancellation (see halt), and
        #: their events, to dead-letter (not to re-run: the run may yet act).
        self.abandoned: set[asyncio.Task[None]] = set()
        self._given_up: tuple[tuple[TriggerEvent, int], ...] = ()
        # While the pool is open: what its workers run, and how many there are.
        self._runner: Runner | None = None
        self._count = 0

    def open(self, runner: Runner, count: int, *, now: bool) -> None:
        """The process runs: ``count`` workers, each running ``runner.work()``, are made at
        the first ``wake`` (an event queued), or at once when ``now`` (events wait already, or
        reach the queue without an enqueue: a cluster's stream, which its reader fills)."""
        self._runner, self._count = runner, count
        if now:
            self.wake()

    def wake(self) -> None:
        """An event was queued: make the workers, unless they are made already or the pool
        is not open (the process does not run now: its next start makes them)."""
        runner = self._runner
        if runner is None or self.tasks:
            return
        loop = asyncio.get_running_loop()
        self.tasks = tuple(
            loop.create_task(runner.work(), name=f"{self.name}-worker-{i}")
            for i in range(self._count)
        )

    def take_given_up(self) -> list[tuple[TriggerEvent, int, str]]:
        """The events of the runs a stop gave up on, to dead-letter."""
        given_up, self._given_up = self._given_up, ()
        note = "its run did not end when cancelled; abandoned, and not run again"
        return [(event, attempt, note) for event, attempt in given_up]

    async def halt(self, stop_timeout: float) -> None:
        """Stop the workers: idle ones at once, busy ones after their run (or ``stop_timeout``).

        A run still going then is cancelled; its worker records it as cut off. The pool is
        closed from here: an event queued meanwhile waits for the next start.
        """
        self._runner = None
        idle = [w for w in self.tasks if w not in self.busy]
        for worker in idle:
            worker.cancel(CLOSING)
        busy = [w for w in self.tasks if w in self.busy]
        if busy:
            _, pending = await asyncio.wait(busy, timeout=stop_timeout)
            for worker in pending:
                worker.cancel(CLOSING)
            if pending:  # a run that swallows its cancellation is not waited on for ever
                _, stuck = await asyncio.wait(pending, timeout=ABANDON_GRACE)
                for worker in stuck:
                    self._abandon(worker)
        await asyncio.gather(
            *(w for w in self.tasks if w not in self.abandoned), return_exceptions=True
        )
        self.tasks = ()
        self.busy.clear()

    def _abandon(self, worker: asyncio.Task[None]) -> None:
        """Give up on a worker whose run did not end when cancelled (a tool or model that
        swallows CancelledError): its event is cut off now, and whatever the run does when it
        ends is ignored (its worker checks ``abandoned``), so a stop is bounded and nothing
        is recorded twice."""
        event_id = self.busy.pop(worker, None)
        entry = self.inflight.pop(event_id, None) if event_id is not None else None
        if entry is not None:  # dead-lettered, never run again: the run may yet act
            self._given_up += (entry,)
        self.abandoned.add(worker)  # referenced until it ends, then forgotten
        worker.add_done_callback(self.abandoned.discard)
        logger.error(
            "process %s: the run of event %s did not end within %gs of being cancelled (a tool "
            "or model swallowed the cancellation); it was abandoned and its event dead-lettered",
            self.name,
            event_id,
            ABANDON_GRACE,
        )
