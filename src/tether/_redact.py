"""Redaction of secret values from anything a hook, a log line, a journal row or an API sees."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["Redactor"]


class Redactor:
    """Replaces every occurrence of known secret values with ``[REDACTED:<name>]``."""

    __slots__ = ("_pairs",)

    def __init__(self, secrets: Iterable[tuple[str, str]] = ()) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        pairs = [(value, f"[REDACTED:{name}]") for name, value in secrets if value]
        self._pairs = sorted(pairs, key=lambda p: -len(p[0]))

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def text(self, value: str) -> str:
        for secret, mark in self._pairs:
            if secret in value:
                value = value.replace(secret, mark)
        return value

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (strings inside containers included)."""
        if not self._pairs:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value
