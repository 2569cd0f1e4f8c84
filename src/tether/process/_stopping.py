"""Stopping a process: its teardown, and halting its workers within ``stop_timeout``.

What a stop does, in order: the trigger runners and child processes stop; idle workers are
cancelled and busy ones get ``stop_timeout`` to finish their run (then are cancelled, and one
whose run ignores its cancellation is abandoned ABANDON_GRACE later); every event left is
dead-lettered, then its task_completed fires; the process's async hooks are drained.

The last two share one deadline (see ``_stop_deadline``): what is left of stop_timeout after
the runs, plus ABANDON_GRACE. A stop's length so does not grow with the number of events left
or how slow their hooks are; a task_completed not run by then is said in its dead letter.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Final, cast

from ..hooks._background import drain as drain_async_hooks
from ..hooks._hook import CLOSING
from ._journaling import JOURNAL_DRAIN
from ._state import ProcessState
from ._supervise import cleanly

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks import HookManager
    from ..hooks._history import HistoryRecorder
    from ..models import Model
    from ..store import HistoryStore, Journal
    from ._config import ProcessConfig
    from ._event import TriggerEvent
    from ._journaling import JournalWriter
    from ._plugins import PluginManager
    from ._process import AgentProcess
    from ._triggers import TriggerRunner

__all__ = ["ABANDON_GRACE", "ASYNC_HOOK_DRAIN", "Stopping"]

logger = logging.getLogger("tether.process")

ASYNC_HOOK_DRAIN: Final = 5.0
#: Seconds a stop waits for a run it cancelled at stop_timeout before abandoning it.
ABANDON_GRACE: Final = 1.0


class Stopping:
    """The teardown part of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        config: ProcessConfig
        state: ProcessState
        hooks: HookManager
        history: HistoryRecorder
        redactor: Redactor
        parent: AgentProcess | None
        children: dict[str, AgentProcess]
        _model: Model | None
        _journal: Journal | None
        _journal_writer: JournalWriter
        _history_store: HistoryStore | None
        plugins: PluginManager
        _stopping: bool
        _running_loop: asyncio.AbstractEventLoop | None
        _runners: dict[str, TriggerRunner]
        _workers: list[asyncio.Task[None]]
        _busy: dict[asyncio.Task[None], str]
        _abandoned: set[asyncio.Task[None]]
        _given_up: list[tuple[TriggerEvent, int]]
        _inflight: dict[str, tuple[TriggerEvent, int]]
        _cut_off: list[tuple[TriggerEvent, int]]
        _stop_waiters: set[asyncio.Task[Any] | None]

        async def _dead_letter_all(
            self,
            events: list[tuple[TriggerEvent, int, str]],
            why: str,
            deadline: float | None = None,
        ) -> None: ...

        async def _close_mcp(self) -> None: ...

        def _take_given_up(self) -> list[tuple[TriggerEvent, int, str]]: ...

        def _take_leftovers(
            self, final_state: ProcessState
        ) -> list[tuple[TriggerEvent, int, str]]: ...

    async def _teardown(self, final_state: ProcessState, restarting: bool = False) -> None:
        self._stopping = True
        try:  # whatever raises here, the process ends in final_state (never "stopping" for good)
            for runner in list(self._runners.values()):
                await runner.stop()
            self._runners.clear()
            # Children stop together: each has its own stop_timeout, and one child's slow
            # runs or hooks do not hold up the others' stops.
            await asyncio.gather(
                *(
                    cleanly(child.stop(), f"stopping child {child.name!r}", self.redactor.text)
                    for child in list(self.children.values())
                )
            )
            loop = asyncio.get_running_loop()
            halting = loop.time()
            await self._halt_workers()
            # No run calls a tool any more: the MCP servers go (their programs' groups too).
            await cleanly(self._close_mcp(), "closing the MCP connections", self.redactor.text)
            deadline = self._stop_deadline(halting)
            why = "process stopped" if final_state == ProcessState.STOPPED else "process failed"
            cut_off, self._cut_off = self._cut_off, []
            note = f"cancelled while running when the process {final_state.value}"
            # One call: every event left is dead-lettered before any task_completed hook runs.
            await self._dead_letter_all(
                [(event, attempt, note) for event, attempt in cut_off]
                + self._take_given_up()
                + self._take_leftovers(final_state),
                why,
                deadline,
            )
            # This process's async hooks only, within stop_timeout and what the deadline leaves.
            left = max(0.0, deadline - loop.time())
            await drain_async_hooks(
                min(ASYNC_HOOK_DRAIN, self.config.stop_timeout, left), self.hooks
            )
            if not restarting:  # deferred extension-point calls (call_later) end with the process
                await self.hooks.aclose(keep=self._stop_waiters)
            # Its hook runs go to the writer thread, waited for within the journal's drain.
            await self.history.settle(JOURNAL_DRAIN)
            if self._model is not None and self.parent is None:
                # Release pooled connections now; an OpenAI client reopens on its next call.
                await cleanly(self._model.aclose(), "closing the model", self.redactor.text)
        finally:
            self.state = final_state
            self._running_loop = None
            # Its queued writes done (or given up: at-least-once), the writer thread ends.
            await self._journal_writer.close()
            journal = self._journal
            if journal is not None and final_state == ProcessState.STOPPED and not restarting:
                journal.release()  # the next process of this name may start and recover
            if final_state == ProcessState.STOPPED and not restarting:
                self._close_files()
        if self.parent is not None and not restarting:  # a restarted child stays its child
            await self.parent._child_stopped(cast("AgentProcess", self))

    def _close_files(self) -> None:
        """Give back the process's shares of its SQLite file (the last one closes it), so a
        stopped process holds no descriptor; a later read (its history, say) opens it anew."""
        for store in (self._journal, self._history_store, self.plugins.artifacts):
            close = getattr(store, "close", None)
            if close is not None:
                close()

    def _stop_deadline(self, halting: float) -> float:
        """The loop time at which a stop cuts off its last hooks (the task_completed of its
        dead letters, then its async hooks): what is left of stop_timeout after the runs
        (counted from ``halting``, when the workers were told to stop), plus ABANDON_GRACE."""
        now = asyncio.get_running_loop().time()
        return max(halting + self.config.stop_timeout, now) + ABANDON_GRACE

    async def _halt_workers(self) -> None:
        """Stop the workers: idle ones at once, busy ones after their run (or stop_timeout).

        A run still going at stop_timeout is cancelled; its worker records it in _cut_off.
        """
        idle = [w for w in self._workers if w not in self._busy]
        for worker in idle:
            worker.cancel(CLOSING)
        busy = [w for w in self._workers if w in self._busy]
        if busy:
            _, pending = await asyncio.wait(busy, timeout=self.config.stop_timeout)
            for worker in pending:
                worker.cancel(CLOSING)
            if pending:  # a run that swallows its cancellation is not waited on for ever
                _, stuck = await asyncio.wait(pending, timeout=ABANDON_GRACE)
                for worker in stuck:
                    self._abandon(worker)
        await asyncio.gather(
            *(w for w in self._workers if w not in self._abandoned), return_exceptions=True
        )
        self._workers = []
        self._busy.clear()

    def _abandon(self, worker: asyncio.Task[None]) -> None:
        """Give up on a worker whose run did not end when cancelled (a tool or model that
        swallows CancelledError): its event is cut off now, and whatever the run does when it
        ends is ignored (see _handle), so a stop is bounded and nothing is recorded twice."""
        event_id = self._busy.pop(worker, None)
        entry = self._inflight.pop(event_id, None) if event_id is not None else None
        if entry is not None:  # dead-lettered, never run again: the run may yet act
            self._given_up.append(entry)
        self._abandoned.add(worker)  # referenced until it ends, then forgotten
        worker.add_done_callback(self._abandoned.discard)
        logger.error(
            "process %s: the run of event %s did not end within %gs of being cancelled (a tool "
            "or model swallowed the cancellation); it was abandoned and its event dead-lettered",
            self.name,
            event_id,
            ABANDON_GRACE,
        )
