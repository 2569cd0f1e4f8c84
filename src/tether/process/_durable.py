"""Durable runs: the step journal of a process's runs, and its conversation and state.

With a journal, each run's steps (model answers asking for tools, tool calls started and
finished: see ``tether.agent._steps``) are written to the same SQLite file as the events,
through the process's journal writer (``JournalWrites``): in order, off the loop, a failed
write counted and logged, never raised. A tool call's ``started`` is waited for before the
tool runs; the rest is not (a write lost to a crash makes the step run again, or, for a call,
its outcome unknown: never a call run twice unasked).

A run's steps are forgotten when it ends (done, or failed: a retry starts afresh, its calls
keeping their idempotency keys). A run cut off by a crash keeps them: the next process over
the file resumes it from its last finished step, and so does a run of the same event again in
this process (a crash's restart).

The conversation buffer and the state dict are saved when a run ends, and the state after
each tool call that changed it; the first start over the file restores them. Saves are
coalesced: one waiting on the writer thread takes the newest snapshot when it runs.

Secrets declared to the process are redacted in what is written (as in the event journal).
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from ..agent._steps import RunSteps, describe_step

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentContext
    from ..store._steps import StepStore
    from ._config import ProcessConfig
    from ._journaling import JournalWrites

__all__ = ["DurableRuns"]

Found = dict[str, tuple[str, dict[str, Any]]]


class DurableRuns:
    """The runs' steps and the context of one process (see the module docstring); ``store``
    is None without a journal (runs get their idempotency keys, nothing is written)."""

    def __init__(
        self,
        name: str,
        store: StepStore | None,
        writes: JournalWrites,
        context: AgentContext,
        redactor: Redactor,
    ) -> None:
        self.name = name
        self._store = store
        self._writes = writes
        self._context = context
        self._redactor = redactor
        #: The steps of each run under way or cut off, by event id (with a journal only).
        self._runs: dict[str, Found] = {}
        self._saver = _ContextSaver(store, writes) if store is not None else None

    @property
    def store(self) -> StepStore | None:
        """The step store (None: no journal, or ``durable_steps`` off)."""
        return self._store

    def for_run(self, event_id: str) -> RunSteps:
        """The steps of a run of ``event_id``: those of an earlier run of it cut off (by a
        crash, here or in the process before), and where the new ones go."""
        scope = f"{self.name}\x00{self._redactor.declared.text(event_id)}"
        store = self._store
        if store is None:
            return RunSteps(scope)
        found = self._runs.setdefault(event_id, {})
        writes, shown = self._writes, self._redactor.declared.value

        def record(step: str, state: str, data: dict[str, Any]) -> None:
            writes.write(event_id, store.write, event_id, step, state, shown(data))
            if state == "done" and step.startswith("tool:"):
                self._state_changed()

        async def land(step: str, state: str, data: dict[str, Any]) -> None:
            await writes.landed(event_id, store.write, event_id, step, state, shown(data))

        return RunSteps(scope, found, record=record, land=land)

    def ended(self, event_id: str, *, saved: bool = True) -> None:
        """The run of ``event_id`` ended (done or failed): its steps go; ``saved``: the
        context is saved (the conversation may have grown)."""
        store = self._store
        if store is None:
            return
        found = self._runs.pop(event_id, None)
        if found:
            self._writes.write(event_id, store.forget, event_id)
        if saved:
            self.save()

    def save(self) -> None:
        """Save the conversation and the state (coalesced, off the loop)."""
        if self._saver is not None:
            shown = self._redactor.declared.value
            self._saver.offer(
                json.dumps(shown(self._context.conversation.messages), default=str),
                json.dumps(shown(self._context.state), default=str),
            )

    def _state_changed(self) -> None:
        if self._saver is not None:
            state = json.dumps(self._redactor.declared.value(self._context.state), default=str)
            if state != self._saver.state:
                self._saver.offer(None, state)

    def recover(self, recovered: dict[str, Any] | None) -> dict[str, Any] | None:
        """Restore the context and load the steps of the events ``recovered`` (what the event
        journal's recovery said): their runs resume. Returns ``recovered`` with ``resumed``
        (each resumed run's event id and last finished step) when one resumes."""
        store = self._store
        if store is None:
            return recovered
        conversation, state = store.context()
        if conversation is not None:
            self._context.conversation.messages[:] = conversation
        if state is not None:
            self._context.state.clear()
            self._context.state.update(state)
        if self._saver is not None:
            self._saver.state = json.dumps(state, default=str) if state is not None else None
        self._writes.write("steps", store.prune)
        if recovered is None:
            return None
        resumed: list[dict[str, Any]] = []
        for event_id in recovered["event_ids"]:
            found = store.steps(event_id)
            if not found:
                continue
            self._runs[event_id] = found
            done = [step for step, (state, _) in found.items() if state == "done"]
            resumed.append(
                {"event_id": event_id, "from_step": describe_step(done[-1]) if done else None}
            )
        return {**recovered, "resumed": resumed} if resumed else recovered


class _ContextSaver:
    """Coalesced saves of the context: at most one waits on the writer thread, and it writes
    the newest snapshot offered (None parts: unchanged)."""

    def __init__(self, store: StepStore, writes: JournalWrites) -> None:
        self._store = store
        self._writes = writes
        self._lock = threading.Lock()
        self._next: tuple[str | None, str | None] | None = None
        #: The last state offered (JSON), to save it only when it changed.
        self.state: str | None = None

    def offer(self, conversation: str | None, state: str | None) -> None:
        if state is not None:
            self.state = state
        with self._lock:
            waiting = self._next is not None
            if waiting:
                assert self._next is not None
                old_conversation, _ = self._next
                conversation = conversation if conversation is not None else old_conversation
            self._next = (conversation, state if state is not None else self._next_state())
        if not waiting:
            self._writes.write("context", self._save)

    def _next_state(self) -> str | None:
        return self._next[1] if self._next is not None else None

    def _save(self) -> None:  # the writer's thread
        with self._lock:
            taken, self._next = self._next, None
        if taken is not None:
            self._store.save_context(*taken)


def durable_runs(
    name: str, config: ProcessConfig, writes: JournalWrites, context: AgentContext
) -> DurableRuns:
    """The DurableRuns of a process: with its journal's step store when it has one."""
    store = None
    if config.journal_path and config.durable_steps:
        from ..store._steps import StepStore

        store = StepStore(config.journal_path, name, redact=writes.redactor.declared.text)
    return DurableRuns(name, store, writes, context, writes.redactor)
