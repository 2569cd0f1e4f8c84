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

from ._events import BLOCKABLE_EVENTS as _B
from ._events import HookEvent
from ._records import HookRun

if TYPE_CHECKING:
    from ._context import HookContext
    from ._hook import _Hook
    from ._manager import HookManager

__all__ = ["HistoryRecorder", "filter_runs"]

logger = logging.getLogger("tether.hooks")

RING_SIZE: Final = 1000
BATCH: Final = 256
FLUSH_INTERVAL: Final = 0.5
#: Dispatches between two readings of the wall clock against the perf counter.
OFFSET_EVERY: Final = 256

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
    """Records every hook execution of the dispatches of the manager it is attached to.

    The ring holds the last ``size`` entries, an entry being one dispatch (all its hook runs)
    or one background-hook run.
    """

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
        self._ring: deque[tuple[Any, ...]] = deque(maxlen=size)
        self._redact = redact
        self._sink = sink
        self._pending: list[tuple[Any, ...]] = []
        self._timer: asyncio.TimerHandle | None = None
        #: Keep each hook's data before and after (dry runs); off for ordinary history.
        self.trace = trace
        self._offset = time.time() - time.perf_counter()
        self._count = 0

    # -- recording (hot path: store, do not build) -------------------------------------------

    def _add(self, entry: tuple[Any, ...]) -> None:
        self._ring.append(entry)
        if self._sink is not None:
            self._queue(entry)

    def _queue(self, entry: tuple[Any, ...]) -> None:
        """Batch an entry for the sink: written when BATCH are pending or FLUSH_INTERVAL later."""
        self._pending.append(entry)
        if len(self._pending) >= BATCH:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
            else:
                self._timer = loop.call_later(FLUSH_INTERVAL, self.flush)

    def dispatched(
        self,
        manager: HookManager,
        ctx: HookContext,
        depth: int,
        dispatch_id: int,
        started: float,
        first: tuple[Any, Any],
        hooks: tuple[_Hook, ...],
        marks: list[Any],
        notes: dict[int, tuple[Any, ...]],
    ) -> None:
        """One synchronous chain: ``marks[i]`` is when ``hooks[i]`` ended (None: it did not run);
        ``notes`` holds what was not plain about the hook at that index (see
        HookManager.dispatch)."""
        if marks:
            # The wall-clock time of ``started`` (runs are dated start + their perf offset),
            # from a clock offset refreshed every OFFSET_EVERY dispatches.
            self._count += 1
            if self._count >= OFFSET_EVERY:
                self._count = 0
                self._offset = time.time() - time.perf_counter()
            entry = (
                "d",
                started + self._offset,
                manager,
                ctx.event,
                dispatch_id,
                depth,
                started,
                first,
                hooks,
                marks,
                notes,
            )
            self._ring.append(entry)
            if self._sink is not None:
                self._queue(entry)

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
        """One background (async) hook run."""
        duration = (time.perf_counter() - started) * 1e3
        if outcome == "passed" and ctx.data != before:
            outcome = "applied"
        after = dict(ctx.data) if self.trace else None
        self._add(
            (
                "r",
                time.time(),
                manager,
                hook,
                ctx.event,
                outcome,
                duration,
                error,
                dispatch_id,
                depth,
                before if self.trace else None,
                after,
            )
        )

    def _mark(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, outcome: str, d: str
    ) -> None:
        self._add(
            ("r", time.time(), manager, hook, ctx.event, outcome, 0.0, None, d, depth, None, None)
        )

    def skipped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        self._mark(manager, hook, ctx, depth, "skipped", dispatch_id)

    def dropped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        self._mark(manager, hook, ctx, depth, "dropped", dispatch_id)

    # -- building records (off the hot path) ----------------------------------------------------

    def _error_text(self, error: BaseException | None) -> str | None:
        if error is None:
            return None
        text = str(error) or type(error).__name__
        return self._redact(text) if self._redact is not None else text

    def _clean(self, data: dict[str, Any] | None) -> dict[str, Any] | None:
        if data is None or self._redact is None:
            return data
        redact = self._redact

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        return {k: walk(v) for k, v in data.items()}

    def _run(
        self,
        at: float,
        manager: HookManager,
        hook: _Hook,
        event: HookEvent,
        outcome: str,
        duration: float,
        error: BaseException | None,
        patch: bool,
        dispatch_id: str,
        depth: int,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> HookRun:
        return HookRun(
            at,
            hook.hook_id,
            hook.name,
            event.value,
            self.process,
            _source(manager, hook),
            hook.mode,
            outcome,
            duration,
            self._error_text(error),
            patch,
            dispatch_id,
            depth,
            self._clean(before),
            self._clean(after),
        )

    def _expand(self, entry: tuple[Any, ...]) -> list[HookRun]:
        if entry[0] == "r":
            _, wall, manager, hook, event, outcome, duration, error, did, depth, before, after = (
                entry
            )
            run = self._run(
                wall,
                manager,
                hook,
                event,
                outcome,
                duration,
                error,
                False,
                did,
                depth,
                before,
                after,
            )
            return [run]
        from ._hook import _run_id

        _, wall, manager, event, number, depth, t0, (prompt, snap), hooks, times, notes = entry
        marks = [
            (hooks[i], t, *notes[i]) if i in notes else (hooks[i], t)
            for i, t in enumerate(times)
            if t is not None
        ]
        if not marks:
            return []
        did = _run_id(number)
        prompts = event is HookEvent.USER_PROMPT_SUBMIT
        last = marks[-1]
        ended_blocked = len(last) == 7 and (
            last[3] == "blocked" or (last[3] is not None and last[0].fail_closed and event in _B)
        )
        runs: list[HookRun] = []
        prev_t, prev_v = t0, 0
        for mark in marks:
            hook, t = mark[0], mark[1]
            at = wall + (t - t0)
            if len(mark) == 3:  # (hook, t, "skipped")
                runs.append(
                    self._run(
                        at,
                        manager,
                        hook,
                        event,
                        "skipped",
                        0.0,
                        None,
                        False,
                        did,
                        depth,
                        None,
                        None,
                    )
                )
                prev_t = t
                continue
            if len(mark) == 2:  # plain: nothing changed, nothing to note
                version, outcome, error, new_prompt, new_snap = prev_v, None, None, prompt, snap
            else:
                _, _, version, outcome, error, new_prompt, new_snap = mark
            changed = version == -1 or version != prev_v
            if outcome is None:
                outcome = "applied" if changed else "passed"
            patch = prompts and outcome == "applied" and not ended_blocked and new_prompt != prompt
            runs.append(
                self._run(
                    at,
                    manager,
                    hook,
                    event,
                    outcome,
                    (t - prev_t) * 1e3,
                    error,
                    bool(patch),
                    did,
                    depth,
                    snap,
                    new_snap,
                )
            )
            prev_t, prev_v = t, (0 if version == -1 else version)
            prompt, snap = new_prompt, new_snap
        return runs

    def flush(self) -> None:
        """Hand pending records to the sink now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if pending and self._sink is not None:
            try:
                self._sink([run for entry in pending for run in self._expand(entry)])
            except Exception:
                logger.exception("writing hook-run records failed")

    def runs(self, **filters: Any) -> list[HookRun]:
        """Recorded runs, oldest first (filters: event, outcome, hook, since, last).

        The ring holds entries in the order they finished (a nested dispatch before the one it
        ran in, background runs whenever they end); runs are sorted by time, as the store is.
        """
        runs = [run for entry in self._ring for run in self._expand(entry)]
        runs.sort(key=_recorded_at)
        return filter_runs(runs, **filters)

    def __len__(self) -> int:
        return sum(sum(t is not None for t in e[9]) if e[0] == "d" else 1 for e in self._ring)


def _recorded_at(run: HookRun) -> float:
    return run.recorded_at


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
