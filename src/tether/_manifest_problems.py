"""The problems of a manifest's lists that its models cannot see alone: MCP server names used
twice, hooks whose before/after make a cycle or name no hook, unknown or repeated plugins.

Each answer is a list of (location, message), as manifest.spec_problems gathers them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from pydantic import ValidationError

from ._manifest_errors import issues_of
from .hooks import BaseHookConfig, Declared, declaration_problems
from .process import McpServerConfig

__all__ = ["hook_order_problems", "mcp_problems", "plugin_problems"]


def mcp_problems(servers: list[dict[str, Any]]) -> list[tuple[tuple[str | int, ...], str]]:
    problems: list[tuple[tuple[str | int, ...], str]] = []
    names: dict[str, int] = {}
    for i, entry in enumerate(servers):
        try:
            server = McpServerConfig.model_validate(entry)
        except ValidationError as exc:
            # _issues never echoes a value under a secret-looking key (headers, env).
            problems += [
                (("mcp_servers", i, *loc), it.message)
                for loc, it, _ in issues_of(exc, McpServerConfig, {})
            ]
            continue
        if server.name in names:
            problems.append(
                (
                    ("mcp_servers", i, "name"),
                    f"MCP server name {server.name!r} is already used by "
                    f"mcp_servers[{names[server.name]}]",
                )
            )
        names.setdefault(server.name, i)
    return problems


def hook_order_problems(
    hooks: Sequence[BaseHookConfig], *, known: Collection[str] | None = None
) -> list[tuple[tuple[str | int, ...], str]]:
    """The before/after problems of hooks declared together, as the process checks them when
    it registers them: a cycle, blamed on the hook that closes it (``hooks[i].after``), and,
    with ``known`` (the names a run adds: its runtime's shared hooks), a name that is neither
    a hook of the list nor known. ``None``: a name the list lacks may come at run time."""
    if not any(h.before or h.after for h in hooks):
        return []
    by_event: dict[str, list[tuple[int, Declared]]] = {}
    for i, hook in enumerate(hooks):
        named = Declared(_name_of(hook), tuple(hook.before), tuple(hook.after))
        by_event.setdefault(hook.event, []).append((i, named))
    found = [
        p
        for event, mine in by_event.items()
        for p in declaration_problems(mine, [], event, known=known)
    ]
    return [
        (("hooks", p.position, p.field) if p.field else ("hooks", p.position), p.message)
        for p in sorted(found, key=lambda p: p.position)
    ]


def _name_of(hook: BaseHookConfig) -> str:
    """A hook's name as its catalog shows it: its own, else its executor's (command line, URL,
    policy), read from an executor built for a manager of its own and dropped."""
    if hook.name:
        return hook.name
    from .hooks import HookManager

    try:
        return str(getattr(hook.executor(HookManager()), "name", ""))
    except Exception:  # a kind that cannot be built here: no name (nothing can name it)
        return ""


def plugin_problems(names: list[str]) -> list[tuple[tuple[str | int, ...], str]]:
    """Unknown or repeated plugin names (resolving a name imports nothing)."""
    from .hooks import available_plugins

    available = available_plugins()
    problems: list[tuple[tuple[str | int, ...], str]] = []
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            problems.append(
                (("plugins", i), f"plugin {name!r} is already named by plugins[{seen[name]}]")
            )
        elif name not in available:
            problems.append(
                (
                    ("plugins", i),
                    f"unknown plugin {name!r}; available: {', '.join(available) or 'none'}",
                )
            )
        seen.setdefault(name, i)
    return problems
