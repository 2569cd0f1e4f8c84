"""Claude Code's ``Notification`` event: tether's operator notices, told to the loaded hooks.

Two notices reach a ``Notification`` hook loaded from a Claude Code file:

* an approval waiting: the hook is registered on ``permission_request`` and runs in its chain
  (``notification_type`` ``permission_prompt``, see claude_input);
* a hook error: any hook of a dispatch of the manager failed or timed out. The manager's error
  listener (``tell_hook_errors``, added once when such a hook is registered) queues the
  Notification hooks of its chain as background runs of the dispatch the error happened in
  (its event and dispatch id in the run history), with ``notification_type`` ``hook_error``.

A Notification hook's own error is told to nobody (no notice of a notice: no loop), and a dry
run tells nobody (it acts on nothing outside the data).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Final

from ._context import HookContext
from ._copy import copy_payload
from ._errors import HookTimeoutError
from ._events import HookEvent

if TYPE_CHECKING:
    from ._hook import Engine, HookErrorInfo, _Hook

__all__ = ["NOTICE", "notice_fields", "tell_hook_errors"]

#: The metadata key of a notice's context: the Notification fields its hooks read.
NOTICE: Final = "claude_notification"
#: The ``notification_type`` of a hook error (Claude Code has none of its own for it).
HOOK_ERROR: Final = "hook_error"

_told: weakref.WeakSet[Engine] = weakref.WeakSet()


def notice_fields(ctx: HookContext) -> dict[str, Any]:
    """``message``, ``title`` and ``notification_type`` of the notice ``ctx`` carries: a hook
    error's, or (on permission_request) an approval waiting."""
    told = ctx.metadata.get(NOTICE)
    if isinstance(told, dict):
        return dict(told)
    return {
        "message": f"Claude needs your permission to use {ctx.data.get('tool_name')}",
        "title": "Permission needed",
        "notification_type": "permission_prompt",
    }


def tell_hook_errors(manager: Engine) -> None:
    """Tell the Notification hooks of ``manager``'s chain of every hook error of its
    dispatches (once per manager)."""
    if manager in _told:
        return
    _told.add(manager)

    def listener(info: HookErrorInfo) -> None:
        _hook_error(manager, info)

    manager.on_error(listener)


def _notifiers(manager: Engine) -> list[_Hook]:
    """The enabled Notification hooks of the chain (a command's or an HTTP service's)."""
    return [
        hook
        for hook in manager._resolved(HookEvent.PERMISSION_REQUEST)
        if hook.enabled
        and getattr(getattr(hook.executor, "hook", None), "claude_event", None) == "Notification"
    ]


def _hook_error(manager: Engine, info: HookErrorInfo) -> None:
    """Queue the Notification hooks for a hook's error (see the module docstring)."""
    failed = info.context
    if failed is None or failed.dry_run or NOTICE in failed.metadata:
        return  # an extension point's error, a dry run's, or a notice hook's own
    hooks = _notifiers(manager)
    if not hooks or info.hook_id in {hook.hook_id for hook in hooks}:
        return
    exc = info.error
    timed_out = isinstance(exc, HookTimeoutError) or getattr(exc, "timed_out", False)
    message = (
        f"Hook {info.hook_name!r} {'timed out' if timed_out else 'failed'} on {info.event}: "
        f"{str(exc) or type(exc).__name__}"
    )
    notice = {
        "message": message if manager.redact is None else manager.redact(message),
        "title": "Hook error",
        "notification_type": HOOK_ERROR,
    }
    data = failed.data if isinstance(failed.data, dict) else {}
    ctx = HookContext(
        failed.event, failed.process_id, copy_payload(data), {**failed.metadata, NOTICE: notice}
    )
    from ._background import submit
    from ._hook import DEPTH

    submit(manager, hooks, ctx, DEPTH.get(), manager.recorder, info.dispatch_id, ctx.data)
