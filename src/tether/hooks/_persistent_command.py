"""The persistent kind: a command with ``persistent: true``, one co-process answering every
event over JSON lines (see PersistentHook). It refines the command kind (same key)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, StrictBool, model_validator

from ._command import CommandHookConfig
from ._persistent import PersistentExecutor, PersistentHook

if TYPE_CHECKING:
    from ._executor import Executor
    from ._manager import HookManager

__all__ = ["PersistentHookConfig"]


class PersistentHookConfig(CommandHookConfig):
    """A command hook whose program is started once and kept: each event is one JSON line on
    its stdin, each answer one line on its stdout. ``persistent: false`` is a plain command."""

    kind: ClassVar[str] = "persistent"
    default_timeout: ClassVar[float] = 5.0

    persistent: StrictBool = Field(
        default=True, description="Keep one program running for every event (JSON lines)"
    )

    @classmethod
    def selects(cls, data: dict[str, Any]) -> bool:
        return "persistent" in data

    @model_validator(mode="after")
    def _tethers_lines(self) -> PersistentHookConfig:
        if self.persistent and getattr(self, "protocol", "tether") != "tether":
            raise ValueError(
                "a persistent hook speaks tether's JSON lines; protocol 'claude-code' runs its "
                "program once per event, as Claude Code does (drop persistent)"
            )
        return self

    def executor(self, manager: HookManager) -> Executor:
        if not self.persistent:
            return super().executor(manager)
        from ._resources import on_close, redactor_of

        hook = PersistentHook.from_config(self)
        hook.redact = redactor_of(manager)
        on_close(manager, hook.aclose)
        return PersistentExecutor(hook)
