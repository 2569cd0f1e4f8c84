"""Stopping a process (Teardown): halting its workers within ``stop_timeout`` (WorkerPool),
and the stop's deadline.

What a stop does, in order: the trigger runners and child processes stop; idle workers are
cancelled and busy ones get ``stop_timeout`` to finish their run (then are cancelled, and one
whose run ignores its cancellation is abandoned ABANDON_GRACE later); every event left is
dead-lettered, then its task_completed fires; the process's async hooks are drained.

The last two share one deadline (see ``stop_deadline``): what is left of stop_timeout after
the runs, plus ABANDON_GRACE. A stop's length so does not grow with the number of events left
or how slow their hooks are; a task_completed not run by then is said in its dead letter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..hooks._background import drain as drain_async_hooks
from ..hooks._hook import CLOSING
from ._journaling import JOURNAL_DRAIN
from ._state import ProcessState
from ._supervise import cleanly

if TYPE_CHECKING:
    from ..hooks import HookManager
    from ..hooks._history import HistoryRecorder
    from ..models import Model
    from ..store import Journal
    from ._attempts import EventRunner
    from ._dead_letters import DeadLetterBox
    from ._event import TriggerEvent
    from ._journaling import JournalWrites
    from ._triggers import TriggerRunner

__all__ = [
    "ABANDON_GRACE",
    "ASYNC_HOOK_DRAIN",
    "Child",
    "Ends",
    "Teardown",
    "WorkerPool",
    "stop_deadline",
]

logger = logging.getLogger("tether.process")

ASYNC_HOOK_DRAIN: Final = 5.0
#: Seconds a stop waits for a run it cancelled at stop_timeout before abandoning it.
ABANDON_GRACE: Final = 1.0


def stop_deadline(halting: float, stop_timeout: float) -> float:
    """The loop time at which a stop cuts off its last hooks (the task_completed of its
    dead letters, then its async hooks): what is left of ``stop_timeout`` after the runs
    (counted from ``halting``, when the workers were told to stop), plus ABANDON_GRACE."""
    now = asyncio.get_running_loop().time()
    return max(halting + stop_timeout, now) + ABANDON_GRACE


class WorkerPool:
    """The worker tasks of one process, which of them run an event now, and halting them."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: The events whose run is under way (by id), with their attempt: a worker given up
        #: on takes its event out, to be dead-lettered and never run again.
        self.inflight: dict[str, tuple[TriggerEvent, int]] = {}
        self.tasks: list[asyncio.Task[None]] = []
        #: The workers running an event now, with its id.
        self.busy: dict[asyncio.Task[None], str] = {}
        #: Workers given up on at a stop: their run ignored its cancellation (see halt), and
        #: their events, to dead-letter (not to re-run: the run may yet act).
        self.abandoned: set[asyncio.Task[None]] = set()
        self._given_up: list[tuple[TriggerEvent, int]] = []

    def take_given_up(self) -> list[tuple[TriggerEvent, int, str]]:
        """The events of the runs a stop gave up on, to dead-letter."""
        given_up, self._given_up = self._given_up, []
        note = "its run did not end when cancelled; abandoned, and not run again"
        return [(event, attempt, note) for event, attempt in given_up]

    async def halt(self, stop_timeout: float) -> None:
        """Stop the workers: idle ones at once, busy ones after their run (or ``stop_timeout``).

        A run still going then is cancelled; its worker records it as cut off.
        """
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
        self.tasks = []
        self.busy.clear()

    def _abandon(self, worker: asyncio.Task[None]) -> None:
        """Give up on a worker whose run did not end when cancelled (a tool or model that
        swallows CancelledError): its event is cut off now, and whatever the run does when it
        ends is ignored (its worker checks ``abandoned``), so a stop is bounded and nothing
        is recorded twice."""
        event_id = self.busy.pop(worker, None)
        entry = self.inflight.pop(event_id, None) if event_id is not None else None
        if entry is not None:  # dead-lettered, never run again: the run may yet act
            self._given_up.append(entry)
        self.abandoned.add(worker)  # referenced until it ends, then forgotten
        worker.add_done_callback(self.abandoned.discard)
        logger.error(
            "process %s: the run of event %s did not end within %gs of being cancelled (a tool "
            "or model swallowed the cancellation); it was abandoned and its event dead-lettered",
            self.name,
            event_id,
            ABANDON_GRACE,
        )


class Child(Protocol):
    """A child process, as its parent's teardown stops it."""

    @property
    def name(self) -> str: ...

    def stop(self) -> Awaitable[None]: ...


@dataclass(frozen=True, slots=True)
class Ends:
    """What a Teardown asks of its process: the process says how, the teardown when."""

    #: Mark a stop under way: workers take no new event.
    halting: Callable[[], None]
    #: The configuration's stop_timeout now.
    stop_timeout: Callable[[], float]
    #: The child processes now.
    children: Callable[[], Iterable[Child]]
    #: Close the MCP connections.
    close_mcp: Callable[[], Awaitable[None]]
    #: The model whose connections the process holds (a child shares its parent's: None).
    model: Callable[[], Model | None]
    #: Enter the final state: the process runs in no loop any more.
    enter: Callable[[ProcessState], None]
    #: The SQLite stores it holds a share of (journal, hook-run history, artifacts).
    stores: Callable[[], Iterable[object]]
    #: Tell the parent this child stopped (None for a process without a parent).
    stopped: Callable[[], Awaitable[None]] | None


