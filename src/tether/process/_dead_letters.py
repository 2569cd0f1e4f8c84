"""Dead letters: every event that cannot run is kept here with a reason, never dropped.

An entry is a dict (``event``, ``event_id``, ``reason``, ``error``, ``attempts``,
``timestamp``); with a journal it is written there too, so the next process over the same file
reloads it (see ``_recovery``). ``AgentProcess.redeliver_dead_letters()`` injects entries again.

A stop dead-letters what is left, then dispatches task_completed ("dead_lettered") for each, up to
its deadline: the dispatch under way then is cancelled and the rest are not made, and the
error of each of those dead letters ends with UNFIRED (in the journal too), so an operator
can tell which events no task_completed hook saw through.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..hooks import CLOSING
from ._supervise import describe, is_fatal

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..store import Journal
    from ._event import TriggerEvent
    from ._journaling import JournalWrites
    from ._outcomes import Outcomes
    from ._state import LiveState

__all__ = ["UNFIRED", "DeadLetterBox"]

logger = logging.getLogger("tether.process")

#: Ends the error of a dead letter whose task_completed a stop's deadline cut off (or never
#: let start).
UNFIRED: Final = "task_completed cut off: the stop's deadline passed"


class Injects(Protocol):
    """What redelivers a dead letter: the process's intake."""

    async def inject(self, event: TriggerEvent) -> str: ...


