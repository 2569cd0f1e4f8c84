"""What a process deployed over HTTP may contain.

A command hook, a Claude Code hooks file, a stdio MCP server, a tool named by import path
(``tools: ["pkg.module:function"]``, which imports code on the host) or open-mode tool creation
runs programs on the runtime's host, so the API refuses them (a stdio server added by PATCH
``add_mcp_servers`` too) unless it was created with ``allow_command_deploys=True``. Python
objects (callbacks, handlers, scanners, tool functions, plugin objects) cannot travel over
HTTP at all.

A URL hook sends every event it fires for (prompts, tool arguments) to a service: over HTTP it
may only name a host in the operator's list (``OrchestrationAPI(allowed_hook_hosts=[...])``),
else 403 HOOK_HOST_NOT_ALLOWED; with no list, none is allowed.

A ``${VAR}`` reference anywhere in a configuration sent over HTTP (an MCP server's or URL hook's
header, a secret, an env value...) would be resolved from the runtime's environment when the
process runs, and sent where the client chose: it is refused (403 ENV_NOT_ALLOWED, naming the
field and the variable) unless the operator named that variable
(``OrchestrationAPI(allowed_env=[...])``, ``tether serve --allow-env NAME``). An HTTP MCP
server's ``url`` is held to ``allowed_hook_hosts`` as a URL hook's is (403 MCP_HOST_NOT_ALLOWED).

Plugins named in ``plugins`` are allowed without ``allow_command_deploys``: a name only selects
code the host's operator installed (a built-in or a ``tether.plugins`` entry point); the client
chooses neither a program nor its arguments, as it would with a command hook.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import Any, Final
from urllib.parse import urlsplit

from ..manifest import ProcessSpec
from ..process import FileWatchTrigger, TriggerConfig, is_stdio

__all__ = [
    "COMMANDS_MESSAGE",
    "check_allowed_env",
    "check_hook_hosts",
    "code_only_fields",
    "command_uses",
    "commands_message",
    "env_message",
    "env_refused",
    "hook_host_allowed",
    "hook_hosts_message",
    "host_paths",
    "mcp_hosts_message",
    "mcp_hosts_refused",
    "url_hooks_refused",
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
    uses += [
        f"hooks[{i}] is a {'persistent ' if getattr(hook, 'persistent', False) else ''}command hook"
        for i, hook in enumerate(spec.hooks)
        if getattr(hook, "command", None) is not None
    ]
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


def check_hook_hosts(hosts: Sequence[str]) -> list[str]:
    """The operator's allow-list of URL hook hosts, checked: each entry a host name, an
    address or a ``*`` pattern (``*.policy.internal``), optionally with ``:port``."""
    if isinstance(hosts, str) or not isinstance(hosts, Sequence):
        raise TypeError(
            f"allowed_hook_hosts must be a list of host names, got {type(hosts).__name__}"
        )
    checked: list[str] = []
    for host in hosts:
        if (
            not isinstance(host, str)
            or not host.strip()
            or "/" in host
            or any(c.isspace() for c in host)
        ):
            raise ValueError(
                f"allowed_hook_hosts: {host!r} is not a host name (e.g. 'policy.internal', "
                "'*.corp.example' or '127.0.0.1:8080'; no scheme, no path)"
            )
        checked.append(host.lower())
    return checked


def hook_host_allowed(url: str, allowed: Sequence[str]) -> bool:
    """Whether ``url``'s host (and port) is in ``allowed`` (see check_hook_hosts)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    for entry in allowed:
        name, _, want = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        name = name.strip("[]")
        if fnmatchcase(host, name) and (not want or want == str(port)):
            return True
    return False


def _has_port(entry: str) -> bool:
    head, sep, tail = entry.rpartition(":")
    return bool(sep) and tail.isdigit() and (head.endswith("]") or ":" not in head)


def url_hooks_refused(hooks: Sequence[Any], allowed: Sequence[str]) -> list[tuple[str, str]]:
    """(path, host) of each URL hook in ``hooks`` whose host ``allowed`` does not list."""
    refused = []
    for i, hook in enumerate(hooks):
        url = getattr(hook, "url", None)
        if url is not None and not hook_host_allowed(url, allowed):
            refused.append((f"hooks[{i}].url", urlsplit(url).hostname or "?"))
    return refused


