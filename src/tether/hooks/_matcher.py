"""Matchers: run a hook only for events whose data matches glob patterns.

A pattern is a glob (``deploy*``, matched against the whole value, case-sensitive), or, with
the prefix ``re:``, a regular expression searched anywhere in the value (``re:^(Edit|Write)$``;
anchor it for a whole-value match), as Claude Code's matchers are.

A field may also be a dotted path into a tool call's arguments (``arguments.command``,
``arguments.files.0.path``) on the events whose data holds them (``pre_tool_use``,
``post_tool_use``, ``permission_request``): a text value is matched as it is, any other value
(a list, an object, a number) on its compact JSON text; a path the call does not have does not
match.
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatchcase
from typing import Any, Final

from ._events import EVENTS, HookEvent

__all__ = ["MATCHER_FIELDS", "Matcher"]

#: The prefix of a pattern that is a regular expression.
REGEX_PREFIX: Final = "re:"

#: Which matcher fields each lifecycle event supports (the data key each one reads), from the
#: event table.
MATCHER_FIELDS: Final[dict[HookEvent, tuple[str, ...]]] = {
    event: spec.matchable for event, spec in EVENTS.items()
}

#: The data key under which a matcher may name a dotted path (``arguments.command``), and the
#: events whose payload carries it (from the event table).
PATH_ROOT: Final = "arguments"
PATH_EVENTS: Final = frozenset(
    event for event, spec in EVENTS.items() if PATH_ROOT in spec.payload["properties"]
)


class Matcher:
    """Glob patterns per data key; a hook runs only when every given key matches one pattern."""

    __slots__ = ("_items", "_spec")

    def __init__(self, spec: dict[str, list[str]]) -> None:
        self._spec = spec
        self._items = tuple(
            (tuple(key.split(".")), [_compiled(p) for p in ps]) for key, ps in spec.items()
        )

    @classmethod
    def build(cls, event: HookEvent | str, spec: dict[str, Any]) -> Matcher:
        """Validate ``spec`` for ``event``; raise ValueError naming a field the event lacks."""
        if not isinstance(spec, dict):
            raise TypeError(f"matcher must be a mapping of field to pattern(s), got {spec!r}")
        allowed = MATCHER_FIELDS.get(event, ()) if isinstance(event, HookEvent) else ()
        clean: dict[str, list[str]] = {}
        for key, value in spec.items():
            if key not in allowed and not _is_path(event, key):
                paths = f"{PATH_ROOT}.<path>" if event in PATH_EVENTS else None
                choices = ", ".join([*allowed, *([paths] if paths else [])]) or "none"
                raise ValueError(
                    f"matcher field {key!r} is not available for {event}; allowed: {choices}"
                )
            patterns = [value] if isinstance(value, str) else value
            if not isinstance(patterns, list | tuple) or not patterns:
                raise ValueError(f"matcher.{key} must be a pattern or a non-empty list of them")
            for p in patterns:
                # An empty pattern matches no real value: the hook would silently never run.
                if not isinstance(p, str) or not p or p == REGEX_PREFIX:
                    raise ValueError(f"matcher.{key} patterns must be non-empty strings, got {p!r}")
                if p.startswith(REGEX_PREFIX):
                    try:
                        re.compile(p[len(REGEX_PREFIX) :])
                    except re.error as exc:
                        raise ValueError(
                            f"matcher.{key} pattern {p!r} is not a valid regular expression: {exc}"
                        ) from None
            clean[key] = list(patterns)
        return cls(clean)

    def matches(self, data: dict[str, Any]) -> bool:
        for path, patterns in self._items:
            value = data.get(path[0])
            if len(path) > 1:
                value = _at(value, path[1:])
                if value is not None and not isinstance(value, str):
                    value = json.dumps(
                        value, separators=(",", ":"), ensure_ascii=False, default=str
                    )
            if value is None:
                return False
            text = str(value)
            if not any(
                fnmatchcase(text, p) if isinstance(p, str) else p.search(text) is not None
                for p in patterns
            ):
                return False
        return True

    def as_dict(self) -> dict[str, list[str]]:
        return {k: list(v) for k, v in self._spec.items()}

    def __repr__(self) -> str:
        return f"Matcher({self._spec!r})"


def _is_path(event: HookEvent | str, key: str) -> bool:
    """Whether ``key`` is a dotted path into the arguments of an event that carries them."""
    root, dot, rest = key.partition(".")
    return (
        root == PATH_ROOT
        and bool(dot)
        and event in PATH_EVENTS
        and all(part.strip() for part in rest.split("."))
    )


def _at(value: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``value`` (object keys, list indexes), or None."""
    for part in path:
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def _compiled(pattern: str) -> str | re.Pattern[str]:
    """A glob as is; a ``re:`` pattern compiled."""
    if pattern.startswith(REGEX_PREFIX):
        return re.compile(pattern[len(REGEX_PREFIX) :])
    return pattern
