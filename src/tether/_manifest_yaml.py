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

from .errors import TetherError

__all__ = ["Loc", "Problem", "line_of", "path_of", "read_yaml", "resolve", "yaml_type"]

Loc = tuple[str | int, ...]
#: One problem: its path (``triggers[1].cron``), its 1-based line (if known) and what is wrong.
Problem = tuple[str, int | None, str]


# -- YAML with line numbers ------------------------------------------------------------------


#: How deeply mappings and lists may nest (a manifest needs a handful of levels).
MAX_DEPTH: Final = 100
#: How many values a manifest may hold once its aliases are expanded.
MAX_VALUES: Final = 100_000
_MERGE: Final = "tag:yaml.org,2002:merge"
_SHOWN_PARTS: Final = 8  # a path deeper than this is shown cut short


class _Refused(TetherError):
    """The document cannot be walked: nested too deeply, looping, or expanding without end."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem[2])
        self.problem = problem


def read_yaml(text: str) -> tuple[Any, dict[Loc, int], list[Problem]]:
    """Parse once: the data, a map from path to 1-based line, and YAML problems.

    The document is walked before it becomes Python data, so one nested deeper than MAX_DEPTH,
    an alias inside itself or aliases that expand past MAX_VALUES values are a problem (and no
    data) instead of a RecursionError or a walk without end later.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, []
        lines: dict[Loc, int] = {}
        problems: list[Problem] = []
        _LineMap(lines, problems).walk(node, (), 1, ())
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = ": ".join(p for p in (exc.context, exc.problem) if p)
        return None, {}, [("", line, f"not valid YAML: {problem}")]
    except yaml.YAMLError as exc:
        return None, {}, [("", None, f"not valid YAML: {exc}")]
    except RecursionError:  # the reader itself recurses once per level
        where = loader.line + 1
        return None, {}, [("", where, f"nested too deeply (at most {MAX_DEPTH} levels)")]
    except _Refused as exc:
        return None, {}, [exc.problem]
    finally:
        loader.dispose()
    return data, lines, problems


class _LineMap:
    """Walks the node graph once: the line of every path, duplicate keys, and the limits."""

    def __init__(self, lines: dict[Loc, int], problems: list[Problem]) -> None:
        self.lines = lines
        self.problems = problems
        self.values = 0

    def walk(self, node: yaml.Node, loc: Loc, depth: int, inside: tuple[int, ...]) -> None:
        line = node.start_mark.line + 1
        self.lines.setdefault(loc, line)
        self.values += 1
        if self.values > MAX_VALUES:
            raise _Refused(
                ("", None, f"the manifest expands to more than {MAX_VALUES} values (aliases?)")
            )
        if not isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            return
        if id(node) in inside:
            raise _Refused((_shown(loc), line, "refers to itself through an alias"))
        if depth > MAX_DEPTH:
            raise _Refused((_shown(loc), line, f"nested more than {MAX_DEPTH} levels deep"))
        inside = (*inside, id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.walk(item, (*loc, i), depth + 1, inside)
            return
        seen: set[str] = set()
        merged: list[yaml.Node] = []
        for key, value in node.value:
            if key.tag == _MERGE:
                merged.append(value)
                continue
            if not isinstance(key, yaml.ScalarNode):
                continue
            name = str(key.value)
            here = (*loc, name)
            if name in seen:
                self.problems.append(
                    (path_of(here), key.start_mark.line + 1, f"duplicate key {name!r}")
                )
                continue
            seen.add(name)
            self.lines[here] = key.start_mark.line + 1
            self.walk(value, here, depth + 1, inside)
        # ``<<: *defaults``: keys written here win; of the merged ones, the first wins.
        for source in merged:
            sources = source.value if isinstance(source, yaml.SequenceNode) else [source]
            for mapping in sources:
                if id(mapping) in inside:
                    raise _Refused((_shown(loc), line, "refers to itself through an alias"))
                if not isinstance(mapping, yaml.MappingNode):
                    continue  # the constructor reports it
                for key, value in mapping.value:
                    name = str(key.value)
                    if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE and name not in seen:
                        seen.add(name)
                        self.walk(value, (*loc, name), depth + 1, inside)


def _shown(loc: Loc) -> str:
    """The path of ``loc``, cut short when it is very deep."""
    if len(loc) <= _SHOWN_PARTS:
        return path_of(loc)
    return path_of(loc[:_SHOWN_PARTS]) + "..."


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
