"""What a dispatch keeps of its hook runs: one small record per run, in a DispatchRecord (OFF,
which does nothing, when no recorder is attached).

A recorded dispatch keeps a plain copy of the data as the last hook left it; after each hook
the data is compared with it (``==``), so a change is found however it was made (a nested
write, a write through ``dict.__setitem__``, a replaced dict). Each run is timed on its own with
``time.perf_counter``: durations are exact, never shares of a chain's time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from ._copy import copy_payload
from ._errors import HookError
from ._hook import _run_id

if TYPE_CHECKING:
    from ._context import HookContext
    from ._events import HookEvent
    from ._hook import Engine, RunRecorder, _Hook

__all__ = [
    "ABSENT",
    "OFF",
    "DispatchRecord",
    "RecordedRun",
    "TracedRun",
    "changes",
    "log_failure",
    "log_listener_failure",
    "provenance",
    "redacted_trace",
]

#: A key a hook added (its value before) or removed (its value after), in RecordedRun.changed.
ABSENT: Final = object()


class RecordedRun:
    """One hook run of a dispatch (or one background run).

    ``outcome`` None means the hook ran without error: "applied" if it changed the data,
    else "passed". ``ended`` is a ``perf_counter`` reading (its record dates it) and
    ``duration`` the run's own seconds. ``changed`` maps each top-level key the hook changed to
    its value before and after (``ABSENT`` for a key added or removed); ``notice`` is what the
    hook told the operator (HookContext.notify).
    """

    __slots__ = ("changed", "duration", "ended", "error", "hook", "notice", "outcome")

    def __init__(
        self,
        hook: _Hook,
        outcome: str | None,
        error: BaseException | None,
        ended: float,
        duration: float,
        changed: dict[str, tuple[Any, Any]] | None = None,
        notice: str | None = None,
    ) -> None:
        self.hook = hook
        self.outcome = outcome
        self.error = error
        self.ended = ended
        self.duration = duration
        self.changed = changed
        self.notice = notice


class TracedRun(RecordedRun):
    """A run of a traced dispatch (a dry run): it keeps the whole data around the hook."""

    __slots__ = ("after", "before")

    def __init__(
        self, run: RecordedRun, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> None:
        super().__init__(
            run.hook, run.outcome, run.error, run.ended, run.duration, run.changed, run.notice
        )
        self.before = before
        self.after = after


def provenance(changed: dict[str, tuple[Any, Any]] | None) -> dict[str, dict[str, Any]] | None:
    """A run's changes as records show them: ``{key: {"before": ..., "after": ...}}`` (a key
    added has no "before", one removed no "after")."""
    if changed is None:
        return None
    out: dict[str, dict[str, Any]] = {}
    for key, (old, new) in changed.items():
        shown = {}
        if old is not ABSENT:
            shown["before"] = old
        if new is not ABSENT:
            shown["after"] = new
        out[key] = shown
    return out


def changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, tuple[Any, Any]] | None:
    """The top-level keys whose value differs between ``before`` and ``after`` (compared with
    ``==``: a value replaced by an equal one is no change), or None if none does."""
    try:
        if before == after:
            return None
    except Exception:  # a value whose comparison fails: looked at key by key
        pass
    out: dict[str, tuple[Any, Any]] = {}
    for key in before.keys() | after.keys():
        old, new = before.get(key, ABSENT), after.get(key, ABSENT)
        if old is new:
            continue
        try:
            same = bool(old == new)
        except Exception:
            same = False
        if not same:
            out[key] = (old, new)
    return out or None


class _WallClock:
    """Dates ``perf_counter`` readings on the wall clock from one shared reading of both
    clocks, so that the dates keep the order of the readings: a run dated from a
    ``time.time()`` of its own dispatch would not (a pause between the two readings shifts
    that dispatch's dates, and a nested dispatch's run could then seem to end after the run
    it ended inside). Read again every ``REREAD`` s to follow adjustments of the wall clock."""

    REREAD: Final = 10.0
    __slots__ = ("perf", "wall")

    def __init__(self) -> None:
        self.perf = perf_counter()
        self.wall = time.time()

    def at(self, perf: float) -> float:
        """The wall-clock time of the ``perf_counter`` reading ``perf``."""
        if perf - self.perf > self.REREAD:
            self.perf, self.wall = perf_counter(), time.time()
        return self.wall + (perf - self.perf)


_CLOCK: Final = _WallClock()


class DispatchRecord:
    """The runs of one dispatch as its recorder keeps them (or one background run), built
    while the chain runs: ``ran`` after each hook that ran, ``skipped`` for one a matcher
    passed over, and ``close`` once the chain has ended, which hands it to the recorder.

    ``wall`` is the wall-clock time of the ``perf_counter`` reading ``started`` (one clock for
    every record, see ``_WallClock``): a run that ended at ``ended`` is dated
    ``wall + ended - started``.
    """

    __slots__ = (
        "_id",
        "_last",
        "background",
        "blocked",
        "depth",
        "event",
        "manager",
        "prompt",
        "recorder",
        "runs",
        "started",
        "trace",
        "wall",
    )

    def __init__(
        self,
        ident: int | str,
        manager: Engine,
        event: HookEvent,
        depth: int,
        *,
        recorder: RunRecorder | None = None,
        data: dict[str, Any] | None = None,
        background: bool = False,
    ) -> None:
        self._id = ident  # a dispatch's number, or the dispatch id a background run had
        self.manager = manager
        self.event = event
        self.depth = depth
        self.recorder = recorder
        self.trace = recorder is not None and bool(recorder.trace)
        #: The prompt the dispatch started with (what a patch of it is compared with).
        self.prompt = None if data is None else data.get("prompt")
        #: The data as the last hook left it (a plain copy no hook can reach); dropped at close.
        self._last = None if data is None else copy_payload(data)
        self.background = background
        self.blocked = False
        self.runs: list[RecordedRun] = []
        self.started = perf_counter()
        self.wall = _CLOCK.at(self.started)

    @property
    def dispatch_id(self) -> str:
        """The printable id of the dispatch (unique across interpreters too)."""
        ident = self._id
        return ident if isinstance(ident, str) else _run_id(ident)

    def dated(self, run: RecordedRun) -> float:
        """The wall-clock time ``run`` ended."""
        return self.wall + (run.ended - self.started)

    def ran(
        self,
        hook: _Hook,
        outcome: str | None,
        error: BaseException | None,
        started: float,
        ended: float,
        data: dict[str, Any],
        notice: str | None = None,
    ) -> None:
        before: Any = self._last
        if not isinstance(data, dict):  # a context_factory's non-dict data (the dispatch's error)
            data = {}
        try:  # the common case, a hook that changed nothing, with no further call
            same = data == before
        except Exception:
            same = False
        changed = None if same else changes(before, data)
        if changed is not None:  # the values after are kept from a copy no hook can reach
            last = self._last = copy_payload(data)
            changed = {k: (old, last.get(k, ABSENT)) for k, (old, _) in changed.items()}
        run = RecordedRun(hook, outcome, error, ended, ended - started, changed, notice)
        if self.trace:
            run = TracedRun(run, before, self._last)
        self.runs.append(run)

    def skipped(self, hook: _Hook, at: float) -> None:
        self.runs.append(RecordedRun(hook, "skipped", None, at, 0.0))

    def close(self, blocked: bool) -> None:
        self._last = None
        if self.runs and self.recorder is not None:
            self.blocked = blocked
            self.recorder.add(self)


class _Off:
    """The record of a dispatch nothing records: every call does nothing."""

    __slots__ = ()
    recorder: Final = None
    dispatch_id: Final = ""

    def ran(self, *args: Any) -> None:
        return None

    def skipped(self, hook: _Hook, at: float) -> None:
        return None

    def close(self, blocked: bool) -> None:
        return None


OFF: Final = _Off()


def log_failure(
    logger: logging.Logger,
    redact: Callable[[str], str] | None,
    hook: _Hook,
    event: str,
    exc: BaseException,
) -> None:
    """Log an isolated hook error; with ``redact``, secrets never reach the log."""
    if redact is None:
        logger.warning(
            "hook %s (%s) failed on %s: %r",
            hook.name,
            hook.hook_id,
            event,
            exc,
            exc_info=exc,
            extra={"hook_id": hook.hook_id},
        )
        return
    trace = redacted_trace(exc, redact)
    logger.warning(
        "hook %s (%s) failed on %s: %s\n%s",
        redact(hook.name),
        hook.hook_id,
        event,
        redact(repr(exc)),
        trace,
        extra={"hook_id": hook.hook_id},
    )


def detach(ctx: HookContext) -> None:
    """After a hook's error or timeout, the later hooks get a copy of the data the hook cannot
    reach: what it left holding the data (a thread asyncio.to_thread goes on running after the
    hook was cancelled, a task it started) changes neither their data nor the result.
    (A non-dict is left to the dispatch, which undoes it.)"""
    if isinstance(ctx.data, dict):
        ctx.data = copy_payload(ctx.data)


def not_a_dict(hook: _Hook, ctx: HookContext) -> HookError:
    return HookError(
        f"ctx.data was left a {type(ctx.data).__name__}, not a dict, by hook {hook.name!r} "
        f"({hook.hook_id}); the change was undone"
    )


def log_listener_failure(
    logger: logging.Logger, redact: Callable[[str], str] | None, fn: object, exc: Exception
) -> None:
    """Log a hook error listener that raised; with ``redact``, secrets never reach the log."""
    if redact is None:
        logger.error("hook error listener %r failed", fn, exc_info=exc)
        return
    trace = redacted_trace(exc, redact)
    logger.error("hook error listener %s failed:\n%s", redact(repr(fn)), trace)


def redacted_trace(exc: BaseException, redact: Callable[[str], str]) -> str:
    """The traceback of ``exc`` (its chained errors too) as text, through ``redact``: for a log
    line, where ``logger.exception`` would write the error's text as raised."""
    import traceback

    return redact("".join(traceback.format_exception(exc))).rstrip()
