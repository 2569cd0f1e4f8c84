"""Looking at a process's hooks: recorded runs and dry runs of its resolved chain."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..hooks import DRY_RUN_KEY, HookEvent, HookManager, HookRun
from ._state import ProcessState

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks import HistoryRecorder
    from ..store import HistoryStore
    from ._state import LiveState

__all__ = ["HookInspector", "withhold"]

#: The effects the hooks of the dry run under way asked for and did not get (None outside one).
#: It only collects notes: whether an effect is withheld is decided by the context's metadata,
#: so a task that inherits this variable (one a hook started) never withholds a real effect.
_withheld: ContextVar[list[dict[str, Any]] | None] = ContextVar("tether_withheld", default=None)


def _aware(since: str | datetime) -> datetime:
    """``since`` as an aware datetime: text without an offset is UTC (as over HTTP and in the
    CLI), a naive datetime local time (as Python has it)."""
    if isinstance(since, datetime):
        return since if since.tzinfo is not None else since.astimezone()
    parsed = datetime.fromisoformat(since.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def withhold(note: dict[str, Any]) -> None:
    """Add a JSON-ready note to the answer of the dry run under way (dropped outside one)."""
    notes = _withheld.get()
    if notes is not None:
        notes.append(note)


class HookInspector:
    """A process's hook runs as recorded, and dry runs of its resolved chain.

    Reads only what it is handed: the process's name and id, its hooks, their history (and
    the SQLite store behind it), its redactor and its state (``live``: a stopped process's
    read leaves the history file closed again).
    """

    def __init__(
        self,
        name: str,
        process_id: str,
        hooks: HookManager,
        history: HistoryRecorder,
        redactor: Redactor,
        store: HistoryStore | None,
        live: LiveState,
    ) -> None:
        self.name = name
        self.process_id = process_id
        self.hooks = hooks
        self.history = history
        self.redactor = redactor
        self.store = store
        self._live = live

    def hook_runs(self, **filters: Any) -> list[HookRun]:
        """Recorded hook runs, oldest first (filters: event, outcome, hook, since, last).

        With a journal configured the SQLite history is read (it survives restarts);
        otherwise the in-memory ring. ``since`` given as a time (ISO text, UTC without an
        offset, or a datetime) is compared with the time each run shows, to the microsecond:
        the ``recorded_at`` a run shows, given back, finds that run.
        """
        since = filters.get("since")
        if not isinstance(since, str | datetime):
            return self._hook_runs(**filters)
        when = _aware(since)
        # A run is timed finer than it shows: look a microsecond further back, and drop the
        # runs found that show an earlier time. Those are the oldest found, so the last N
        # kept are the last N at or after ``when``.
        runs = self._hook_runs(**{**filters, "since": when.timestamp() - 1e-6})
        return [r for r in runs if datetime.fromtimestamp(r.recorded_at, UTC) >= when]

    def _hook_runs(self, **filters: Any) -> list[HookRun]:
        store = self.store
        if store is not None:
            self.history.flush()  # off the loop while the process runs: not waited for
            try:
                return self.history.with_unwritten(store.query(self.name, **filters), **filters)
            finally:
                if self._live.state == ProcessState.STOPPED:  # then it holds no file open
                    store.close()
        return self.history.runs(**filters)

    async def dry_run(self, event: HookEvent | str, data: dict[str, Any]) -> dict[str, Any]:
        """Push a sample event through the resolved chain (command hooks really run).

        Nothing is queued and the agent is not touched; once hooks are not consumed and async
        hooks run inline. Every hook sees ``metadata["dry_run"] = True`` (plugins: ``ctx.dry_run``):
        a plugin's ``converse`` raises without calling the model, and its warnings and
        artifacts are not kept but answered under ``withheld``, one note each (``hook_name``,
        ``action``: ``warn`` or ``emit_artifact``, ``task_id``, and ``message`` or ``artifact``
        and ``payload``). Returns the per-hook trace and the final decision (``decision``:
        ``blocked`` or ``allowed``, as ``blocked`` says; ``reason`` when blocked).
        """
        from ..hooks import HistoryRecorder

        tracer = HistoryRecorder(
            self.name, redact=self.redactor.text if self.redactor else None, trace=True
        )
        notes: list[dict[str, Any]] = []
        token = _withheld.set(notes)
        try:
            result = await self.hooks.dispatch(
                event,
                self.redactor.declared.value(data),
                process_id=self.name,
                metadata={
                    "process_name": self.name,
                    "process_id": self.process_id,
                    DRY_RUN_KEY: True,
                },
                recorder=tracer,
                dry_run=True,
            )
        finally:
            _withheld.reset(token)
        trace = [run.as_dict() for run in tracer.runs()]
        fired = result.fired
        errors = [
            {"hook_id": hook_id, "error": self.redactor.text(str(exc))}
            for hook_id, exc in result.errors
        ]
        # The async hooks ran inline, after the chain the result counts: count them too (their
        # trace's error text is redacted already).
        for run in trace:
            if run["mode"] == "async" and run["outcome"] not in ("skipped", "dropped"):
                fired += 1
                if run["outcome"] in ("failed", "timed_out"):
                    errors.append({"hook_id": run["hook_id"], "error": run["error"]})
        return {
            "event": str(event),
            "blocked": result.blocked,
            "decision": "blocked" if result.blocked else "allowed",
            # A block reason is a hook's own text: it may quote a value the hook was handed.
            "reason": self.redactor.text(result.reason) if result.reason else result.reason,
            "fired": fired,
            "errors": errors,
            "data": self.redactor.value(result.data) if self.redactor else result.data,
            "trace": trace,
            "withheld": notes,
        }
