"""Errors raised by the hook engine.

Exception tree::

    Exception
    ├── HookBlocked            a hook refused the action (raised by hook code, on purpose)
    └── HookError              base of errors the engine reports about a hook
        ├── HookTimeoutError   a hook ran longer than its timeout
        └── CommandHookError   a command hook misbehaved (also a RuntimeError)
            (one killed at its timeout is also a HookTimeoutError, so a TimeoutError)
"""

from __future__ import annotations

__all__ = [
    "CommandHookError",
    "CommandHookTimeoutError",
    "HookBlocked",
    "HookError",
    "HookTimeoutError",
]


class HookBlocked(Exception):
    """Raised by a hook to refuse the action; the remaining hooks of that dispatch do not run."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


class HookError(Exception):
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


for _cls in (HookBlocked, HookError, HookTimeoutError, CommandHookError, CommandHookTimeoutError):
    _cls.__module__ = "tether"
