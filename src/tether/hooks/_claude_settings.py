"""Reading Claude Code hook declarations: the ``hooks`` block of a ``settings.json`` or of a
plugin's ``hooks/hooks.json``, as tether HookConfigs speaking Claude Code's protocol.

::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
                               "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}

The loader is tolerant, as Claude Code is: it loads every hook it can map, and for each thing
it cannot (an event with no tether counterpart, a handler type it does not run, a malformed
entry) it records a warning naming the file, the path and why (``ClaudeCodeHooks.warnings``,
also logged); ``strict=True`` raises ClaudeCodeHooksError instead. Event names are mapped by
CLAUDE_EVENTS; a tool event's ``matcher`` becomes a ``tool_name`` matcher, another event's is
checked by the hook on the field Claude Code matches (SessionStart ``source``, ...), before
anything is spawned; a handler's ``if`` (``Bash(git *)``) becomes an argument matcher. A
command is kept as written: it runs with ``sh -c`` in the project directory (see
ClaudeCodeHook). :func:`claude_code_settings` merges a project's settings scopes.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ..errors import TetherError
from ._claude_code import CLAUDE_DEFAULT_TIMEOUT, CLAUDE_EVENTS, CLAUDE_MATCHED
from ._events import BLOCKABLE_EVENTS, HookEvent
from ._files import FileRefused, read_small_file
from .kinds._base import BaseHookConfig
from .kinds._command import CommandHookConfig
from .kinds._http import HttpHookConfig
from .kinds._prompt import PromptHookConfig

__all__ = [
    "ClaudeCodeHooks",
    "ClaudeCodeHooksError",
    "claude_code_hooks",
    "deduplicated",
    "grouped",
]

logger = logging.getLogger("tether.hooks")

#: The Claude Code events whose matcher is on the tool's name.
_TOOL_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
)
#: Keys of a handler tether reads or knowingly passes over (shown by Claude Code's UI only).
_ENTRY_KEYS: Final = frozenset(
    {
        "type",
        "command",
        "timeout",
        "async",
        "once",
        "statusMessage",
        "if",
        "onFailure",
        "url",
        "headers",
        "allowedEnvVars",
        "prompt",
        "model",
        "description",
    }
)
_EXACT: Final = re.compile(r"[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*")
#: Handler types tether runs with one of its own executors.
_TYPES: Final = ("command", "http", "prompt")
#: The argument a Claude Code permission rule (``Tool(pattern)``) tests, per tool.
_RULE_ARGUMENT: Final = {
    "Bash": "command",
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
    "Glob": "pattern",
    "Grep": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
}
_RULE: Final = re.compile(r"\s*([A-Za-z0-9_.*-]+)\s*(?:\((.*)\))?\s*", re.DOTALL)


class ClaudeCodeHooksError(TetherError, ValueError):
    """A Claude Code hooks file cannot be read, or (strict) holds an entry tether cannot map."""


ClaudeCodeHooksError.__module__ = "tether"


class ClaudeCodeHooks(list[BaseHookConfig]):
    """The hooks loaded from Claude Code files, and ``warnings``: one line per thing that
    could not be mapped (each names the file, the path in it and why)."""

    def __init__(self, hooks: Sequence[BaseHookConfig] = (), warnings: Sequence[str] = ()) -> None:
        super().__init__(hooks)
        self.warnings: list[str] = list(warnings)


ClaudeCodeHooks.__module__ = "tether"


class _Skip(TetherError):
    """One entry cannot be mapped: skipped with a warning (raised when strict)."""


def claude_code_hooks(
    path: str | os.PathLike[str],
    plugin_root: str | os.PathLike[str] | None = None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
    plugin_data: str | os.PathLike[str] | None = None,
    strict: bool = False,
    withhold_env: Sequence[str] = (),
    inherit_env: bool = True,
    scope: str | None = None,
) -> ClaudeCodeHooks:
    """The hooks declared in a Claude Code ``settings.json`` or plugin ``hooks/hooks.json``.

    ``plugin_root`` is ``CLAUDE_PLUGIN_ROOT`` (default: for ``<plugin>/hooks/hooks.json``,
    ``<plugin>``), ``plugin_data`` ``CLAUDE_PLUGIN_DATA`` (default
    ``~/.claude/plugins/data/<plugin folder name>``, made when first loaded); ``project_dir``
    is ``CLAUDE_PROJECT_DIR`` and every hook's working directory (default: for
    ``<project>/.claude/settings*.json``, ``<project>``; else the current directory). A leading
    ``~`` in each is expanded. The programs get the host environment less the declared secrets
    and ``withhold_env``; ``inherit_env=False`` gives them tether's minimal environment.
    What cannot be mapped is a warning (``strict``: a ClaudeCodeHooksError); a file that
    cannot be read or is no JSON object is always an error. ``scope`` names the settings
    scope the file is (``claude_origin["scope"]``; claude_code_settings() sets it, and decides
    ``disableAllHooks`` over every scope: a file's own is honoured when no scope is named).
    """
    file = Path(path).expanduser()
    document = _read(file)
    where = str(file)
    loaded = ClaudeCodeHooks()
    if document.get("disableAllHooks") is True and scope is None:  # a scope's: merged first
        return loaded
    block = document.get("hooks", {})
    if not isinstance(block, dict):
        raise ClaudeCodeHooksError(f"{where}: hooks: expected an object of event names")
    if plugin_root is None and file.parent.name == "hooks" and file.name == "hooks.json":
        plugin_root = file.parent.parent
    if project_dir is None:
        project_dir = file.parent.parent if file.parent.name == ".claude" else Path.cwd()
    values: dict[str, str | None] = {
        "CLAUDE_PROJECT_DIR": _folder(project_dir),
        "CLAUDE_PLUGIN_ROOT": None if plugin_root is None else _folder(plugin_root),
        "CLAUDE_PLUGIN_DATA": None,
    }
    if plugin_root is not None:
        data = plugin_data or Path("~/.claude/plugins/data") / Path(str(plugin_root)).name
        values["CLAUDE_PLUGIN_DATA"] = _folder(data)
    options: dict[str, Any] = {"withhold_env": list(withhold_env), "inherit_env": inherit_env}
    if scope is not None:
        options["scope"] = scope
    for claude_event, groups in block.items():
        at = f"{where}: hooks.{claude_event}"
        try:
            event = CLAUDE_EVENTS.get(claude_event)
            if event is None:
                known = ", ".join(sorted(CLAUDE_EVENTS))
                raise _Skip(
                    f"{at}: Claude Code event {claude_event!r} has no tether counterpart "
                    f"(skipped); mappable events: {known}"
                )
            if not isinstance(groups, list):
                raise _Skip(f"{at}: expected a list of matcher groups")
        except _Skip as skip:
            _warn(loaded, skip, strict)
            continue
        for i, group in enumerate(groups):
            _group(loaded, f"{at}[{i}]", claude_event, event, group, values, options, strict)
    if plugin_root is not None and loaded and values["CLAUDE_PLUGIN_DATA"] is not None:
        Path(values["CLAUDE_PLUGIN_DATA"]).mkdir(parents=True, exist_ok=True)
    return grouped(deduplicated(loaded))


def _read(file: Path) -> dict[str, Any]:
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
    return document


def _folder(path: str | os.PathLike[str]) -> str:
    return str(Path(path).expanduser().resolve())


def _warn(loaded: ClaudeCodeHooks, skip: _Skip, strict: bool) -> None:
    if strict:
        raise ClaudeCodeHooksError(str(skip)) from None
    loaded.warnings.append(str(skip))
    logger.warning("%s", skip)


def _group(
    loaded: ClaudeCodeHooks,
    at: str,
    claude_event: str,
    event: HookEvent,
    group: Any,
    values: dict[str, str | None],
    options: dict[str, Any],
    strict: bool,
) -> None:
    try:
        if not isinstance(group, dict):
            raise _Skip(f"{at}: expected an object with 'matcher' and 'hooks'")
        unknown = sorted(set(group) - {"matcher", "hooks", "description"})
        if unknown:
            _warn(loaded, _Skip(f"{at}: key {unknown[0]!r} ignored"), strict)
        tool_matcher, claude_matcher = _matcher(at, claude_event, group.get("matcher"))
        entries = group.get("hooks")
        if not isinstance(entries, list):
            raise _Skip(f"{at}.hooks: expected a list of hooks")
    except _Skip as skip:
        _warn(loaded, skip, strict)
        return
    for j, entry in enumerate(entries):
        unknown = sorted(set(entry) - _ENTRY_KEYS) if isinstance(entry, dict) else []
        if unknown:
            _warn(loaded, _Skip(f"{at}.hooks[{j}]: key {unknown[0]!r} ignored"), strict)
        try:
            config = _entry(f"{at}.hooks[{j}]", claude_event, event, entry, tool_matcher, values)
        except _Skip as skip:
            _warn(loaded, skip, strict)
            continue
        config._claude = {
            "event": claude_event,
            "matcher": claude_matcher,
            "file": at.split(": ", 1)[0],
            "group": at.split(": ", 1)[-1],
            **{k: v for k, v in values.items() if v is not None},
            **options,
        }
        config._source = "claude-code"
        loaded.append(config)


def _matcher(
    at: str, claude_event: str, raw: Any
) -> tuple[dict[str, str | list[str]] | None, str | None]:
    """The tether matcher of a tool event's ``matcher``, or the Claude Code pattern the hook
    checks itself on the field another event matches (CLAUDE_MATCHED)."""
    if raw is None or raw in ("", "*"):
        return None, None
    if not isinstance(raw, str):
        raise _Skip(f"{at}.matcher: expected a string, got {raw!r}")
    try:
        re.compile(raw)
    except re.error as exc:
        raise _Skip(f"{at}.matcher: {raw!r} is not a valid regular expression: {exc}") from None
    if claude_event in _TOOL_EVENTS:
        if _EXACT.fullmatch(raw):  # plain names: exact matches
            return {"tool_name": raw.split("|")}, None
        return {"tool_name": f"re:{raw}"}, None
    if claude_event not in CLAUDE_MATCHED:
        return None, None  # Claude Code ignores a matcher on an event it does not match
    return None, raw


def _entry(
    at: str,
    claude_event: str,
    event: HookEvent,
    entry: Any,
    matcher: dict[str, str | list[str]] | None,
    values: dict[str, str | None],
) -> BaseHookConfig:
    if not isinstance(entry, dict):
        raise _Skip(f"{at}: expected an object with 'type' and 'command'")
    kind = entry.get("type", "command")
    if kind not in _TYPES:
        raise _Skip(
            f"{at}.type: {kind!r} is not supported by tether (skipped); it runs Claude Code "
            f"handlers of type {', '.join(repr(t) for t in _TYPES)}"
        )
    timeout = entry.get("timeout", CLAUDE_DEFAULT_TIMEOUT[kind])
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise _Skip(f"{at}.timeout: {timeout!r} is not a number of seconds, > 0 and at most 3600")
    is_async = entry.get("async", False)
    once = entry.get("once", False)
    for key, flag in (("async", is_async), ("once", once)):
        if not isinstance(flag, bool):
            raise _Skip(f"{at}.{key}: expected true or false, got {flag!r}")
    fail_closed = entry.get("onFailure") == "block" and not is_async
    if "if" in entry:
        project = values["CLAUDE_PROJECT_DIR"] or "."
        matcher = _if_matcher(f"{at}.if", claude_event, entry["if"], matcher, project)
    common: dict[str, Any] = {
        "event": event.value,
        "timeout": float(timeout),
        "matcher": matcher,
        "mode": "async" if is_async else "sync",
        "once": once,
        "fail_closed": fail_closed and event in BLOCKABLE_EVENTS,
    }
    try:
        if kind == "http":
            return _http(at, entry, common)
        if kind == "prompt":
            return _prompt(at, entry, common)
        command = entry.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _Skip(f"{at}.command: expected a non-empty string")
        try:
            shlex.split(command)
        except ValueError as exc:  # sh would refuse it too
            raise _Skip(f"{at}.command: {command!r} cannot be split: {exc}") from None
        return CommandHookConfig(
            **common, command=command, cwd=values["CLAUDE_PROJECT_DIR"], protocol="claude-code"
        )
    except ValueError as exc:
        raise _Skip(f"{at}: {exc}") from None


def _http(at: str, entry: dict[str, Any], common: dict[str, Any]) -> BaseHookConfig:
    url = entry.get("url")
    if not isinstance(url, str) or not url:
        raise _Skip(f"{at}.url: expected a URL")
    allowed = entry.get("allowedEnvVars") or []
    headers: dict[str, str] = {}
    for name, value in (entry.get("headers") or {}).items():
        # $VAR / ${VAR} of an allowed variable becomes tether's ${VAR}, resolved at each call;
        # any other reference is left as text, as Claude Code leaves it.
        headers[name] = re.sub(
            r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?",
            lambda m: f"${{{m.group(1)}}}" if m.group(1) in allowed else m.group(0),
            str(value),
        )
    return HttpHookConfig(**common, url=url, headers=headers, protocol="claude-code")


def _prompt(at: str, entry: dict[str, Any], common: dict[str, Any]) -> BaseHookConfig:
    prompt = entry.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _Skip(f"{at}.prompt: expected a non-empty text")
    # A Claude model name means nothing to tether's providers: the process's model answers.
    return PromptHookConfig(**common, prompt=prompt.replace("$ARGUMENTS", "the event below"))


def _if_matcher(
    at: str,
    claude_event: str,
    rule: Any,
    matcher: dict[str, str | list[str]] | None,
    project: str,
) -> dict[str, str | list[str]] | None:
    """A handler's ``if`` (a permission rule, ``Bash(git *)``) as tether matcher fields: the
    tool's name and, in parentheses, a glob on the argument that tool's rules test (a file
    path's as Claude Code reads it: ``//`` absolute, ``/`` from the project, ``~/`` from the
    home folder, a bare name anywhere)."""
    found = _RULE.fullmatch(rule) if isinstance(rule, str) else None
    if claude_event not in _TOOL_EVENTS or found is None:
        raise _Skip(f"{at}: {rule!r} cannot be mapped (a 'Tool(pattern)' rule on a tool event)")
    tool, pattern = found.group(1), found.group(2)
    out: dict[str, str | list[str]] = dict(matcher or {})
    if tool != "*":
        group = out.get("tool_name")
        if group is not None and not _selects(group, tool):
            raise _Skip(f"{at}: {rule!r} names a tool the group's matcher {group!r} does not")
        out["tool_name"] = [tool]
    if pattern is None or pattern.strip() in ("", "*"):
        return out
    argument = _RULE_ARGUMENT.get(tool)
    if argument is None:
        raise _Skip(f"{at}: {rule!r}: tether knows no argument {tool!r} rules test")
    pattern = pattern.strip()
    if pattern.endswith(":*"):  # Claude Code's older prefix form, "npm run test:*"
        pattern = pattern[:-2] + "*"
    if argument.endswith("_path"):
        pattern = _path_pattern(pattern, project)
    out[f"arguments.{argument}"] = pattern
    return out


def _selects(group: str | list[str], tool: str) -> bool:
    """Whether a group's ``tool_name`` patterns take ``tool`` in."""
    for pattern in [group] if isinstance(group, str) else group:
        if pattern.startswith("re:"):
            if re.search(pattern[3:], tool):
                return True
        elif pattern == tool:
            return True
    return False


def _path_pattern(pattern: str, project: str) -> str:
    if pattern.startswith("//"):
        return pattern[1:]
    if pattern.startswith("~/"):
        return os.path.expanduser(pattern)
    if pattern.startswith("/"):
        return project.rstrip("/") + pattern
    if "/" not in pattern.rstrip("/") or pattern.startswith("*"):
        return pattern if pattern.startswith("*") else f"*/{pattern}"
    return f"{project.rstrip('/')}/{pattern}"


def _identity(hook: BaseHookConfig) -> tuple[Any, ...]:
    origin = hook.claude_origin
    handler = getattr(hook, "command", None) or getattr(hook, "url", None)
    handler = handler or getattr(hook, "prompt", None)
    matcher = json.dumps(hook.matcher, sort_keys=True)
    return (hook.event, origin.get("event"), origin.get("matcher"), matcher, str(handler))


def deduplicated(hooks: ClaudeCodeHooks) -> ClaudeCodeHooks:
    """``hooks`` with each identical handler once (the first, of the highest scope)."""
    seen: set[tuple[Any, ...]] = set()
    kept = ClaudeCodeHooks(warnings=hooks.warnings)
    for hook in hooks:
        key = _identity(hook)
        if key not in seen:
            seen.add(key)
            kept.append(hook)
    return kept


def grouped(hooks: ClaudeCodeHooks) -> ClaudeCodeHooks:
    """``hooks`` with the command handlers of each matcher group that would run together (same
    matcher, mode, ``once`` and ``onFailure``) made one hook running them in parallel, as
    Claude Code does (``claude_origin["parallel"]``: the others' commands and timeouts; see
    ClaudeCodeHook). Hooks of other kinds, and the groups' order, stay as they are."""
    kept = ClaudeCodeHooks(warnings=hooks.warnings)
    leaders: dict[tuple[Any, ...], BaseHookConfig] = {}
    for hook in hooks:
        command = getattr(hook, "command", None)
        if not isinstance(command, str):
            kept.append(hook)
            continue
        origin = hook._claude
        key = (
            origin.get("file"),
            origin.get("group"),
            json.dumps(hook.matcher, sort_keys=True),
            hook.mode,
            hook.once,
            hook.fail_closed,
        )
        leader = leaders.get(key)
        if leader is None:
            leaders[key] = hook
            kept.append(hook)
            continue
        leader._claude.setdefault("parallel", []).append(
            {"command": command, "timeout": hook.timeout}
        )
        leader._claude.setdefault("own_timeout", leader.timeout)
        if hook.timeout is not None and (leader.timeout or 0) < hook.timeout:
            leader.timeout = hook.timeout  # the group's: its slowest handler's
    return kept
