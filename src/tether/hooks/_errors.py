"""Errors raised by the hook engine.

Exception tree::

    TetherError  (the root of every tether error: tether/errors.py draws the whole tree)
    ├── HookBlocked            a hook blocked the action (raised by hook code, on purpose)
    └── HookError              base of errors the engine reports about a hook
        ├── HookTimeoutError   a hook ran longer than its timeout
        ├── CommandHookError   a command hook misbehaved (also a RuntimeError); a persistent
        │                      one too (crash, bad line, restart)
        ├── HttpHookError      an HTTP hook failed: unreachable, non-2xx, a bad body (RuntimeError)
        └── PromptHookError    a prompt hook's model failed or gave no decision (RuntimeError)
    (a command or HTTP hook that overran its own timeout is also a HookTimeoutError, so a
    TimeoutError)
"""

from __future__ import annotations

from ..errors import TetherError

__all__ = [
    "CommandHookError",
    "CommandHookTimeoutError",
    "HookBlocked",
    "HookError",
    "HookTimeoutError",
    "HttpHookError",
    "HttpHookTimeoutError",
    "PromptHookError",
]


class HookBlocked(TetherError):
    """Raised by a hook to block the action; the remaining hooks of that dispatch do not run."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class HookError(TetherError):
    """Something went wrong inside a hook (reported, never raised into the process)."""


class HookTimeoutError(HookError, TimeoutError):
    """A hook ran longer than its timeout and was cancelled."""


class CommandHookError(HookError, RuntimeError):
    """A command hook failed: missing program, non-zero exit, bad output, overflow or timeout."""

    #: True when the program overran its own timeout and was killed.
    timed_out: bool = False


class CommandHookTimeoutError(CommandHookError, HookTimeoutError):
    """A command hook overran its own timeout and was killed."""

    timed_out = True


class HttpHookError(HookError, RuntimeError):
    """An HTTP hook failed: the service could not be reached, answered non-2xx or a bad body."""

    #: True when the request overran the hook's timeout.
    timed_out: bool = False


class HttpHookTimeoutError(HttpHookError, HookTimeoutError):
    """An HTTP hook's request overran the hook's timeout and was abandoned."""

    timed_out = True


class PromptHookError(HookError, RuntimeError):
    """A prompt hook failed: its model could not be asked, or answered no allow/deny decision."""


for _cls in (
    HookBlocked,
    HookError,
    HookTimeoutError,
    CommandHookError,
    CommandHookTimeoutError,
    HttpHookError,
    HttpHookTimeoutError,
    PromptHookError,
):
    _cls.__module__ = "tether"
