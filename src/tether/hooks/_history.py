"""Hook-run history: a bounded in-memory ring per process, plus batched writes to a sink.

Recording sits on the dispatch hot path, so a run is kept as a plain tuple and turned into a
HookRun only when someone reads it or the batch is flushed (on a later loop iteration).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any, Final

from ._events import BLOCKABLE_EVENTS as _B
from ._events import HookEvent
from ._records import HEADER, HookRun
from ._tracked import register_yaml

if TYPE_CHECKING:
    from ._context import HookContext
    from ._hook import _Hook
    from ._manager import HookManager

__all__ = ["HistoryRecorder", "filter_runs"]

logger = logging.getLogger("tether.hooks")

RING_SIZE: Final = 1000
#: What the ring holds: a dispatch's marks (a list), or a background run (a tuple, "r" first).
Entry = tuple[Any, ...] | list[Any]
BATCH: Final = 256
FLUSH_INTERVAL: Final = 0.5


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
        register_yaml()  # hooks may yaml.safe_dump the recorded (tracked) data
        self.process = process
        self._ring: deque[Entry] = deque(maxlen=size)
        self._redact = redact
        self._sink = sink
        self._pending: list[Entry] = []
        #: Entries a failed write held back: a full batch is BATCH more than these, so a
        #: broken store is retried on the timer, not on every dispatch.
        self._held = 0
        self._timer: asyncio.TimerHandle | None = None
        #: Keep each hook's data before and after (dry runs); off for ordinary history.
        self.trace = trace
        #: Records one raw entry (see HookManager.dispatch): the ring's own append when
        #: nothing else is to be done, so a dispatch pays for a C call only.
        self.add: Callable[[Entry], None] = self._ring.append if sink is None else self._add
        self._listeners: list[tuple[Callable[..., None], bool]] = []

    def add_listener(self, listener: Callable[..., None], *, lazy: bool = False) -> None:
        """Call ``listener`` with the HookRuns of each dispatch (or background run) as it is
        recorded, in the task that dispatched (telemetry parents its spans there).

        The records are built at once for a listener; with ``lazy`` it gets a function that
        builds them instead, to call when (and if) it needs them. A listener that raises is
        logged and never fails the dispatch.
        """
        self._listeners.append((listener, lazy))
        self.add = self._add

    def remove_listener(self, listener: Callable[..., None]) -> None:
        """Stop calling ``listener`` (a listener not added: nothing happens)."""
        self._listeners = [entry for entry in self._listeners if entry[0] != listener]

    # -- recording (hot path: store, do not build) -------------------------------------------

    def _add(self, entry: Entry) -> None:
        self._ring.append(entry)
        if self._sink is not None:
            self._queue(entry)
        if self._listeners:
            runs: list[HookRun] | None = None
            for listener, lazy in list(self._listeners):  # a listener may remove itself
                try:
                    if lazy:
                        listener(functools.partial(self._expand, entry))
                    else:
                        runs = self._expand(entry) if runs is None else runs
                        listener(runs)
                except Exception:
                    logger.exception("a hook-run listener failed")

    def _queue(self, entry: Entry) -> None:
        """Batch an entry for the sink: written when BATCH are pending or FLUSH_INTERVAL later."""
        self._pending.append(entry)
        if len(self._pending) >= self._held + BATCH:
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
                False,  # patch_applied: a background hook's changes are never used
                dispatch_id,
                depth,
                before if self.trace else None,
                after,
            )
        )

    def skipped(
        self, manager: HookManager, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        """A background hook whose matcher did not match (it took no queue slot)."""
        self._add(
            (
                "r",
                time.time(),
                manager,
                hook,
                ctx.event,
                "skipped",
                0.0,
                None,
                False,
                dispatch_id,
                depth,
                None,
                None,
            )
        )

    # -- building records (off the hot path) ----------------------------------------------------

    def _text(self, text: str) -> str:
        return self._redact(text) if self._redact is not None else text

    def _error_text(self, error: BaseException | None) -> str | None:
        if error is None:
            return None
        return self._text(str(error) or type(error).__name__)

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
        shared: bool = False,
    ) -> HookRun:
        # Every free-text field is redacted: the error, the data, and the name (a command
        # hook's is its command line). The others are ids and fixed words no secret reaches.
        return HookRun(
            at,
            hook.hook_id,
            self._text(hook.name),
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
            hook.fail_closed,
            shared,
        )

    def _expand(self, entry: Entry) -> list[HookRun]:
        """The HookRuns of one raw entry (see HookManager.dispatch)."""
        if isinstance(entry, tuple):  # a background run: "r" and the arguments of _run
            return [self._run(*entry[1:])]
        from ._hook import _number, _run_id

        marks = entry  # a dispatch's marks: see HookManager.dispatch
        _, t0, manager, event, depth, hooks, snap = marks[:HEADER]
        steps, prompt = _steps(hooks, marks, t0)
        if not steps:
            return []
        did = _run_id(_number(marks))
        prompts = event is HookEvent.USER_PROMPT_SUBMIT
        last_hook, _, last_outcome, *_ = steps[-1]
        ended_blocked = last_outcome == "blocked" or (
            last_outcome in ("failed", "timed_out") and last_hook.fail_closed and event in _B
        )
        # A prompt change is used only if the chain ends with a prompt other than the first one
        # (a change a later hook undid was not used).
        # (A prompt left other than a string is one the process does not read back.)
        final = steps[-1][5]
        used = prompts and not ended_blocked and isinstance(final, str) and final != prompt
        runs: list[HookRun] = []
        prev_t = t0
        for hook, t, outcome, error, changed, new_prompt, new_snap, shared in steps:
            if outcome == "skipped":
                duration = 0.0
            else:
                if outcome is None:
                    outcome = "applied" if changed else "passed"
                duration = max(0.0, t - prev_t) * 1e3  # a wall clock may step back
            patch = used and outcome == "applied" and new_prompt != prompt
            runs.append(
                self._run(
                    t,
                    manager,
                    hook,
                    event,
                    outcome,
                    duration,
                    error,
                    bool(patch),
                    did,
                    depth,
                    snap if outcome != "skipped" else None,
                    new_snap if outcome != "skipped" else None,
                    shared,
                )
            )
            prev_t = t
            if outcome != "skipped":
                prompt = new_prompt
                if new_snap is not None:
                    snap = new_snap
        return runs

    def flush(self) -> None:
        """Hand pending records to the sink now.

        A write that fails (a file locked past its busy timeout, say) is logged and its
        entries are kept for the next flush, the newest ``size`` of them at most (the ring's
        size), so a store that is back gets them and one that stays broken holds little.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, []
        if pending and self._sink is not None:
            try:
                self._sink([run for entry in pending for run in self._expand(entry)])
            except Exception:
                logger.exception("writing hook-run records failed; kept for the next write")
                kept = pending + self._pending  # (a sink may record while it writes)
                self._pending = kept[-self._ring.maxlen :] if self._ring.maxlen else kept
                self._held = len(self._pending)
            else:
                self._held = 0

    def runs(self, **filters: Any) -> list[HookRun]:
        """Recorded runs, oldest first (filters: event, outcome, hook, since, last).

        The ring holds entries in the order they finished (a nested dispatch before the one it
        ran in, background runs whenever they end); runs are sorted by time, as the store is.
        """
        runs = [run for entry in self._ring for run in self._expand(entry)]
        runs.sort(key=_recorded_at)
        return filter_runs(runs, **filters)

    def __len__(self) -> int:
        runs = 0
        for entry in self._ring:  # a dispatch: its hooks that ran or were skipped; else one run
            if isinstance(entry, list):
                runs += sum(1 for t in islice(entry, HEADER, None) if type(t) is float)
            else:
                runs += 1
        return runs


