"""Hook-run records: what one hook execution did (the engine's side of run history)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["OUTCOMES", "HookRun"]

#: Every outcome a hook run can have.
OUTCOMES = ("applied", "passed", "blocked", "failed", "timed_out", "skipped", "dropped")


@dataclass(slots=True)
class HookRun:
    """One hook execution within a dispatch.

    ``required`` is the hook's ``fail_closed`` (its failure or timeout blocks a blockable
    event); None in a record stored before runs said so. ``duration_ms`` is the hook's own,
    measured with ``time.perf_counter``; ``duration_shared`` is kept for the readers of older
    records (it said a duration was a share of a chain's) and is always False now.
    ``changes`` says who rewrote what: each top-level key the hook changed, with its value
    ``before`` and ``after`` (a key it added has no ``before``, one it removed no ``after``),
    redacted as the rest of the record; None when it changed nothing (or was not recorded so).
    ``notice`` is what the hook told the operator (``HookContext.notify``: a Claude Code hook's
    ``systemMessage``, the ``stopReason`` of one that ended the run), redacted; None if nothing.
    """

    recorded_at: float
    hook_id: str
    hook_name: str
    event: str
    process_id: str
    source: str
    mode: str
    outcome: str
    duration_ms: float
    error: str | None
    patch_applied: bool
    dispatch_id: str
    dispatch_depth: int
    data_before: dict[str, Any] | None = None
    data_after: dict[str, Any] | None = None
    required: bool | None = None
    duration_shared: bool = False
    changes: dict[str, dict[str, Any]] | None = None
    notice: str | None = None

    def as_dict(self) -> dict[str, Any]:
        from datetime import UTC, datetime

        out = {k: getattr(self, k) for k in self.__slots__}
        out["recorded_at"] = datetime.fromtimestamp(self.recorded_at, UTC).isoformat()
        return out


HookRun.__module__ = "tether"
