"""What a process deployed over HTTP may contain.

A command hook, a Claude Code hooks file, a stdio MCP server, a tool named by import path
(``tools: ["pkg.module:function"]``, which imports code on the host) or open-mode tool creation
runs programs on the runtime's host, so the API refuses them (a stdio server added by PATCH
``add_mcp_servers`` too) unless it was created with ``allow_command_deploys=True``. Python
objects (callbacks, handlers, scanners, tool functions, plugin objects) cannot travel over
HTTP at all.

Plugins named in ``plugins`` are allowed without ``allow_command_deploys``: a name only selects
code the host's operator installed (a built-in or a ``tether.plugins`` entry point); the client
chooses neither a program nor its arguments, as it would with a command hook.
"""

from __future__ import annotations

from typing import Any, Final

from ..manifest import ProcessSpec
from ..process import FileWatchTrigger, TriggerConfig
from ..process._mcp import is_stdio

__all__ = [
    "COMMANDS_MESSAGE",
    "code_only_fields",
    "command_uses",
    "commands_message",
    "host_paths",
]

COMMANDS_MESSAGE: Final = (
    "Refusing to deploy {what}: anyone holding the API token could run any program on the "
    "runtime's host machine, as the runtime's user. Load the process from a manifest on the "
    "host, register a callback hook in code, or start the API with allow_command_deploys=True "
    "(tether serve --allow-command-deploys)."
)

_CODE: Final[dict[str, str]] = {
    "callback": "Python callbacks cannot be sent over HTTP; register them in code (process.hooks)",
    "handler": "an approval handler is a Python function; set it in code on the runtime's host",
    "scanners": "guardrail scanners are Python functions; set them in code on the runtime's host",
    "tools": "a tool is named by its import path, 'package.module:function' (a string); tool "
    "functions are Python code, registered in code on the runtime's host",
    "plugins": "a plugin is activated by its name (a string); plugin objects are Python code, "
    "added in code on the runtime's host",
}


def code_only_fields(config: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, why) for every field of ``config`` that only code can set."""
    found: list[tuple[str, str]] = []
    hooks = config.get("hooks")
    if isinstance(hooks, list):
        for i, hook in enumerate(hooks):
            if isinstance(hook, dict) and "callback" in hook:
                found.append((f"hooks[{i}].callback", _CODE["callback"]))
    approval = config.get("approval")
    if isinstance(approval, dict) and "handler" in approval:
        found.append(("approval.handler", _CODE["handler"]))
    guardrails = config.get("guardrails")
    if isinstance(guardrails, dict) and "scanners" in guardrails:
        found.append(("guardrails.scanners", _CODE["scanners"]))
    tools = config.get("tools")
    if isinstance(tools, list):
        for i, entry in enumerate(tools):
            if not isinstance(entry, str):
                found.append((f"tools[{i}]", _CODE["tools"]))
    plugins = config.get("plugins")
    if isinstance(plugins, list):
        for i, plugin in enumerate(plugins):
            if not isinstance(plugin, str):
                found.append((f"plugins[{i}]", _CODE["plugins"]))
    return found


def command_uses(spec: ProcessSpec) -> list[str]:
    """What in ``spec`` would run a program on the host, in words, first to last."""
    uses: list[str] = []
    uses += [f"hooks[{i}] is a command hook" for i in range(len(spec.hooks))]
    uses += [
        f"claude_code_hooks[{i}] is a file of Claude Code command hooks"
        for i in range(len(spec.claude_code_hooks))
    ]
    for i, server in enumerate(spec.mcp_servers):
        if is_stdio(server):
            uses.append(f"mcp_servers[{i}] is a stdio MCP server")
    uses += [
        f"tools[{i}] is a tool imported by path ({path}), code run on the host"
        for i, path in enumerate(spec.tools)
    ]
    if spec.open_mode.allow_tool_creation:
        uses.append("open_mode.allow_tool_creation, which lets the agent create tools")
    return uses


def commands_message(uses: list[str]) -> str:
    """The 403 message for what :func:`command_uses` found."""
    what = _as_subject(uses[0])
    if len(uses) > 1:
        what += f" (and {len(uses) - 1} more)"
    return COMMANDS_MESSAGE.format(what=what)


def _as_subject(use: str) -> str:
    # "hooks[0] is a command hook" -> "hooks[0], a command hook"
    head, _, tail = use.partition(" is ")
    return f"{head}, {tail}" if tail else use


def host_paths(
    triggers: list[TriggerConfig], journal_path: str | None, artifacts_dir: str | None
) -> list[str]:
    """Fields naming a path on the host: a watched folder, a journal, an artifacts folder."""
    found = [
        f"triggers[{i}].watch_path"
        for i, trigger in enumerate(triggers)
        if isinstance(trigger, FileWatchTrigger)
    ]
    if journal_path is not None:
        found.append("journal_path")
    if artifacts_dir is not None:
        found.append("artifacts_dir")
    return found