#: hook, end time, outcome, error, data changed, prompt after, snapshot after, time shared
Step = list[Any]


def _steps(hooks: tuple[_Hook, ...], marks: list[Any], t0: float) -> tuple[list[Step], Any]:
    """Walk a dispatch's marks: the steps of the hooks that ran or were skipped, in chain
    order; and the prompt the dispatch started with (as the first write found it; None if
    nothing was written).

    ``marks[0]`` is the dispatch's number (see _number), HEADER items in all (see
    HookManager.dispatch) come before the hooks' marks. After them, a float ends the current
    hook's step (0.0: its time is read later, see note_timing) and a None says it did not run;
    the tuples before either are notes on it: ``("o", outcome, error)`` (the first one counts),
    ``("w", prompt before, prompt after)`` a write to the data, ``("n",)`` one inside a nested
    value, ``("k",)`` a matcher skip, ``("s", data)`` a snapshot, ``("t", time)`` the hook
    suspended (the hooks timed later before it, and its first step, end then). A last
    ``("e", time)`` ends the hooks timed later.
    """
    steps: list[Step] = []
    origin: Any = None
    prompt: Any = None
    written = False
    index = 0
    outcome: str | None = None
    error: BaseException | None = None
    changed = False
    snap: Any = None
    later: list[Step] = []  # steps whose time is read later, in order
    start = t0  # the last time read
    shared = False  # the current hook's first step shared a time ("t")
    for item in islice(marks, HEADER, None):
        if item is None or type(item) is float:
            if item is not None:
                step = [hooks[index], item, outcome, error, changed, prompt, snap, shared]
                steps.append(step)
                if item == 0.0:
                    later.append(step)
                else:
                    if later:  # read after hooks timed later: this one shares it with them
                        step[7] = _share(later, start, item, 1) > 1
                    start = item
            index += 1
            outcome, error, changed, snap, shared = None, None, False, None, False
            continue
        tag = item[0]
        if tag == "w":
            if not written:  # the steps so far ended with the prompt this write found
                written, origin = True, item[1]
                for step in steps:
                    step[5] = origin
            changed, prompt = True, item[2]
        elif tag == "n":  # a write inside a nested dict or list
            changed = True
        elif tag == "o":
            if outcome is None:
                outcome, error = item[1], item[2]
        elif tag == "k":
            outcome = "skipped"
        elif tag == "s":
            snap = item[1]
        else:  # "t" (the current hook is one more sharer) or "e"
            shared = _share(later, start, item[1], tag == "t") > 1
            start = item[1]
    return steps, origin


def _share(later: list[Step], start: float, end: float, more: int) -> int:
    """Spread ``end - start`` evenly over the steps timed later and ``more`` hooks after them
    (a skipped step takes no share); give each its end time. Returns how many shared."""
    sharers: int = more + sum(1 for step in later if step[2] != "skipped")
    share = (end - start) / sharers if sharers else 0.0
    at = start
    for step in later:
        if step[2] != "skipped":
            at += share
            step[7] = sharers > 1
        step[1] = at
    later.clear()
    return sharers


def _recorded_at(run: HookRun) -> float:
    return run.recorded_at


def _since(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()  # a naive datetime is local time, as Python has it
    # Text without an offset is UTC, as over HTTP and in the CLI (not the host's local time).
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


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
