"""Reading Claude Code hook declarations: the ``hooks`` block of a ``settings.json`` or of a
plugin's ``hooks/hooks.json``, as tether HookConfigs speaking Claude Code's protocol.

::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

Event names are mapped (``PreToolUse`` -> ``pre_tool_use``, ``Stop`` -> ``task_completed``,
see CLAUDE_EVENTS); a tool event's ``matcher`` becomes a ``tool_name`` matcher (exact names,
``*`` or empty for all, anything else a regular expression searched in the name, as Claude
Code does); ``${CLAUDE_PLUGIN_ROOT}`` and ``$CLAUDE_PROJECT_DIR`` are resolved in the command,
which is then split into a program and its arguments: tether runs no shell, so a command
using shell syntax (pipes, ``&&``, redirections, other variables) is refused with the entry
named, as is anything else that cannot be mapped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any, Final

from ..errors import TetherError
from ._claude_code import CLAUDE_DEFAULT_TIMEOUT, CLAUDE_EVENTS
from ._command import CommandHookConfig
from ._config import HookConfig
from ._events import HookEvent
from ._files import FileRefused, read_small_file

__all__ = ["ClaudeCodeHooksError", "claude_code_hooks"]

#: The Claude Code events whose matcher is on the tool's name.
_TOOL_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
)
#: Keys of one hook entry tether reads (``statusMessage`` is shown by Claude Code's UI only).
_ENTRY_KEYS: Final = frozenset({"type", "command", "timeout", "async", "once", "statusMessage"})
_EXACT: Final = re.compile(r"[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*")
_VARIABLES: Final = {
    "CLAUDE_PLUGIN_ROOT": re.compile(r"\$\{CLAUDE_PLUGIN_ROOT\}|\$CLAUDE_PLUGIN_ROOT\b"),
    "CLAUDE_PROJECT_DIR": re.compile(r"\$\{CLAUDE_PROJECT_DIR\}|\$CLAUDE_PROJECT_DIR\b"),
}
_SHELL_OPERATORS: Final = frozenset("|&;<>()")


class ClaudeCodeHooksError(TetherError, ValueError):
    """A Claude Code hooks file cannot be read or holds an entry tether cannot map."""


ClaudeCodeHooksError.__module__ = "tether"


def claude_code_hooks(
    path: str | os.PathLike[str],
    plugin_root: str | os.PathLike[str] | None = None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
) -> list[HookConfig]:
    """The hooks declared in a Claude Code ``settings.json`` or plugin ``hooks/hooks.json``.

    ``plugin_root`` is what ``${CLAUDE_PLUGIN_ROOT}`` stands for (default: for a file at
    ``<plugin>/hooks/hooks.json``, ``<plugin>``); ``project_dir`` is ``$CLAUDE_PROJECT_DIR``
    and every hook's working directory (default: for ``<project>/.claude/settings.json``,
    ``<project>``; otherwise the current directory). Raises ClaudeCodeHooksError naming the
    file and the entry for anything that cannot be mapped.
    """
    file = Path(path)
    where = str(file)
    try:
        text = read_small_file(file, "a Claude Code hooks file").decode("utf-8")
        document = json.loads(text)
    except OSError as exc:
        raise ClaudeCodeHooksError(f"{where}: cannot read: {exc.strerror or exc}") from None
    except FileRefused as exc:  # a device, a FIFO, a file over 1 MiB: refused at once
        raise ClaudeCodeHooksError(f"{where}: {exc}") from None
    except ValueError as exc:
        raise ClaudeCodeHooksError(f"{where}: not a JSON document: {exc}") from None
    if not isinstance(document, dict):
        raise ClaudeCodeHooksError(f"{where}: expected a JSON object with a 'hooks' block")
    block = document.get("hooks", {})
    if not isinstance(block, dict):
        raise ClaudeCodeHooksError(f"{where}: hooks: expected an object of event names")
    if plugin_root is None and file.parent.name == "hooks":
        plugin_root = file.parent.parent
    if project_dir is None:
        project_dir = file.parent.parent if file.parent.name == ".claude" else Path.cwd()
    values = {
        "CLAUDE_PLUGIN_ROOT": None if plugin_root is None else str(Path(plugin_root).resolve()),
        "CLAUDE_PROJECT_DIR": str(Path(project_dir).resolve()),
    }
    found: list[HookConfig] = []
    for claude_event, groups in block.items():
        at = f"{where}: hooks.{claude_event}"
        event = CLAUDE_EVENTS.get(claude_event)
        if event is None:
            known = ", ".join(sorted(CLAUDE_EVENTS))
            raise ClaudeCodeHooksError(
                f"{at}: Claude Code event {claude_event!r} has no tether counterpart; "
                f"mappable events: {known}"
            )
        if not isinstance(groups, list):
            raise ClaudeCodeHooksError(f"{at}: expected a list of matcher groups")
        for i, group in enumerate(groups):
            found += _group(f"{at}[{i}]", claude_event, event, group, values)
    return found


def _group(
    at: str, claude_event: str, event: HookEvent, group: Any, values: dict[str, str | None]
) -> list[HookConfig]:
    if not isinstance(group, dict):
        raise ClaudeCodeHooksError(f"{at}: expected an object with 'matcher' and 'hooks'")
    unknown = set(group) - {"matcher", "hooks"}
    if unknown:
        raise ClaudeCodeHooksError(
            f"{at}: unknown key {sorted(unknown)[0]!r}; a matcher group has 'matcher' and 'hooks'"
        )
    matcher = _matcher(at, claude_event, group.get("matcher"))
    entries = group.get("hooks")
    if not isinstance(entries, list):
        raise ClaudeCodeHooksError(f"{at}.hooks: expected a list of hooks")
    return [
        _entry(f"{at}.hooks[{j}]", claude_event, event, entry, matcher, values)
        for j, entry in enumerate(entries)
    ]


def _matcher(at: str, claude_event: str, raw: Any) -> dict[str, str | list[str]] | None:
    if raw is None or raw in ("", "*"):
        return None
    if not isinstance(raw, str):
        raise ClaudeCodeHooksError(f"{at}.matcher: expected a string, got {raw!r}")
    if claude_event not in _TOOL_EVENTS:
        raise ClaudeCodeHooksError(
            f"{at}.matcher: {raw!r} cannot be mapped: tether's "
            f"{CLAUDE_EVENTS[claude_event].value} has no field a Claude Code {claude_event} "
            "matcher selects on; use '' or '*' (every event)"
        )
    if _EXACT.fullmatch(raw):  # plain names: exact matches
        return {"tool_name": raw.split("|")}
    try:
        re.compile(raw)
    except re.error as exc:
        raise ClaudeCodeHooksError(
            f"{at}.matcher: {raw!r} is not a valid regular expression: {exc}"
        ) from None
    return {"tool_name": f"re:{raw}"}


def _entry(
    at: str,
    claude_event: str,
    event: HookEvent,
    entry: Any,
    matcher: dict[str, str | list[str]] | None,
    values: dict[str, str | None],
) -> CommandHookConfig:
    if not isinstance(entry, dict):
        raise ClaudeCodeHooksError(f"{at}: expected an object with 'type' and 'command'")
    kind = entry.get("type")
    if kind != "command":
        raise ClaudeCodeHooksError(
            f"{at}.type: {kind!r} cannot be mapped: tether runs Claude Code hooks of type "
            "'command' only"
        )
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ClaudeCodeHooksError(
            f"{at}: key {unknown[0]!r} cannot be mapped; tether reads "
            f"{', '.join(sorted(_ENTRY_KEYS))}"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ClaudeCodeHooksError(f"{at}.command: expected a non-empty string")
    timeout = entry.get("timeout", CLAUDE_DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise ClaudeCodeHooksError(
            f"{at}.timeout: {timeout!r} is not a number of seconds, > 0 and at most 3600"
        )
    is_async = entry.get("async", False)
    once = entry.get("once", False)
    for key, flag in (("async", is_async), ("once", once)):
        if not isinstance(flag, bool):
            raise ClaudeCodeHooksError(f"{at}.{key}: expected true or false, got {flag!r}")
    argv = _argv(f"{at}.command", command, values)
    try:
        config = CommandHookConfig(
            event=event.value,
            command=argv,
            timeout=float(timeout),
            matcher=matcher,
            mode="async" if is_async else "sync",
            once=once,
            cwd=values["CLAUDE_PROJECT_DIR"],
            protocol="claude-code",
        )
    except ValueError as exc:
        raise ClaudeCodeHooksError(f"{at}: {exc}") from None
    config._claude_event = claude_event
    config._plugin_root = values["CLAUDE_PLUGIN_ROOT"]
    config._source = "claude-code"
    return config


def _argv(at: str, command: str, values: dict[str, str | None]) -> list[str]:
    """The program and arguments of a Claude Code command, its variables resolved.

    The command is split first and each word's variables resolved after, so a value holding
    a space (a project folder named "My Projects") stays one argument.
    """
    rest = command
    for name, pattern in _VARIABLES.items():
        if pattern.search(command) and values[name] is None:
            raise ClaudeCodeHooksError(
                f"{at}: {command!r} uses ${name}, and no plugin root was given (pass plugin_root=)"
            )
        rest = pattern.sub("", rest)
    if "$" in rest or "`" in rest:
        raise ClaudeCodeHooksError(
            f"{at}: {command!r} uses shell expansion; tether runs no shell: put it in a script "
            "and name the script"
        )
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ClaudeCodeHooksError(f"{at}: {command!r} cannot be split: {exc}") from None
    for token in tokens:
        if token and set(token) <= _SHELL_OPERATORS:
            raise ClaudeCodeHooksError(
                f"{at}: {command!r} uses shell syntax ({token!r}); tether runs no shell: put it "
                "in a script and name the script"
            )
    if not tokens:
        raise ClaudeCodeHooksError(f"{at}: {command!r} names no program")
    return [_resolved(token, values) for token in tokens]


def _resolved(word: str, values: dict[str, str | None]) -> str:
    for name, pattern in _VARIABLES.items():
        value = values[name]
        if value is not None:
            word = pattern.sub(lambda _: value, word)  # noqa: B023 (used at once)
    return word
