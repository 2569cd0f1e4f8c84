"""Hook-run history: a bounded in-memory ring per process, plus batched writes to a sink.

Recording sits on the dispatch hot path, so a run is kept as a plain tuple and turned into a
HookRun only when someone reads it or the batch is flushed (on a later loop iteration).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from ._events import HookEvent
from ._records import HookRun

if TYPE_CHECKING:
    from ._context import HookContext
    from ._manager import HookManager, _Hook

__all__ = ["HistoryRecorder", "filter_runs"]

logger = logging.getLogger("tether.hooks")

RING_SIZE: Final = 1000
BATCH: Final = 256
FLUSH_INTERVAL: Final = 0.5

# (recorded_at, hook_id, name, event, process, source, mode, outcome, duration_ms, error,
#  patch_applied, dispatch_id, depth, data_before, data_after)
Raw = tuple[float, str, str, str, str, str, str, str, float, "str | None", bool, str, int, Any, Any]


def _build(raw: Raw) -> HookRun:
    return HookRun(*raw)


def _source(manager: HookManager, hook: _Hook) -> str:
    owner = hook.manager
    if owner is manager:
        return hook.source
    if owner is manager._shared:
        return "shared"
    return "inherited"


class HistoryRecorder:
    """Records every hook execution of the dispatches of the manager it is attached to."""

    def __init__(
        self,
        process: str,
        *,
        size: int = RING_SIZE,
        redact: Callable[[str], str] | None = None,
        sink: Callable[[list[HookRun]], None] | None = None,
        trace: bool = False,
    ) -> None:
        self.process = process
        self._ring: deque[Raw] = deque(maxlen=size)
        self._redact = redact
        self._sink = sink
        self._pending: list[Raw] = []
        self._timer: asyncio.TimerHandle | None = None
        #: Keep each hook's data before and after (dry runs); off for ordinary history.
        self.trace = trace

    def _error_text(self, error: BaseException | None) -> str | None:
        if error is None:
            return None
        text = str(error) or type(error).__name__
        return self._redact(text) if self._redact is not None else text

    def _add(self, raw: Raw) -> None:
        self._ring.append(raw)
        if self._sink is not None:
            self._pending.append(raw)
            if len(self._pending) >= BATCH:
                self.flush()
            elif self._timer is None:
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:
                    self.flush()
                else:
                    self._timer = loop.call_later(FLUSH_INTERVAL, self.flush)

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
    ) -> None:
        duration = (time.perf_counter() - started) * 1e3
        data = ctx.data
        patch = False
        if outcome == "passed" and data != before:
            outcome = "applied"
            patch = ctx.event is HookEvent.USER_PROMPT_SUBMIT and data.get("prompt") != before.get(
                "prompt"
            )
        self._add(
            (
                time.time(),
                hook.hook_id,
                hook.name,
                ctx.event.value,
                self.process,
                _source(manager, hook),
                hook.mode,
                outcome,
                duration,
                self._error_text(error),
                patch,
                dispatch_id,
                depth,
                self._clean(before) if self.trace else None,
                self._clean(data) if self.trace else None,
            )
        )

    def _clean(self, data: dict[str, Any]) -> dict[str, Any]:
        from ._copy import copy_payload

        copied = copy_payload(data)
        if self._redact is None:
            return copied
        redact = self._redact

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        return {k: walk(v) for k, v in copied.items()}

    def _mark(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, outcome: str, d: str
    ) -> None:
        self._add(
            (
                time.time(),
                hook.hook_id,
                hook.name,
                ctx.event.value,
                self.process,
                _source(manager, hook),
                hook.mode,
                outcome,
                0.0,
                None,
                False,
                d,
                depth,
                None,
                None,
            )
        )

    def skipped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        self._mark(manager, hook, ctx, depth, "skipped", dispatch_id)

    def dropped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        self._mark(manager, hook, ctx, depth, "dropped", dispatch_id)

    def flush(self) -> None:
        """Hand pending records to the sink now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if pending and self._sink is not None:
            try:
                self._sink([_build(r) for r in pending])
            except Exception:
                logger.exception("writing %d hook-run records failed", len(pending))

    def runs(self, **filters: Any) -> list[HookRun]:
        """Recorded runs, oldest first (filters: event, outcome, hook, since, last)."""
        return filter_runs([_build(r) for r in self._ring], **filters)

    def __len__(self) -> int:
        return len(self._ring)


def _since(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def filter_runs(
    runs: list[HookRun],
    *,
    event: str | None = None,
    outcome: str | None = None,
    hook: str | None = None,
    since: Any = None,
    last: int | None = None,
) -> list[HookRun]:
    """Filter runs by event, outcome, hook (id or name), time; keep the ``last`` N."""
    start = _since(since)
    out = [
        r
        for r in runs
        if (event is None or r.event == event)
        and (outcome is None or r.outcome == outcome)
        and (hook is None or hook in (r.hook_id, r.hook_name))
        and (start is None or r.recorded_at >= start)
    ]
    if last is not None:
        out = out[-last:] if last > 0 else []
    return out
