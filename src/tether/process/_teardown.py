"""Stopping a process (Teardown), and the stop's deadline.

What a stop does, in order: the trigger runners and child processes stop; idle workers are
cancelled and busy ones get ``stop_timeout`` to finish their run (then are cancelled, and one
whose run ignores its cancellation is abandoned ABANDON_GRACE later: see WorkerPool); every
event left is dead-lettered, then its task_completed is dispatched; the process's async hooks
are drained.

The last two share one deadline (see ``stop_deadline``): what is left of stop_timeout after
the runs, plus ABANDON_GRACE. A stop's length so does not grow with the number of events left
or how slow their hooks are; a task_completed not run by then is said in its dead letter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..hooks import drain as drain_async_hooks
from ._journaling import JOURNAL_DRAIN
from ._state import ProcessState
from ._supervise import cleanly
from ._workers import ABANDON_GRACE

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks import HistoryRecorder, HookManager
    from ..models import Model
    from ..store import Journal
    from ._changes import ConfigChanges
    from ._dead_letters import DeadLetterBox
    from ._event_runner import EventRunner
    from ._journaling import JournalWrites
    from ._state import LiveState
    from ._triggers import TriggerRunners
    from ._workers import WorkerPool

__all__ = ["ASYNC_HOOK_DRAIN", "Child", "Owner", "Teardown", "stop_deadline"]

logger = logging.getLogger("tether.process")

ASYNC_HOOK_DRAIN: Final = 5.0


def stop_deadline(halting: float, stop_timeout: float) -> float:
    """The loop time at which a stop cuts off its last hooks (the task_completed of its
    dead letters, then its async hooks): what is left of ``stop_timeout`` after the runs
    (counted from ``halting``, when the workers were told to stop), plus ABANDON_GRACE."""
    now = asyncio.get_running_loop().time()
    return max(halting + stop_timeout, now) + ABANDON_GRACE


class Child(Protocol):
    """A child process, as its parent's teardown stops it."""

    @property
    def name(self) -> str: ...

    def stop(self) -> Awaitable[None]: ...


class Owner(Protocol):
    """What a Teardown asks of the process it stops, beyond its state: the process says
    how, the teardown when."""

    def children(self) -> Iterable[Child]:
        """The child processes now."""
        ...

    def model_held(self) -> Model | None:
        """The model whose connections the process holds (a child shares its parent's:
        None)."""
        ...

    def stores(self) -> Iterable[object]:
        """The SQLite stores it holds a share of (journal, hook-run history, artifacts)."""
        ...

    async def stopped(self) -> None:
        """Tell the parent this child stopped (nothing for a process without a parent)."""


class Teardown:
    """A process's stop (or a crash given up on), in the order of the module docstring, and
    the pause of a crash before its restart.

    It is handed the process's state (``live``), the collaborators it stops and drains (the
    trigger runners, the workers, the event path, the dead letters, the configuration's MCP
    connections, the hooks and their history, the journal and its writes), the tasks awaiting
    the stop (``keep``: a deferred call among them is not cancelled), and the process itself
    for what only it knows (``owner``).
    """

    def __init__(
        self,
        live: LiveState,
        redactor: Redactor,
        *,
        triggers: TriggerRunners,
        pool: WorkerPool,
        events: EventRunner,
        letters: DeadLetterBox,
        changes: ConfigChanges,
        hooks: HookManager,
        history: HistoryRecorder,
        journal: Journal | None,
        writes: JournalWrites,
        keep: set[asyncio.Task[Any] | None],
        owner: Owner,
    ) -> None:
        self._live = live
        self._redactor = redactor
        self._triggers = triggers
        self._pool = pool
        self._events = events
        self._letters = letters
        self._hooks = hooks
        self._history = history
        self._journal = journal
        self._writes = writes
        self._changes = changes
        self._keep = keep
        self._owner = owner
        #: When the stop's wait for the journal ends (set as the history settles).
        self._drain_by: float | None = None

    async def pause(self) -> None:
        """A crash's restart: stop the triggers and workers, keeping the queue (events wait
        for the restarted process, and so does a run cut off here: its attempt does not
        count)."""
        self._live.stopping = True
        await self._triggers.stop_all()
        await self._pool.halt(self._live.config.stop_timeout)
        await self._events.requeue_cut_off()
        # Never re-run beside the run given up on.
        await self._letters.dead_letter_all(self._pool.take_given_up(), "process failed")

    async def run(self, final_state: ProcessState, restarting: bool = False) -> None:
        """Stop everything and end in ``final_state``; ``restarting``: a start follows."""
        live, owner = self._live, self._owner
        live.stopping = True
        try:  # whatever raises here, the process ends in final_state (never "stopping" for good)
            await self._triggers.stop_all()
            # Children stop together: each has its own stop_timeout, and one child's slow
            # runs or hooks do not hold up the others' stops.
            await asyncio.gather(
                *(
                    cleanly(child.stop(), f"stopping child {child.name!r}", self._redactor.text)
                    for child in list(owner.children())
                )
            )
            loop = asyncio.get_running_loop()
            halting = loop.time()
            await self._pool.halt(live.config.stop_timeout)
            # No run calls a tool any more: the MCP servers go (their programs' groups too).
            await cleanly(
                self._changes.close_mcp(), "closing the MCP connections", self._redactor.text
            )
            deadline = stop_deadline(halting, live.config.stop_timeout)
            why = "process stopped" if final_state == ProcessState.STOPPED else "process failed"
            # One call: every event left is dead-lettered before any task_completed hook runs.
            await self._letters.dead_letter_all(self._events.unfinished(final_state), why, deadline)
            await self._quiet_hooks(deadline, restarting)
            model = owner.model_held()
            if model is not None:
                # Release pooled connections now; an OpenAI client reopens on its next call.
                await cleanly(model.aclose(), "closing the model", self._redactor.text)
        finally:
            live.state, live.running_loop = final_state, None  # it runs in no loop any more
            await self._release(final_state == ProcessState.STOPPED and not restarting)
        if not restarting:  # a restarted child stays its child
            await owner.stopped()

    async def _quiet_hooks(self, deadline: float, restarting: bool) -> None:
        """Drain this process's async hooks, within stop_timeout and what the deadline
        leaves; end its deferred extension-point calls unless it restarts; settle the
        history of its hook runs."""
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        await drain_async_hooks(
            min(ASYNC_HOOK_DRAIN, self._live.config.stop_timeout, left), self._hooks
        )
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
        stores = [close for store in self._owner.stores() if (close := _closer(store))]

        def give_back() -> None:
            for close in stores:
                close()

        # Its queued writes done (or given up: at-least-once), the writer thread ends.
        await self._writes.close(within, give_back)


def _closer(store: object) -> Callable[[], None] | None:
    close = getattr(store, "close", None)
    return close if callable(close) else None
