"""Redaction of secret values from anything a hook, a log line, a journal row or an API sees."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from .hooks import redacted_trace

__all__ = ["MIN_LEARNED_LENGTH", "Redactor", "redacted_trace"]

#: The shortest learned value (see Redactor) that is redacted: an env value such as "1" or
#: "on" would otherwise turn every record into markers. Declared secrets have no minimum.
MIN_LEARNED_LENGTH: Final = 4

#: (secret, mark) pairs; a tuple, replaced as a whole when a secret is added (an empty one,
#: the common case, is shared).
Pairs = tuple[tuple[str, str], ...]


def _ordered(pairs: Pairs) -> Pairs:
    # Longest first, so a secret that contains another is replaced whole. The sort is stable:
    # of two equal values the one listed first (a declared secret) names the marker.
    return tuple(sorted(pairs, key=lambda p: -len(p[0])))


def _replace(value: str, pairs: Pairs) -> str:
    for secret, mark in pairs:
        if secret in value:
            if _MARK_START in value:
                value = _replace_outside_marks(value, secret, mark, pairs)
            else:
                value = value.replace(secret, mark)
    return value


_MARK_START: Final = "[REDACTED:"


def _replace_outside_marks(value: str, secret: str, mark: str, pairs: Pairs) -> str:
    """Replace ``secret`` everywhere but in the markers of ``pairs`` already in ``value``: a
    secret that is part of a secret's name (``secret`` in ``[REDACTED:webhook_secret]``) would
    rewrite the marker, and again at each later redaction of the same text (a record, then its
    log line). Only these exact markers are kept: text that merely looks like one is not."""
    marks = sorted({m for _, m in pairs}, key=len, reverse=True)
    parts = re.split("(" + "|".join(map(re.escape, marks)) + ")", value)
    # With the markers captured, every odd part is a marker.
    return "".join(part if i % 2 else part.replace(secret, mark) for i, part in enumerate(parts))


class _Counter(Protocol):
    """A version counter: its ``value`` changes whenever what it versions may have."""

    @property
    def value(self) -> int: ...


class _Fixed:
    __slots__ = ()
    value = 0


#: The version of what never changes.
_NEVER: Final = _Fixed()


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED:<name>]``.

    ``secrets`` are declared (name, value) pairs, redacted whatever their length. ``learned``,
    when given, answers more pairs known only at run time (the env values of a process's
    command hooks); it must hand back the same tuple object while nothing changed. It is asked
    at every use, or, when it has a ``version`` counter (whose ``value`` changes whenever its
    answer may), only when that changed. Learned values shorter than MIN_LEARNED_LENGTH are
    not redacted.
    """

    __slots__ = ("_at", "_declared", "_learned", "_pairs", "_seen", "_version", "declared")

    def __init__(
        self,
        secrets: Iterable[tuple[str, str]] = (),
        *,
        learned: Callable[[], tuple[tuple[str, str], ...]] | None = None,
    ) -> None:
        secrets = list(secrets)
        self._declared: Pairs = tuple(
            (value, f"[REDACTED:{name}]") for name, value in secrets if value
        )
        self._learned = learned
        self._version: _Counter | None = getattr(learned, "version", None)
        self._at = -1
        if learned is None:  # nothing to learn: a version that never changes, never refreshed
            self._version, self._at = _NEVER, 0
        self._seen: tuple[tuple[str, str], ...] = ()
        self._pairs = _ordered(self._declared)
        #: Redacts the declared secrets only: for what flows back into a run (event data, the
        #: prompt hooks may rewrite, the journal an event is replayed from), which learned
        #: values must not rewrite. Records, logs and API answers use this redactor itself.
        self.declared: Redactor = self if learned is None else Redactor(secrets)

    def declare(self, secrets: Iterable[tuple[str, str]]) -> None:
        """Declare more secrets from now on (a change added a trigger's key, say); one already
        declared is kept as it was. Nothing is ever undeclared: redacting more is safe."""
        secrets = list(secrets)  # read twice: here and by ``declared``
        known = {value for value, _ in self._declared}
        new = tuple((v, f"[REDACTED:{n}]") for n, v in secrets if v and v not in known)
        if not new:
            return
        self._declared = self._declared + new
        more = tuple((v, f"[REDACTED:{n}]") for n, v in self._seen if len(v) >= MIN_LEARNED_LENGTH)
        self._pairs = _ordered(self._declared + more)
        if self.declared is not self:
            self.declared.declare(secrets)

    def _current(self) -> Pairs:
        # Inlined in value(), which the process calls (on ``declared``) on every dispatch.
        version = self._version
        if version is None or version.value != self._at:
            self._refresh()
        return self._pairs

    def _refresh(self) -> None:
        learned = self._learned
        if learned is None:
            return
        if self._version is not None:
            self._at = self._version.value
        found = learned()
        if found is not self._seen:
            self._seen = found
            more = tuple((v, f"[REDACTED:{n}]") for n, v in found if len(v) >= MIN_LEARNED_LENGTH)
            self._pairs = _ordered(self._declared + more)

    def __bool__(self) -> bool:
        return bool(self._current())

    def known(self) -> list[tuple[str, str]]:
        """(name, value) of every value redacted now, declared and learned: what a redactor
        that outlives this one's owner (a runtime's, once a process is removed) declares."""
        return [(mark[len("[REDACTED:") : -1], value) for value, mark in self._current()]

    def text(self, value: str) -> str:
        return _replace(value, self._current())

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (strings inside containers, keys included)."""
        version = self._version
        if version is None or version.value != self._at:
            self._refresh()
        pairs = self._pairs
        return _walk(value, pairs) if pairs else value


def _walk(value: Any, pairs: Pairs) -> Any:
    if isinstance(value, str):
        return _replace(value, pairs)
    if isinstance(value, dict):
        # Keys too: a payload may carry a secret as a key ({"<token>": ...}), and a key is
        # shown, stored and handed to hooks just as a value is.
        return {
            (_replace(k, pairs) if isinstance(k, str) else k): _walk(v, pairs)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, pairs) for v in value)
    return value
