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

In a cluster the same is kept in Redis (``use``: ``store._redis_steps``, written from a thread
of its own, fenced by the holder's token): the host that takes the process over restores the
conversation, the state and the pending approvals, and resumes the runs it reclaimed. A
failed write there is counted with the process's own (``status()``'s ``journal_errors``); one
fenced (the lease another host's) is not an error.

Secrets declared to the process are redacted in what is written (as in the event journal).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..agent import RunSteps, describe_step
from ._approvals import ApprovalDesk
from ._run_journal import RunJournal
from ._saved_context import SavedContext

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentContext
    from ..store import StepJournal
    from ._config import ProcessConfig
    from ._journaling import JournalWrites

__all__ = ["DurableRuns"]

Found = dict[str, tuple[str, dict[str, Any]]]

#: Runs ended whose steps are forgotten in one write.
FORGET_BATCH: Final = 32


class DurableRuns:
    """The runs' steps and the context of one process (see the module docstring); ``store``
    is None without a journal (runs get their idempotency keys, nothing is written)."""

    def __init__(
        self,
        name: str,
        store: StepJournal | None,
        writes: JournalWrites,
        context: AgentContext,
        redactor: Redactor,
    ) -> None:
        self.name = name
        self._store = store
        self._writes = self._process_writes = writes
        self._context = context
        self._redactor = redactor
        #: The steps of each run under way or cut off, by event id (with a journal only).
        self._runs: dict[str, Found] = {}
        self._saved = SavedContext(store, writes, context, redactor) if store is not None else None
        #: The approvals the runs wait on (journaled with the steps).
        self.approvals = ApprovalDesk(store, writes)
        #: The journal writes of each run under way or cut off, by event id.
        self._journals: dict[str, RunJournal] = {}
        #: Runs ended whose steps are not forgotten yet (see ended; replaced as a whole).
        self._ended: tuple[tuple[str, float], ...] = ()

    @property
    def store(self) -> StepJournal | None:
        """The step store (None: no journal, or ``durable_steps`` off)."""
        return self._store

    def use(self, store: StepJournal, writes: JournalWrites) -> None:
        """Journal to ``store`` through ``writes`` from now on, starting afresh: a cluster's
        Redis (``tether.cluster``), set by each takeover before the process starts, and read
        by its ``recover``. The process's journal writes count the failures of ``writes``
        (and of those of every earlier takeover) with their own."""
        writes.count_in(self._process_writes)
        self._store, self._writes = store, writes
        self._runs.clear()
        self._journals.clear()
        self._ended = ()
        self._saved = SavedContext(store, writes, self._context, self._redactor)
        self.approvals = ApprovalDesk(store, writes)

    def close(self) -> None:
        """At a stop, once the journal writer is done: write the steps held and the context
        left to save, and give the file back."""
        for journal in list(self._journals.values()):
            self._last_write(journal.event_id, journal.write_held)
        if self._store is not None:
            with contextlib.suppress(sqlite3.Error):  # housekeeping: done at a later stop
                self._store.prune()
        if self._saved is not None:
            self._last_write("context", self._saved.close)
        if self._store is not None:
            self._store.close()

    def _last_write(self, about: str, write: Callable[[], None]) -> None:
        """A write the stop makes itself: one that fails (the file locked, Redis gone) is
        logged and counted as any journal write is, not raised into the stop (the file is
        still given back)."""
        try:
            write()
        except Exception as exc:
            self._writes.failed(about, write.__name__, exc)

    def for_run(self, event_id: str) -> RunSteps:
        """The steps of a run of ``event_id``: those of an earlier run of it cut off (by a
        crash, here or in the process before), and where the new ones go."""
        scope = f"{self.name}\x00{self._redactor.declared.text(event_id)}"
        store = self._store
        if store is None:
            return RunSteps(scope)
        found = self._runs.setdefault(event_id, {})
        journal = self._journals[event_id] = RunJournal(
            event_id,
            found,
            store,
            self._writes,
            self._redactor.declared.value,
            self._saved.changed_state if self._saved is not None else lambda: None,
        )
        return RunSteps(scope, found, record=journal.record, land=journal.land)

    def ended(self, event_id: str, *, saved: bool = True) -> None:
        """The run of ``event_id`` ended (done or failed): its steps go (``FORGET_BATCH`` runs
        at a time: the steps of an event no longer in the journal are never read again);
        ``saved``: the context is saved (the conversation may have grown)."""
        store = self._store
        if store is None:
            return
        journal = self._journals.pop(event_id, None)
        # Not written: its steps are forgotten; a state held with them is saved below.
        if journal is not None and journal.drop() and self._saved is not None:
            self._saved.state_unsaved()
        if self._runs.pop(event_id, None):
            self._ended += ((event_id, time.time()),)
            if not saved or len(self._ended) >= FORGET_BATCH:  # a failed run's: at once
                ended, self._ended = list(self._ended), ()
                self._writes.write("steps", store.forget, ended)
        if saved:
            self.save()

    def save(self) -> None:
        """Save what changed in the conversation and the state (off the loop)."""
        if self._saved is not None:
            self._saved.save()

    def recover(self, recovered: dict[str, Any] | None) -> dict[str, Any] | None:
        """Restore the context and load the steps of the events ``recovered`` (what the event
        journal's recovery said): their runs resume. Returns ``recovered`` with ``resumed``
        (each resumed run's event id and last finished step) when one resumes."""
        store = self._store
        if store is None:
            return recovered
        if self._saved is not None:
            self._saved.restore()
        self.approvals.load()
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


def durable_runs(
    name: str, config: ProcessConfig, writes: JournalWrites, context: AgentContext
) -> DurableRuns:
    """The DurableRuns of a process: with its journal's step store when it has one."""
    store = None
    if config.journal_path and config.durable_steps:
        from ..store import StepStore

        store = StepStore(config.journal_path, name, redact=writes.redactor.declared.text)
    return DurableRuns(name, store, writes, context, writes.redactor)