def hook_hosts_message(refused: list[tuple[str, str]], allowed: Sequence[str]) -> str:
    """The 403 message for what :func:`url_hooks_refused` found."""
    path, host = refused[0]
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    listed = ", ".join(allowed) if allowed else "none: the list is empty"
    return (
        f"Refusing to deploy {path}{more}: a URL hook sends every event it fires for to its "
        f"host, and {host!r} is not in this API's allowed_hook_hosts ({listed}). Start the API "
        "with OrchestrationAPI(allowed_hook_hosts=[...]) (tether serve --allow-hook-host HOST) "
        "to allow it, or load the process from a manifest on the host."
    )


def mcp_hosts_refused(
    servers: Sequence[Any], allowed: Sequence[str], prefix: str = "mcp_servers"
) -> list[tuple[str, str]]:
    """(path, host) of each HTTP MCP server in ``servers`` (entries or McpServerConfig) whose
    ``url`` names a host ``allowed`` does not list: its requests carry its headers there."""
    refused = []
    for i, server in enumerate(servers):
        url = server.get("url") if isinstance(server, dict) else getattr(server, "url", None)
        if isinstance(url, str) and not hook_host_allowed(url, allowed):
            try:
                host = urlsplit(url).hostname or "?"
            except ValueError:
                host = "?"
            refused.append((f"{prefix}[{i}].url", host))
    return refused


def mcp_hosts_message(refused: list[tuple[str, str]], allowed: Sequence[str]) -> str:
    """The 403 message for what :func:`mcp_hosts_refused` found."""
    path, host = refused[0]
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    listed = ", ".join(allowed) if allowed else "none: the list is empty"
    return (
        f"Refusing {path}{more}: an MCP server is sent the agent's tool calls and its headers, "
        f"and {host!r} is not in this API's allowed_hook_hosts ({listed}). Start the API with "
        "OrchestrationAPI(allowed_hook_hosts=[...]) (tether serve --allow-hook-host HOST) to "
        "allow it, or load the process from a manifest on the host."
    )


#: The start of a ``${VAR}`` reference (``${VAR}``, ``${VAR:-default}``), as resolve_refs reads
#: them; found wherever it starts, so a reference inside another's default counts too.
_ENV_REF: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_allowed_env(names: Sequence[str]) -> frozenset[str]:
    """The operator's list of host environment variables a configuration sent over HTTP may
    name in a ``${VAR}`` reference, checked: each one a variable name."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise TypeError(f"allowed_env must be a list of variable names, got {type(names).__name__}")
    for name in names:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise ValueError(
                f"allowed_env: {name!r} is not an environment variable name (letters, digits "
                "and '_', not starting with a digit; no '$' or braces)"
            )
    return frozenset(names)


def env_refused(data: Any, prefix: str, allowed: frozenset[str]) -> list[tuple[str, str]]:
    """(path, variable) of every ``${VAR}`` reference in the JSON ``data`` (every string in
    it, at any depth) whose variable ``allowed`` does not name; paths start with ``prefix``."""
    found: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [(prefix, data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            found += [(path, m[1]) for m in _ENV_REF.finditer(value) if m[1] not in allowed]
        elif isinstance(value, dict):
            stack += [(f"{path}.{key}" if path else str(key), v) for key, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    return sorted(found)


def env_message(refused: list[tuple[str, str]]) -> str:
    """The 403 message for what :func:`env_refused` found."""
    path, name = refused[0]
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    return (
        f"Refusing {path}{more}: it names the host environment variable {name!r} (${{{name}}}), "
        "which would be read on the runtime's host and sent wherever this configuration says. "
        "Configuration sent over HTTP may only name variables the operator allowed: give the "
        f"value itself, or start the API with allowed_env=[{name!r}] "
        f"(tether serve --allow-env {name}), or load the process from a manifest on the host."
    )
