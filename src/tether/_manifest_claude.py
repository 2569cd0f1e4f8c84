"""A manifest's ``claude_code_hooks`` entries: a file, or a project's settings scopes with the
options of the Claude Code loader.

::

    claude_code_hooks:
      - .claude/settings.json                # one settings or plugin hooks.json file
      - project: .                           # every scope of the project, merged
        plugins: [plugins/formatter]
        withhold_env: [AWS_SECRET_ACCESS_KEY]
        inherit_env: true
        strict: false
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from .hooks import ClaudeCodeHooks

__all__ = ["ClaudeCodeSource", "load_claude_code", "rebased"]


class ClaudeCodeSource(BaseModel):
    """Claude Code hooks with options: ``file`` (one file) or ``project`` (its scopes)."""

    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(default=None, description="A settings.json or plugin hooks.json")
    project: str | None = Field(
        default=None,
        description="A project folder: its managed, local, project and user settings merged",
    )
    plugins: list[str] = Field(
        default_factory=list, description="Plugin folders (with hooks/hooks.json), for project"
    )
    user_settings: str | None = Field(
        default="~/.claude/settings.json", description="The user scope's file (null: none)"
    )
    withhold_env: list[str] = Field(
        default_factory=list, description="Host variables the programs must not get"
    )
    inherit_env: bool = Field(
        default=True, description="false: tether's minimal environment instead of the host's"
    )
    strict: bool = Field(default=False, description="What cannot be mapped is an error")

    @model_validator(mode="after")
    def _one_source(self) -> ClaudeCodeSource:
        if (self.file is None) == (self.project is None):
            raise ValueError("set exactly one of 'file' or 'project'")
        if self.plugins and self.project is None:
            raise ValueError("'plugins' go with 'project'")
        return self


def rebased(
    entry: str | ClaudeCodeSource, absolute: Callable[[str | None], str | None]
) -> str | ClaudeCodeSource:
    """``entry`` with its paths made absolute by ``absolute`` (the manifest's folder)."""
    if isinstance(entry, str):
        return absolute(entry) or entry
    update: dict[str, Any] = {
        "file": absolute(entry.file),
        "project": absolute(entry.project),
        "plugins": [absolute(p) or p for p in entry.plugins],
    }
    return entry.model_copy(update=update)


def load_claude_code(entry: str | ClaudeCodeSource) -> ClaudeCodeHooks:
    """The hooks (and warnings) one entry loads; ClaudeCodeHooksError when it cannot."""
    from .hooks import claude_code_hooks, claude_code_settings

    if isinstance(entry, str):
        return claude_code_hooks(entry)
    options: dict[str, Any] = {
        "withhold_env": entry.withhold_env,
        "inherit_env": entry.inherit_env,
        "strict": entry.strict,
    }
    if entry.file is not None:
        return claude_code_hooks(entry.file, **options)
    assert entry.project is not None
    return claude_code_settings(
        entry.project, plugins=entry.plugins, user_settings=entry.user_settings, **options
    )
