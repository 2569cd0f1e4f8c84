"""The command kind: a program run once per event, its runtime object a ShellHook.

ShellHook and its executor (hooks/_shell.py) stay importable without pydantic, since code
builds a ShellHook by hand and the Claude Code hook derives from it; this module declares the
kind and builds the hook a declaration describes (a ClaudeCodeHook for ``protocol:
claude-code``).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from .._shell import CommandExecutor, ShellHook
from ._base import (
    BaseHookConfig,
    NotThisKind,
    SecretText,
    not_a_bool,
    not_this_kind,
    output_limit,
)

if TYPE_CHECKING:
    from .._executor import Executor
    from .._hook import Engine

__all__ = ["CommandHookConfig"]


class CommandHookConfig(BaseHookConfig):
    """A hook that runs a program: the event as JSON on stdin, its answer as JSON on stdout."""

    kind: ClassVar[str] = "command"
    key: ClassVar[str] = "command"
    default_timeout: ClassVar[float] = 5.0

    command: str | list[str] = Field(
        description="Program and arguments (a string is split with shlex.split)"
    )
    cwd: str | None = Field(default=None, description="Working directory of the command")
    env: dict[str, SecretText] = Field(
        default_factory=dict, description="Extra variables; ${VAR} resolved when the hook runs"
    )
    env_passthrough: list[str] = Field(
        default_factory=list, description="Host environment variables passed to the command"
    )
    max_output_bytes: int = output_limit("Largest stdout accepted")
    protocol: Literal["tether", "claude-code"] = Field(
        default="tether",
        description="What the program reads and answers: tether's envelope, or Claude Code's "
        "hook input and answer rules (see docs/tool-hooks.md)",
    )
    callback: NotThisKind = not_this_kind()

    @field_validator("max_output_bytes", mode="before")
    @classmethod
    def _bytes_not_a_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return not_a_bool(value, info)

    @field_validator("command")
    @classmethod
    def _non_empty_command(cls, value: str | list[str]) -> str | list[str]:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("command must name a program, got an empty command")
        if isinstance(value, str):
            try:
                shlex.split(value)
            except ValueError as exc:  # e.g. an unmatched quote
                raise ValueError(
                    f"command {value!r} cannot be split like a shell would: {exc}"
                ) from None
        return value

    def executor(self, manager: Engine) -> Executor:
        shell: ShellHook
        if self.protocol == "claude-code":
            # Loaded only for a Claude Code hook (the import of HookConfig stays light).
            from .._claude_code import ClaudeCodeHook
            from .._claude_notification import tell_hook_errors

            claude = ClaudeCodeHook.from_config(self)
            if claude.claude_event == "Notification":  # told of hook errors too
                tell_hook_errors(manager)
            claude.declared = lambda text: (
                manager.redact_declared(text) if manager.redact_declared is not None else text
            )
            shell = claude
        else:
            shell = ShellHook.from_config(self)
        # The manager's redactor may be set after registration: look it up at log time.
        shell.redact = lambda text: manager.redact(text) if manager.redact is not None else text
        return CommandExecutor(shell)
