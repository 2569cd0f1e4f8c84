"""Executors: how one hook runs.

The dispatch loop knows nothing of what a hook is: it calls its executor's ``run`` with the
hook's context under the hook's timeout and applies what happened. An executor changes
``ctx.data`` (in place, or by putting a new dict there) and raises :class:`HookBlocked` to refuse
a blockable event; any other exception is that hook's error. What ``run`` returns is ignored.

Kinds built in: ``callback`` (an async Python callable), ``command`` (a program run per event,
see ShellHook) and ``plugin`` (a Plugin's method). A kind a HookConfig can declare is one module
holding its HookConfig class (whose ``executor()`` builds it) plus one line in hooks/_kinds.py;
see docs/executors.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from ._shell import ShellHook

if TYPE_CHECKING:
    from ._context import HookContext

__all__ = [
    "COMMAND_BACKSTOP",
    "CallbackExecutor",
    "CommandExecutor",
    "Executor",
    "PluginExecutor",
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


class PluginExecutor(CallbackExecutor):
    """A Plugin's lifecycle method (its handler, which reports the plugin's errors)."""

    __slots__ = ()
    kind: Final[str] = "plugin"  # type: ignore[misc]


class CommandExecutor:
    """A program run once per event (ShellHook): JSON envelope on stdin, answer on stdout."""

    __slots__ = ("shell",)
    kind: Final[str] = "command"
    backstop: Final[float] = COMMAND_BACKSTOP

    def __init__(self, shell: ShellHook) -> None:
        self.shell = shell

    @property
    def run(self) -> Callable[[HookContext], Awaitable[Any]]:
        return self.shell.callback

    @property
    def timeout(self) -> float:
        return self.shell.timeout

    @property
    def protocol(self) -> str:
        """What the program reads and answers: "tether" or "claude-code"."""
        return self.shell.protocol

    @property
    def name(self) -> str:
        """Its command line, the hook's name when it is given none."""
        return self.shell.display_name

    def secrets(self) -> list[tuple[str, str]]:
        """(variable, value) of each value it hands its program that may be a credential
        (see ShellHook.secrets): a redactor takes them out of what is recorded and logged."""
        return self.shell.secrets()


def executor_for(fn: Callable[..., Any], owner: object | None) -> Executor:
    """The executor of a callable registered in code: a ShellHook's callback runs its program,
    the ``callback`` of a hook object that makes its own executor (an HttpHook, a
    PersistentHook, a PromptHook: ``as_executor()``) is that, a Plugin's method is a plugin's,
    anything else is a callback."""
    shell = getattr(fn, "__self__", None)
    if isinstance(shell, ShellHook) and getattr(fn, "__func__", None) is ShellHook.callback:
        return CommandExecutor(shell)
    as_executor = getattr(shell, "as_executor", None)
    if as_executor is not None and getattr(fn, "__name__", None) == "callback":
        made: Executor = as_executor()
        return made
    from ._plugin import Plugin

    if isinstance(owner, Plugin):
        return PluginExecutor(fn)
    return CallbackExecutor(fn)