class DeadLetterBox:
    """A process's dead letters: kept, journaled, mirrored in a cluster's stream, and ended
    with task_completed ("dead_lettered") through the process's outcomes.

    It is handed the process's state (``live``: a cluster's stream, the observer), what it
    writes to (the journal and its writes) and the process's ``outcomes`` (where an event
    ends).
    """

    def __init__(
        self,
        name: str,
        redactor: Redactor,
        live: LiveState,
        *,
        outcomes: Outcomes,
        journal: Journal | None,
        writes: JournalWrites,
    ) -> None:
        self.name = name
        self.redactor = redactor
        self.journal = journal
        self.writes = writes
        self._live = live
        self._outcomes = outcomes
        #: The dead letters, oldest first.
        self.entries: list[dict[str, Any]] = []
        #: task_completed dispatched off a timer, from a task of its own (made at the first).
        self._later: set[asyncio.Task[Any]] | None = None

    def add(
        self, event: TriggerEvent, reason: str, error: str | None, attempts: int
    ) -> dict[str, Any]:
        """Dead-letter ``event`` (in the journal too); the entry kept."""
        error = self.redactor.text(error) if error is not None else None
        entry = {
            "event": event,
            "event_id": event.event_id,
            "reason": reason,
            "error": error,
            "attempts": attempts,
            "timestamp": datetime.now(UTC),
        }
        self.entries.append(entry)
        observer = self._live.observer
        if observer is not None:
            observer.dead_lettered(self.name, reason)
        logger.info("event %s dead-lettered: %s (%s)", event.event_id, reason, error)
        if self.journal is not None:  # a failed write: see _journaling (at-least-once)
            payload = self.redactor.declared.value(event.to_dict())  # replayed: see Redactor
            self.writes.write(event.event_id, self.journal.dead, payload, attempts, reason, error)
        stream = self._live.stream
        if stream is not None:
            stream.dead(entry)
        return entry

    def refuse(
        self, event: TriggerEvent, reason: str, error: str | None, attempts: int
    ) -> dict[str, Any]:
        """Dead-letter ``event``, which no worker took (see Intake): its outcome is decided
        ``dead_lettered`` at once (see Outcomes.refused)."""
        entry = self.add(event, reason, error, attempts)
        self._outcomes.refused(event.event_id)
        return entry

    async def dead_letter_all(
        self,
        events: list[tuple[TriggerEvent, int, str]],
        why: str,
        deadline: float | None = None,
    ) -> None:
        """Dead-letter each (event, attempts, error) with reason ``why``, then dispatch its
        task_completed ("dead_lettered"). All are dead-lettered before any hook runs, and a
        hook raising what the engine does not isolate is logged: it loses none of them.

        With ``deadline`` (a loop time), the task_completed dispatches stop there (see the
        module docstring): the dead letters of those cut off or not made end with UNFIRED."""
        entries = [self.add(event, why, note, attempts) for event, attempts, note in events]
        ended = [event for event, _, _ in events]
        dispatched = await self.dispatch_dead_lettered(ended, why, deadline)
        if dispatched < len(entries):
            self._undispatched(entries[dispatched:], len(entries))

    async def dispatch_dead_lettered(
        self, events: list[TriggerEvent], why: str, deadline: float | None
    ) -> int:
        """Dispatch task_completed ("dead_lettered") for each event in turn, until ``deadline``;
        how many were dispatched to the end."""
        loop = asyncio.get_running_loop()
        dispatched = 0

        async def dispatch() -> None:
            nonlocal dispatched
            for event in events:
                if deadline is not None and loop.time() >= deadline:
                    return  # (also when a hook swallowed the cancellation at the deadline)
                try:
                    await self._outcomes.complete(event, "dead_lettered", 0.0, why)
                except BaseException as exc:
                    if is_fatal(exc):
                        raise
                    error = self.redactor.text(describe(exc))
                    logger.error("task_completed of %s raised %s", event.event_id, error)
                dispatched += 1

        if deadline is None or not events:
            await dispatch()
            return dispatched
        # A task of its own, cancelled at the deadline: the dispatch under way ends there.
        dispatching = loop.create_task(dispatch(), name=f"{self.name}-dead-lettered")
        try:
            await asyncio.wait([dispatching], timeout=max(0.0, deadline - loop.time()))
        except asyncio.CancelledError:
            dispatching.cancel()
            raise
        if not dispatching.done():
            dispatching.cancel(CLOSING)
            await asyncio.wait([dispatching])  # at once, unless a hook swallows its cancellation
        if not dispatching.cancelled():
            dispatching.result()  # what no layer isolates (KeyboardInterrupt, SystemExit) goes on
        return dispatched

    def dispatch_later(self, event: TriggerEvent, why: str) -> None:
        """Dispatch task_completed ("dead_lettered") for ``event``, dead-lettered outside any
        task (a retry's timer finding the queue full), from a task of its own."""
        task = asyncio.get_running_loop().create_task(
            self.dispatch_dead_lettered([event], why, None), name=f"{self.name}-dead-lettered"
        )
        if self._later is None:
            self._later = set()
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    def _undispatched(self, entries: list[dict[str, Any]], total: int) -> None:
        """Say in each dead letter (and its journal row) that a stop's deadline cut its
        task_completed off; log how many."""
        kept = [entry for entry in entries if any(d is entry for d in self.entries)]
        for entry in kept:
            entry["error"] = f"{entry['error']}; {UNFIRED}" if entry["error"] else UNFIRED
        if self.journal is not None:
            amended = [(entry["event_id"], entry["error"]) for entry in kept]
            self.writes.write(f"{len(kept)} dead letters", self.journal.amend_dead, amended)
        logger.warning(
            "process %s: the stop's deadline passed before task_completed ran for %d of the %d "
            "events it dead-lettered; their dead letters say so (%s)",
            self.name,
            len(entries),
            total,
            ", ".join(entry["event_id"] for entry in entries[:5])
            + (", ..." if len(entries) > 5 else ""),
        )

    async def redeliver(self, intake: Injects, event_ids: list[str] | None = None) -> int:
        """Inject dead-lettered events again (all, or those named) through ``intake``; return
        how many.

        Each leaves the dead letters only when its turn comes, and its journal row stays (moved
        behind the events journaled so far, as a newly queued event would be) until inject()
        writes the event's new state over it (queued, or dead again): a caller that
        gives up midway, or a host that dies, leaves the others dead letters still. One that
        another redelivery (or clear_dead_letters()) took meanwhile is skipped.
        """
        chosen = [d for d in self.entries if event_ids is None or d["event"].event_id in event_ids]
        count = 0
        for entry in chosen:
            if entry not in self.entries:
                continue
            self.entries.remove(entry)
            event = entry["event"]
            if self.journal is not None:  # only its place: inject() writes its new state
                self.writes.write(event.event_id, self.journal.redelivering, event.event_id)
            try:
                await intake.inject(event)
            except BaseException:
                if not any(d["event_id"] == event.event_id for d in self.entries):
                    self.entries.append(entry)  # neither queued nor dead-lettered again
                raise
            stream = self._live.stream
            if stream is not None and not any(
                d["event_id"] == event.event_id for d in self.entries
            ):  # in the stream again (not dead again): its Redis dead letter goes
                stream.forget_dead([event.event_id])
            count += 1
        return count

    def clear(self) -> int:
        """Forget every dead letter; return how many."""
        count = len(self.entries)
        if self.journal is not None:
            self.journal.forget_dead([d["event"].event_id for d in self.entries])
        stream = self._live.stream
        if stream is not None:
            stream.forget_dead([d["event"].event_id for d in self.entries])
        self.entries = []
        return count
