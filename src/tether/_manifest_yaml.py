"""Manifest text: YAML read with the line of every value, and ``${VAR}`` references resolved.

What :mod:`tether.manifest` needs before it validates anything. Problems come back as
``(path, line, message)`` tuples, which the manifest turns into its ManifestIssues.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any, Final

import yaml

__all__ = ["Loc", "Problem", "line_of", "path_of", "read_yaml", "resolve", "yaml_type"]

Loc = tuple[str | int, ...]
#: One problem: its path (``triggers[1].cron``), its 1-based line (if known) and what is wrong.
Problem = tuple[str, int | None, str]


# -- YAML with line numbers ------------------------------------------------------------------


def read_yaml(text: str) -> tuple[Any, dict[Loc, int], list[Problem]]:
    """Parse once: the data, a map from path to 1-based line, and YAML problems."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = ": ".join(p for p in (exc.context, exc.problem) if p)
        return None, {}, [("", line, f"not valid YAML: {problem}")]
    except yaml.YAMLError as exc:
        return None, {}, [("", None, f"not valid YAML: {exc}")]
    finally:
        loader.dispose()
    lines: dict[Loc, int] = {}
    issues: list[Problem] = []
    if node is not None:
        _map_lines(node, (), lines, issues)
    return data, lines, issues


def _map_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int], issues: list[Problem]) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            name = str(key.value)
            here = (*loc, name)
            if name in seen:
                issues.append((path_of(here), key.start_mark.line + 1, f"duplicate key {name!r}"))
                continue
            seen.add(name)
            lines[here] = key.start_mark.line + 1
            _map_lines(value, here, lines, issues)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _map_lines(item, (*loc, i), lines, issues)


def line_of(lines: Mapping[Loc, int], loc: Loc) -> int | None:
    """The line of ``loc``, or of its nearest ancestor that the file has."""
    for end in range(len(loc), -1, -1):
        found = lines.get(loc[:end])
        if found is not None:
            return found
    return None


def path_of(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def yaml_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


# -- ${VAR} ----------------------------------------------------------------------------------

_REF: Final = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def resolve(value: Any, env: Mapping[str, str], loc: Loc, missing: list[tuple[Loc, str]]) -> Any:
    """A copy of ``value`` with ``${VAR}`` replaced, except under the top-level ``secrets``.

    A hook's ``command`` written as one string is split into words first and each word is
    resolved on its own: a value (a folder with a space, a variable holding ``-x; y``) stays one
    argument instead of being split into several when the string is split later.
    """
    if isinstance(value, str):
        if _is_command_string(loc) and "${" in value:
            try:
                words = shlex.split(value)
            except ValueError:  # unbalanced quotes: HookConfig reports it
                words = None
            if words:
                return [_substitute(word, env, loc, missing) for word in words]
        return _substitute(value, env, loc, missing)
    if isinstance(value, dict):
        return {
            k: v if loc == () and k == "secrets" else resolve(v, env, (*loc, str(k)), missing)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [resolve(v, env, (*loc, i), missing) for i, v in enumerate(value)]
    return value


def _is_command_string(loc: Loc) -> bool:
    return len(loc) == 3 and loc[0] == "hooks" and isinstance(loc[1], int) and loc[2] == "command"


def _substitute(text: str, env: Mapping[str, str], loc: Loc, missing: list[tuple[Loc, str]]) -> str:
    if "${" not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        escaped, name, default = m.group(1), m.group(2), m.group(3)
        if escaped:
            return m.group(0)[1:]
        found = env.get(name)
        if found is not None and (found != "" or default is None):
            return found
        if default is not None:
            return default
        missing.append((loc, name))
        return m.group(0)

    return _REF.sub(sub, text)
