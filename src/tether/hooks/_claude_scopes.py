"""A project's Claude Code hooks as Claude Code resolves them: its settings scopes merged,
its plugins' hooks added, identical handlers run once.

Scopes, highest precedence first: managed (``/etc/claude-code/managed-settings.json``), local
(``.claude/settings.local.json``), project (``.claude/settings.json``), user
(``~/.claude/settings.json``); then each plugin's ``hooks/hooks.json``. Hooks of every scope
run (Claude Code merges them); precedence decides ``disableAllHooks`` (the highest scope that
sets it: true in managed turns every hook off, true in another scope every hook but the
managed ones) and managed's ``allowManagedHooksOnly``; of identical handlers (same event,
matcher, ``if`` and command, URL or prompt) the one of the highest scope is kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ._claude_settings import (
    ClaudeCodeHooks,
    ClaudeCodeHooksError,
    claude_code_hooks,
    deduplicated,
)

__all__ = ["MANAGED_SETTINGS", "claude_code_settings"]

#: Where Claude Code reads managed (enterprise) settings on Linux.
MANAGED_SETTINGS: Final = "/etc/claude-code/managed-settings.json"


def claude_code_settings(
    project_dir: str | os.PathLike[str] = ".",
    *,
    user_settings: str | os.PathLike[str] | None = "~/.claude/settings.json",
    managed_settings: str | os.PathLike[str] | None = MANAGED_SETTINGS,
    plugins: Sequence[str | os.PathLike[str]] = (),
    strict: bool = False,
    withhold_env: Sequence[str] = (),
    inherit_env: bool = True,
) -> ClaudeCodeHooks:
    """Every Claude Code hook of the project at ``project_dir``, scopes merged (see the module
    docstring). A scope whose file does not exist has no hooks; ``user_settings`` or
    ``managed_settings`` None leaves that scope out. ``plugins`` are plugin folders (holding
    ``hooks/hooks.json``) or hooks.json files. The other options are claude_code_hooks()'s."""
    project = Path(project_dir).expanduser()
    scopes: list[tuple[str, Path]] = []
    if managed_settings is not None:
        scopes.append(("managed", Path(managed_settings).expanduser()))
    scopes += [
        ("local", project / ".claude" / "settings.local.json"),
        ("project", project / ".claude" / "settings.json"),
    ]
    if user_settings is not None:
        scopes.append(("user", Path(user_settings).expanduser()))
    present = [(scope, path) for scope, path in scopes if path.is_file()]
    settings = {scope: _flags(path) for scope, path in present}
    allowed = _allowed_scopes([scope for scope, _ in present], settings)
    options: dict[str, Any] = {
        "project_dir": project,
        "strict": strict,
        "withhold_env": withhold_env,
        "inherit_env": inherit_env,
    }
    merged = ClaudeCodeHooks()
    for scope, path in present:
        if scope in allowed:
            _add(merged, claude_code_hooks(path, scope=scope, **options))
    if "plugins" in allowed:
        for plugin in plugins:
            folder = Path(plugin).expanduser()
            file = folder / "hooks" / "hooks.json" if folder.is_dir() else folder
            _add(merged, claude_code_hooks(file, scope="plugin", **options))
    return deduplicated(merged)


def _flags(path: Path) -> dict[str, Any]:
    """The settings of one scope that decide which hooks run."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ClaudeCodeHooksError(f"{path}: cannot read settings: {exc}") from None
    if not isinstance(document, dict):
        raise ClaudeCodeHooksError(f"{path}: expected a JSON object")
    return {k: document[k] for k in ("disableAllHooks", "allowManagedHooksOnly") if k in document}


def _allowed_scopes(present: list[str], settings: dict[str, dict[str, Any]]) -> set[str]:
    """The scopes whose hooks run (``plugins`` for the plugins')."""
    every = {*present, "plugins"}
    decider = next((s for s in present if "disableAllHooks" in settings[s]), None)
    if decider is not None and settings[decider]["disableAllHooks"] is True:
        return set() if decider == "managed" else {"managed"} & every
    if settings.get("managed", {}).get("allowManagedHooksOnly") is True:
        return {"managed"}
    return every


def _add(merged: ClaudeCodeHooks, loaded: ClaudeCodeHooks) -> None:
    merged += loaded
    merged.warnings += loaded.warnings
