"""The secret values a manager's command hooks hand their programs, for a redactor."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ._hook import _generation
from ._shell import ShellHook, _handovers

if TYPE_CHECKING:
    from ._manager import HookManager

__all__ = ["command_secrets"]

Secrets = tuple[tuple[str, str], ...]


def command_secrets(manager: HookManager) -> Callable[[], Secrets]:
    """A function answering (variable, value) for every ShellHook.secrets() value of the
    command hooks ``manager`` runs: its own, inherited and shared ones, registered in code, from
    a HookConfig or a manifest, before or after this call.

    A value once found is kept, as a removed hook's runs may still be in a history that is read
    (and redacted) later. The answer is the same tuple object until a hook is registered or
    removed anywhere, or a program is handed a value not listed yet; only then are the hooks
    walked again.
    """
    known: dict[str, str] = {}  # variable name by value
    answer: Secrets = ()
    generation = handovers = -1

    def current() -> Secrets:
        nonlocal answer, generation, handovers
        if _generation[0] == generation and _handovers[0] == handovers:
            return answer
        generation, handovers = _generation[0], _handovers[0]
        size = len(known)
        for owner, _ in manager._chain():
            for hook in list(owner._by_id.values()):
                shell = getattr(hook.fn, "__self__", None)
                if isinstance(shell, ShellHook):
                    for name, value in shell.secrets():
                        known.setdefault(value, name)
        if len(known) != size:
            answer = tuple((name, value) for value, name in known.items())
        return answer

    return current
