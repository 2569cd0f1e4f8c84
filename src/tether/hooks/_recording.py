"""What a recorded dispatch does after a hook left ``ctx.data`` other than it was handed."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._copy import copy_payload
from ._errors import HookError
from ._hook import _now, _snapshot
from ._tracked import _Tracked, mute, track

if TYPE_CHECKING:
    from ._context import HookContext
    from ._events import HookEvent
    from ._hook import _Hook
    from ._manager import HookManager

__all__ = [
    "TimedOnce",
    "_detach",
    "_not_a_dict",
    "_note_error",
    "_replaced",
    "_settle",
    "log_failure",
    "log_listener_failure",
    "note_slow",
    "note_timing",
    "redacted_trace",
    "suspends",
]

# -- timing ---------------------------------------------------------------------------------
# Reading the clock after each hook costs a fifth of what a trivial hook costs to dispatch, so a
# chain that is fast every time is timed once, at its end: its hooks share the time (their
# records say ``duration_shared``), each share off by at most the whole, which is small.

#: Recorded dispatches in a row that must find a chain fast before it is timed once.
QUICK_AFTER: Final = 100
#: Fast: every hook that ran finished without suspending, in under FAST seconds a hook on
#: average.
FAST: Final = 5e-6
#: A chain timed once goes back to per-hook timing when a dispatch of it takes longer than
#: twice FAST a hook, or SLOW if that is longer (the records of that dispatch are shared, as the
#: others were): so a shared duration is off by less than that. SLOW keeps a short chain timed
#: once through the odd pause the machine takes (an interrupt, another process scheduled).
SLOW: Final = 100e-6
#: The streak a chain starts from after that (and after a slow dispatch while it is still
#: below 0): it must then be fast this many dispatches more in a row.
DEMOTED: Final = -QUICK_AFTER


class TimedOnce(tuple):  # type: ignore[type-arg]
    """A resolved chain found fast: cached as this, it is timed once per dispatch."""

    __slots__ = ()


def note_timing(
    manager: HookManager,
    event: HookEvent,
    hooks: tuple[_Hook, ...],
    marks: list[Any],
    t0: float,
    fired: int,
) -> None:
    """After a dispatch timed per hook that ran several hooks, none of which suspended: count
    it towards timing the chain once, if it was fast."""
    last = marks[-1]
    end = last if type(last) is float else _now()
    streak = manager._streaks.get(event, 0)
    if end - t0 < fired * FAST:
        streak += 1
        if streak >= QUICK_AFTER and manager._cache.get(event) is hooks:
            manager._cache[event] = TimedOnce(hooks)
    elif streak:  # slow: the streak starts again (from DEMOTED, once sent back)
        streak = DEMOTED if streak < 0 else 0
    manager._streaks[event] = streak


def note_slow(manager: HookManager, event: HookEvent, elapsed: float, fired: int) -> None:
    """A dispatch timed once took ``elapsed`` seconds, over SLOW: if that is also over twice
    FAST a hook, the chain goes back to per-hook timing."""
    if elapsed > 2 * FAST * fired:
        _per_hook(manager, event)


def suspends(manager: HookManager, event: HookEvent, marks: list[Any]) -> bool:
    """A hook of a chain timed once suspended: the time ends the shared hooks before it (and
    its own first step), and it, the hooks after it and the chain from now on are timed per
    hook. Returns False, the dispatch's new ``quick``."""
    marks.append(("t", _now()))
    _per_hook(manager, event)
    return False


def _per_hook(manager: HookManager, event: HookEvent) -> None:
    """Time ``event``'s chain per hook again (it must be found fast longer to be timed once)."""
    cached = manager._cache.get(event)
    if type(cached) is TimedOnce:
        manager._cache[event] = tuple(cached)
    manager._streaks[event] = DEMOTED


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


def _detach(ctx: HookContext) -> None:
    """After a hook's error or timeout, the later hooks get a copy of the data the hook cannot
    reach: what it left holding the data (a thread asyncio.to_thread goes on running after the
    hook was cancelled, a task it started) changes neither their data nor the result, and
    recorded containers it holds note their writes no longer into the dispatch's marks.
    (A non-dict is left to _replaced and _settle, which undo it.)"""
    data = ctx.data
    if isinstance(data, dict):
        mute(data)
        ctx.data = copy_payload(data)


def _not_a_dict(hook: _Hook, ctx: HookContext) -> HookError:
    return HookError(
        f"ctx.data was left a {type(ctx.data).__name__}, not a dict, by hook {hook.name!r} "
        f"({hook.hook_id}); the change was undone"
    )


def _note_error(
    errors: list[tuple[_Hook, BaseException]] | None,
    hook: _Hook,
    error: BaseException,
    manager: HookManager,
    event: str,
) -> list[tuple[_Hook, BaseException]]:
    manager._log_failure(hook, event, error)
    if errors is None:
        errors = []
    errors.append((hook, error))
    return errors


def _replaced(
    ctx: HookContext, kept: dict[str, Any], hook: _Hook
) -> tuple[dict[str, Any], HookError | None]:
    """Unrecorded: a hook left ``ctx.data`` other than it was handed. A dict is the data from
    then on; anything else is undone (the last dict put back) and is that hook's error."""
    if isinstance(ctx.data, dict):
        return ctx.data, None
    bad = _not_a_dict(hook, ctx)
    ctx.data = kept
    return kept, bad


def _settle(
    ctx: HookContext, tracked: _Tracked, marks: list[Any], hook: _Hook, trace: bool
) -> tuple[_Tracked, HookError | None]:
    """After a hook left ``ctx.data`` other than the tracked dict (or when tracing): undo a
    non-dict, track a replacement dict (a write unless it holds the same), note a snapshot."""
    data = ctx.data
    bad = None
    if data is tracked:
        pass
    elif not isinstance(data, dict):  # not data at all: undone, a hook error
        bad = _not_a_dict(hook, ctx)
        marks.append(("o", "failed", bad))
        ctx.data = tracked
    else:  # replaced wholesale: later writes go to the new dict
        same = data == tracked
        before = tracked.get("prompt")
        tracked = ctx.data = track(data, marks)
        if not same:
            marks.append(("w", before, tracked.get("prompt")))
    if trace:
        marks.append(("s", _snapshot(tracked)))
    return tracked, bad


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
