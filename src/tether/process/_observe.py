"""Looking at a process's hooks: recorded runs and dry runs of its resolved chain."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..hooks import HookEvent, HookManager, HookRun

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks._history import HistoryRecorder
    from ..store import HistoryStore

__all__ = ["HookObservability"]


class HookObservability:
    """The hook-observability half of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        process_id: str
        hooks: HookManager
        history: HistoryRecorder
        redactor: Redactor
        _history_store: HistoryStore | None

    # -- hook observability ----------------------------------------------------------------

    def hook_runs(self, **filters: Any) -> list[HookRun]:
        """Recorded hook runs, oldest first (filters: event, outcome, hook, since, last).

        With a journal configured the SQLite history is read (it survives restarts);
        otherwise the in-memory ring.
        """
        if self._history_store is not None:
            self.history.flush()
            return self._history_store.query(self.name, **filters)
        return self.history.runs(**filters)

    async def dry_run(self, event: HookEvent | str, data: dict[str, Any]) -> dict[str, Any]:
        """Push a sample event through the resolved chain (command hooks really run).

        Nothing is queued and the agent is not touched; once hooks are not consumed and async
        hooks run inline. Returns the per-hook trace and the final decision.
        """
        from ..hooks._history import HistoryRecorder

        tracer = HistoryRecorder(
            self.name, redact=self.redactor.text if self.redactor else None, trace=True
        )
        result = await self.hooks.dispatch(
            event,
            self.redactor.value(data) if self.redactor else data,
            process_id=self.name,
            metadata={"process_name": self.name, "process_id": self.process_id},
            recorder=tracer,
            dry_run=True,
        )
        return {
            "event": str(event),
            "blocked": result.blocked,
            "reason": result.reason,
            "fired": result.fired,
            "errors": [
                {"hook_id": hook_id, "error": self.redactor.text(str(exc))}
                for hook_id, exc in result.errors
            ],
            "data": self.redactor.value(result.data) if self.redactor else result.data,
            "trace": [run.as_dict() for run in tracer.runs()],
        }
