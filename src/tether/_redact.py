"""Redaction of secret values from anything a hook, a log line, a journal row or an API sees."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

__all__ = ["MIN_LEARNED_LENGTH", "Redactor"]

#: The shortest learned value (see Redactor) that is redacted: an env value such as "1" or
#: "on" would otherwise turn every record into markers. Declared secrets have no minimum.
MIN_LEARNED_LENGTH: Final = 4

Pairs = list[tuple[str, str]]


def _ordered(pairs: Pairs) -> Pairs:
    # Longest first, so a secret that contains another is replaced whole. The sort is stable:
    # of two equal values the one listed first (a declared secret) names the marker.
    return sorted(pairs, key=lambda p: -len(p[0]))


def _replace(value: str, pairs: Pairs) -> str:
    for secret, mark in pairs:
        if secret in value:
            value = value.replace(secret, mark)
    return value


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED:<name>]``.

    ``secrets`` are declared (name, value) pairs, redacted whatever their length. ``learned``,
    when given, is asked at every use for more pairs known only at run time (the env values of
    a process's command hooks); it must hand back the same tuple object while nothing changed,
    so that the redactor rebuilds its table only when something did. Learned values shorter
    than MIN_LEARNED_LENGTH are not redacted.
    """

    __slots__ = ("_declared", "_learned", "_pairs", "_seen")

    def __init__(
        self,
        secrets: Iterable[tuple[str, str]] = (),
        *,
        learned: Callable[[], tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        self._declared: Pairs = [(value, f"[REDACTED:{name}]") for name, value in secrets if value]
        self._learned = learned
        self._seen: tuple[tuple[str, str], ...] = ()
        self._pairs = _ordered(self._declared)

    def _current(self) -> Pairs:
        # Inlined in value(), which the process calls on every dispatch.
        learned = self._learned
        if learned is not None and (found := learned()) is not self._seen:
            self._learn(found)
        return self._pairs

    def _learn(self, found: tuple[tuple[str, str], ...]) -> None:
        self._seen = found
        more = [(v, f"[REDACTED:{n}]") for n, v in found if len(v) >= MIN_LEARNED_LENGTH]
        self._pairs = _ordered(self._declared + more)

    def __bool__(self) -> bool:
        return bool(self._current())

    def text(self, value: str) -> str:
        return _replace(value, self._current())

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (strings inside containers included)."""
        learned = self._learned
        if learned is not None and (found := learned()) is not self._seen:
            self._learn(found)
        pairs = self._pairs
        if not pairs:
            return value

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return _replace(value, pairs)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return type(value)(walk(v) for v in value)
            return value

        return walk(value)
