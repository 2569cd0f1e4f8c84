"""Executors: how one hook runs.

The dispatch loop knows nothing of what a hook is: it calls its executor's ``run`` with the
hook's context under the hook's timeout and applies what happened. An executor changes
``ctx.data`` (in place, or by putting a new dict there) and raises :class:`HookBlocked` to block
a blockable event; any other exception is that hook's error. What ``run`` returns is ignored.

This module knows no kind: ``callback`` (any async callable registered in code) is the
engine's default; every other kind lives in hooks/kinds/ — one module holding its config, its
runtime object and its executor, plus one line in hooks/kinds/_registry.py (see
docs/executors.md). A hook object registered in code by its ``callback`` (a ShellHook, an
HttpHook, …) says what runs it with ``as_executor()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._context import HookContext

__all__ = [
    "COMMAND_BACKSTOP",
    "CallbackExecutor",
    "Executor",
    "HookObjectExecutor",
    "executor_for",
]

#: Extra seconds the engine allows a command beyond the program's own timeout: the program is
#: killed at its timeout, and the engine's bound only catches what that could not end.
COMMAND_BACKSTOP: Final = 5.0


@runtime_checkable
class Executor(Protocol):
    """How one hook runs.

    ``kind`` names it in catalogs (HookInfo.executor_kind). ``timeout`` is a bound the executor
    enforces itself (a command's program is killed at it), None when it has none of its own;
    the engine then bounds ``run`` by that plus ``backstop`` seconds, unless the hook was given
    another timeout. ``run(ctx)`` runs the hook on one event.

    Optional: ``name`` (the hook's name in catalogs when it is declared without one) and
    ``secrets()`` (``(variable, value)`` pairs it hands its hook that must never be logged or
    recorded; the process's redactor takes them out).
    """

    @property
    def kind(self) -> str: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def backstop(self) -> float: ...

    @property
    def run(self) -> Callable[[HookContext], Awaitable[Any]]: ...


class CallbackExecutor:
    """An async Python callable, called with the context (``run`` is the callable itself, so
    the dispatch loop awaits it with nothing in between). Only the engine bounds it."""

    __slots__ = ("run",)
    kind: Final[str] = "callback"
    timeout: Final[None] = None
    backstop: Final[float] = 0.0

    def __init__(self, fn: Callable[[HookContext], Awaitable[Any]]) -> None:
        self.run = fn


class HookObjectExecutor:
    """Runs a hook object that bounds itself (a ShellHook, HttpHook, PersistentHook,
    PromptHook): ``run`` is its callback and ``timeout`` its own timeout; its catalog name,
    protocol and secrets are the object's. A kind is a subclass naming ``kind`` and
    ``backstop`` (the seconds the engine's bound allows past the object's own)."""

    __slots__ = ("hook",)
    kind: ClassVar[str]
    backstop: ClassVar[float]

    def __init__(self, hook: Any) -> None:
        self.hook = hook

    @property
    def run(self) -> Callable[[HookContext], Awaitable[Any]]:
        callback: Callable[[HookContext], Awaitable[Any]] = self.hook.callback
        return callback

    @property
    def timeout(self) -> float:
        return float(self.hook.timeout)

    @property
    def name(self) -> str:
        """Its command line, URL or policy: the hook's name when it is given none."""
        return str(self.hook.display_name)

    @property
    def protocol(self) -> str | None:
        """What its program or service reads and answers ("tether" or "claude-code"; None for
        a hook object that speaks to neither)."""
        return getattr(self.hook, "protocol", None)

    def secrets(self) -> list[tuple[str, str]]:
        """(variable, value) of each value it hands its hook that may be a credential (see
        ShellHook.secrets): a redactor takes them out of what is recorded and logged."""
        found = getattr(self.hook, "secrets", None)
        return list(found()) if found is not None else []


def executor_for(fn: Callable[..., Any]) -> Executor:
    """The executor of a callable registered in code: the ``callback`` of a hook object that
    makes its own executor (a ShellHook, an HttpHook, a PersistentHook, a PromptHook:
    ``as_executor()``) is that; anything else is a callback."""
    owner = getattr(fn, "__self__", None)
    as_executor = getattr(owner, "as_executor", None)
    if as_executor is not None and getattr(fn, "__name__", None) == "callback":
        made: Executor = as_executor()
        return made
    return CallbackExecutor(fn)
