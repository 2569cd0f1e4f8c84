"""Events in: what a process takes into its queue, and what it refuses.

``inject`` dispatches task_created, journals the event ``queued`` (waiting for that write, off the
loop: see ``_journaling``) and queues it. Nothing is dropped: an event refused (blocked by a
hook, the process stopped, the queue full, a task_created hook raising) is dead-lettered with
the reason. A clustered process queues into the cluster's Redis stream instead, on whichever
host it is injected.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..agent import Note
from ..hooks import closing
from ._event import CURRENT_EVENT, TriggerEvent
from ._state import ProcessState, accepts_events
from ._supervise import describe, is_fatal

if TYPE_CHECKING:
    from ..hooks import DispatchResult
    from ..store import Journal
    from ._dead_letters import DeadLetterBox
    from ._journaling import JournalWrites
    from ._lifecycle import ProcessHooks
    from ._state import LiveState
    from ._supervise import Supervisor
    from ._workers import WorkerPool

__all__ = ["Intake"]

logger = logging.getLogger("tether.process")


class Intake:
    """How events enter one process (see the module docstring).

    It is handed the process's state (``live``), its hook points (task_created,
    file_changed), its supervision (a process failed with a restart coming still takes
    events), its dead letters, journal and journal writes, and its workers (``pool``: an
    event queued wakes them).
    """

    def __init__(
        self,
        live: LiveState,
        hooks: ProcessHooks,
        *,
        supervisor: Supervisor,
        letters: DeadLetterBox,
        journal: Journal | None,
        writes: JournalWrites,
        pool: WorkerPool,
    ) -> None:
        self.name = hooks.name
        self.redactor = hooks.redactor
        self._live = live
        self._hooks = hooks
        self._supervision = supervisor
        self._letters = letters
        self._journal = journal
        self._writes = writes
        self._pool = pool
        #: File changes a file_changed hook filtered out.
        self.filtered_count = 0

    async def inject(self, event: TriggerEvent) -> str:
        """Queue an event (after task_created); return its id. Never drops: see dead_letters."""
        if not isinstance(event, TriggerEvent):
            raise TypeError(f"inject() takes a TriggerEvent, got {type(event).__name__}")
        dead = self._letters.refuse
        if not self._accepts():
            dead(event, "process stopped", f"process is {self._live.state.value}", 0)
            return event.event_id
        try:
            gate = await self._task_created(event)
        except BaseException as exc:  # what the engine does not isolate: raise, keep the event
            self._not_queued(event, "task_created", exc)
            raise
        if gate.blocked:
            dead(event, "blocked by hook", gate.reason, 0)
            return event.event_id
        if not self._accepts():
            dead(event, "process stopped", "the process stopped during task_created", 0)
            return event.event_id
        stream = self._live.stream
        if stream is not None:  # the stream's holder reads it (here or on another host)
            if not await stream.add(event):
                size = self._live.config.max_queue_size
                dead(event, "queue full", f"the stream holds max_queue_size={size} events", 0)
            return event.event_id
        if self._journal is not None and not self._live.queue.full():
            # Waited for (off the loop, see _journaling): it raises, and the event is refused.
            stored = self.redactor.declared.value(event.to_dict())
            await self._writes.accept(event.event_id, self._journal.queued, stored, 0)
            if not self._accepts():
                dead(event, "process stopped", "the process stopped while journaling", 0)
                return event.event_id
        self.enqueue(event, 0, journaled=True)
        return event.event_id

    async def inject_trigger(
        self, trigger_id: str, trigger_type: str, payload: dict[str, Any]
    ) -> str:
        """Build a TriggerEvent of what a trigger saw and inject it; return its id."""
        return await self.inject(TriggerEvent(trigger_id, trigger_type, payload))

    def _accepts(self) -> bool:
        """Whether inject() takes events now. A clustered process takes them on every host
        while the cluster runs it (wherever that is), not only on the host holding it."""
        stream = self._live.stream
        if stream is not None:
            return stream.accepting
        return accepts_events(self._live.state, restarting=self._supervision.restarting)

    async def _task_created(self, event: TriggerEvent) -> DispatchResult:
        observer = self._live.observer
        accepting = (
            contextlib.nullcontext(Note())
            if observer is None
            else observer.accepted(
                self.name, event.event_id, event.trigger_id, event.trigger_type, event.traceparent
            )
        )
        token = CURRENT_EVENT.set((self.name, event.event_id))
        try:
            with accepting as note:
                gate = await self._hooks.task_created(event)
                if gate.blocked:
                    note.outcome, note.error = "blocked", self.redactor.text(gate.reason or "")
        finally:
            CURRENT_EVENT.reset(token)
        if note.traceparent is not None and event.traceparent is None:
            event.traceparent = note.traceparent  # its attempts join the trace it began
        return gate

    def enqueue(self, event: TriggerEvent, attempts: int, *, journaled: bool = False) -> bool:
        """Queue ``event`` (journaled) and wake the workers; False when the queue is full: it
        is dead-lettered.

        ``journaled`` (inject): its ``queued`` write was made already. A retry's or
        recovery's event is queued even if the write fails (see _journaling)."""
        queue = self._live.queue
        if queue.full():
            size = self._live.config.max_queue_size
            why = f"the queue holds max_queue_size={size} events"
            self._letters.refuse(event, "queue full", why, attempts)
            return False
        if self._journal is not None and not journaled:
            stored = self.redactor.declared.value(event.to_dict())
            self._writes.write(event.event_id, self._journal.queued, stored, attempts)
        queue.put_nowait((event, attempts))
        self._pool.wake()
        return True

    def _not_queued(self, event: TriggerEvent, hook: str, exc: BaseException) -> None:
        """Dead-letter ``event``, whose ``hook`` dispatch raised what the engine does not
        isolate, or was cut off by the stop (or crash) of the process or the removal of its
        trigger (its runner cancelled); not when the caller itself was cancelled, or the host
        goes down."""
        dead, state = self._letters.refuse, self._live.state
        if closing(exc):
            if state == ProcessState.FAILED:
                dead(event, "process failed", f"the process failed during {hook}", 0)
            elif self._live.stopping or state != ProcessState.RUNNING:
                dead(event, "process stopped", f"the process stopped during {hook}", 0)
            else:
                dead(event, "trigger removed", f"its trigger was removed during {hook}", 0)
        elif not is_fatal(exc):
            dead(event, "process failed", f"a {hook} hook raised {describe(exc)}", 0)

    async def file_changed(self, trigger_id: str, payload: dict[str, Any]) -> None:
        """A file-watch trigger saw a change: file_changed may filter it out, else it is
        injected."""
        event = TriggerEvent(trigger_id, "file_watch", payload)
        try:
            gate = await self._hooks.file_changed(event)
        except BaseException as exc:  # as in inject(): raise, keep the event
            self._not_queued(event, "file_changed", exc)
            raise
        if gate.blocked:
            self.filtered_count += 1
            path, why = self.redactor.text(f"{payload.get('path')}"), gate.reason or ""
            logger.info("file change %s filtered by hook: %s", path, self.redactor.text(why))
            return
        await self.inject(event)
