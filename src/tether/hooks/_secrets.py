"""The secret values a manager's command hooks hand their programs, for a redactor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._hook import generation

if TYPE_CHECKING:
    from ._hook import Engine

__all__ = ["CommandSecrets"]

Secrets = tuple[tuple[str, str], ...]


class CommandSecrets:
    """Called: (variable, value) for every ShellHook.secrets() value of the command hooks
    ``manager`` runs: its own, inherited and shared ones, registered in code, from a HookConfig
    or a manifest, before or after this was made.

    ``version`` is a counter whose ``value`` changes whenever the answer may have (a hook registered
    or removed anywhere, a program handed a value not listed yet), so a caller need not call
    to find out. A value once found is kept, as a removed hook's runs may still be in a
    history that is read (and redacted) later. The answer is the same tuple object until a
    new value is found.
    """

    __slots__ = ("_answer", "_at", "_known", "_manager")

    version = generation

    def __init__(self, manager: Engine) -> None:
        self._manager = manager
        self._known: dict[str, str] = {}  # variable name by value
        self._answer: Secrets = ()
        self._at = -1

    def __call__(self) -> Secrets:
        if generation.value == self._at:
            return self._answer
        self._at = generation.value
        known = self._known
        size = len(known)
        for owner, _ in self._manager._chain():
            for hook in list(owner._by_id.values()):
                # An executor that hands its hook secrets (a command's env) lists them.
                secrets = getattr(hook.executor, "secrets", None)
                if secrets is not None:
                    for name, value in secrets():
                        known.setdefault(value, name)
        if len(known) != size:
            self._answer = tuple((name, value) for value, name in known.items())
        return self._answer