class Teardown:
    """A process's stop (or a crash given up on), in the order of the module docstring, and
    the pause of a crash before its restart.

    It is handed the collaborators it stops and drains (the trigger runners, the workers, the
    event path, the dead letters, the hooks and their history, the journal and its writes),
    the tasks awaiting the stop (``keep``: a deferred call among them is not cancelled), and
    what only the process knows how to do (``ends``).
    """

    def __init__(
        self,
        redact: Callable[[str], str],
        *,
        runners: dict[str, TriggerRunner],
        pool: WorkerPool,
        events: EventRunner,
        letters: DeadLetterBox,
        hooks: HookManager,
        history: HistoryRecorder,
        journal: Journal | None,
        writes: JournalWrites,
        keep: set[asyncio.Task[Any] | None],
        ends: Ends,
    ) -> None:
        self._redact = redact
        self._runners = runners
        self._pool = pool
        self._events = events
        self._letters = letters
        self._hooks = hooks
        self._history = history
        self._journal = journal
        self._writes = writes
        self._keep = keep
        self._ends = ends
        #: When the stop's wait for the journal ends (set as the history settles).
        self._drain_by: float | None = None

    async def _stop_triggers(self) -> None:
        for runner in list(self._runners.values()):
            await runner.stop()
        self._runners.clear()

    async def pause(self) -> None:
        """A crash's restart: stop the triggers and workers, keeping the queue (events wait
        for the restarted process, and so does a run cut off here: its attempt does not
        count)."""
        self._ends.halting()
        await self._stop_triggers()
        await self._pool.halt(self._ends.stop_timeout())
        await self._events.requeue_cut_off()
        # Never re-run beside the run given up on.
        await self._letters.dead_letter_all(self._pool.take_given_up(), "process failed")

    async def run(self, final_state: ProcessState, restarting: bool = False) -> None:
        """Stop everything and end in ``final_state``; ``restarting``: a start follows."""
        ends = self._ends
        ends.halting()
        try:  # whatever raises here, the process ends in final_state (never "stopping" for good)
            await self._stop_triggers()
            # Children stop together: each has its own stop_timeout, and one child's slow
            # runs or hooks do not hold up the others' stops.
            await asyncio.gather(
                *(
                    cleanly(child.stop(), f"stopping child {child.name!r}", self._redact)
                    for child in list(ends.children())
                )
            )
            loop = asyncio.get_running_loop()
            halting = loop.time()
            await self._pool.halt(ends.stop_timeout())
            # No run calls a tool any more: the MCP servers go (their programs' groups too).
            await cleanly(ends.close_mcp(), "closing the MCP connections", self._redact)
            deadline = stop_deadline(halting, ends.stop_timeout())
            why = "process stopped" if final_state == ProcessState.STOPPED else "process failed"
            # One call: every event left is dead-lettered before any task_completed hook runs.
            await self._letters.dead_letter_all(self._events.unfinished(final_state), why, deadline)
            await self._quiet_hooks(deadline, restarting)
            model = ends.model()
            if model is not None:
                # Release pooled connections now; an OpenAI client reopens on its next call.
                await cleanly(model.aclose(), "closing the model", self._redact)
        finally:
            ends.enter(final_state)
            await self._release(final_state == ProcessState.STOPPED and not restarting)
        if ends.stopped is not None and not restarting:  # a restarted child stays its child
            await ends.stopped()

    async def _quiet_hooks(self, deadline: float, restarting: bool) -> None:
        """Drain this process's async hooks, within stop_timeout and what the deadline
        leaves; end its deferred extension-point calls unless it restarts; settle the
        history of its hook runs."""
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        await drain_async_hooks(min(ASYNC_HOOK_DRAIN, self._ends.stop_timeout(), left), self._hooks)
        if not restarting:  # deferred extension-point calls (call_later) end with the process
            await self._hooks.aclose(keep=self._keep)
        # Its hook runs go to the writer thread, waited for within the journal's drain.
        self._drain_by = asyncio.get_running_loop().time() + JOURNAL_DRAIN
        await self._history.settle(JOURNAL_DRAIN)

    async def _release(self, for_good: bool) -> None:
        """End the journal's writer thread; stopped for good, give back the journal's lease
        and every share of a SQLite file, so a stopped process holds no descriptor (a later
        read, its history say, opens the file anew).

        The history's settling and the writer's end share one JOURNAL_DRAIN: a stop waits
        for the journal that long at most, whatever the file does. The shares are given back
        by the writer's thread once it is done with the file (at once, unless a write was
        still under way at the deadline)."""
        drain_by, self._drain_by = self._drain_by, None
        loop = asyncio.get_running_loop()
        within = JOURNAL_DRAIN if drain_by is None else max(0.0, drain_by - loop.time())
        if not for_good:
            await self._writes.close(within)
            return
        if self._journal is not None:
            self._journal.release()  # the next process of this name may start and recover
        stores = [close for store in self._ends.stores() if (close := _closer(store))]

        def give_back() -> None:
            for close in stores:
                close()

        # Its queued writes done (or given up: at-least-once), the writer thread ends.
        await self._writes.close(within, give_back)


def _closer(store: object) -> Callable[[], None] | None:
    close = getattr(store, "close", None)
    return close if callable(close) else None
