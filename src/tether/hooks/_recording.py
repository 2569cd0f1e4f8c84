"""What a recorded dispatch does after a hook left ``ctx.data`` other than it was handed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._copy import copy_payload
from ._errors import HookError
from ._hook import _snapshot
from ._tracked import _Tracked, mute, track

if TYPE_CHECKING:
    from ._context import HookContext
    from ._hook import _Hook
    from ._manager import HookManager

__all__ = ["_detach", "_not_a_dict", "_note_error", "_replaced", "_settle"]


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
