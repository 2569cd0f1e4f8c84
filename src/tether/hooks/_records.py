"""Hook-run records: what one hook execution did (the engine's side of run history)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from ._context import HookContext
    from ._hook import _Hook
    from ._manager import HookManager

__all__ = ["HEADER", "OUTCOMES", "HookRun", "RunRecorder"]

#: Every outcome a hook run can have.
OUTCOMES = ("applied", "passed", "blocked", "failed", "timed_out", "skipped", "dropped")

#: A recorded dispatch's marks begin with its number, start time, manager, event, depth, chain
#: and first snapshot (None unless tracing); each hook's marks follow (see HookManager.dispatch).
HEADER: Final = 7


@dataclass(slots=True)
class HookRun:
    """One hook execution within a dispatch.

    ``required`` is the hook's ``fail_closed`` (its failure or timeout blocks a blockable
    event); None in a record stored before runs said so. ``duration_shared``: the hook was
    timed together with others of its dispatch (a chain found fast every time is timed once,
    at its end) and its duration is its even share of their time.
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

    def as_dict(self) -> dict[str, Any]:
        from datetime import UTC, datetime

        out = {k: getattr(self, k) for k in self.__slots__}
        out["recorded_at"] = datetime.fromtimestamp(self.recorded_at, UTC).isoformat()
        return out


HookRun.__module__ = "tether"


class RunRecorder(Protocol):
    """Receives every hook execution of the dispatches of the manager it is attached to."""

    def ran(
        self,
        manager: HookManager,
        hook: _Hook,
        ctx: HookContext,
        depth: int,
        outcome: str,
        started: float,
        error: BaseException | None,
        before: dict[str, Any],
        dispatch_id: str = "",
    ) -> None: ...

    trace: bool

    #: Records one dispatch's raw entry: its marks list (see HookManager.dispatch and
    #: HEADER).
    add: Callable[[tuple[Any, ...] | list[Any]], None]

    def skipped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None: ...
