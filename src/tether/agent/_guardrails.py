"""Guardrails: scans of a trigger event's payload and prompt before its run."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._config import GuardrailConfig

__all__ = ["GuardrailBlock", "scan", "scan_payload"]


@dataclass(slots=True, frozen=True)
class GuardrailBlock:
    """A guardrail blocks a trigger event: which scan decided, and why."""

    decided_by: str  # "payload_scan" or "guardrail"
    reason: str


def _strings(value: Any, out: list[str]) -> list[str]:
    """Every string in a JSON value, keys included, depth first."""
    kind = type(value)
    if kind is str:
        out.append(value)
    elif kind is dict:
        for key, item in value.items():
            out.append(str(key))
            _strings(item, out)
    elif kind is list or kind is tuple:
        for item in value:
            _strings(item, out)
    return out


def _payload_text(payload: Any) -> str:
    """The payload's strings, one per line: what the markers are looked for in.

    Raw strings rather than JSON text, so that escaping never hides a marker (and it is
    several times cheaper than encoding: this runs for every event).
    """
    if isinstance(payload, str):
        return payload
    return "\n".join(_strings(payload, []))


@lru_cache(maxsize=64)
def _lowered(markers: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((marker, marker.lower()) for marker in markers)


def scan_payload(config: GuardrailConfig, payload: Any) -> GuardrailBlock | None:
    """The payload scan alone (no scanner): a refusal if a prompt-injection marker is found."""
    if config.payload_scan:
        text = _payload_text(payload).lower()
        for marker, lowered in _lowered(tuple(config.markers)):
            if lowered in text:
                return GuardrailBlock(
                    "payload_scan", f"payload contains a prompt-injection marker: {marker!r}"
                )
    return None


async def scan(config: GuardrailConfig, payload: Any, prompt: str) -> GuardrailBlock | None:
    """Run the payload scan, then every scanner; the first refusal wins.

    A scanner that raises refuses too (a broken guardrail must not let the event through).
    """
    block = scan_payload(config, payload)
    if block is not None:
        return block
    for scanner in config.scanners:
        name = getattr(scanner, "__name__", type(scanner).__name__)
        try:
            verdict = scanner(payload, prompt)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as exc:
            return GuardrailBlock("guardrail", f"guardrail {name} failed: {exc!r}")
        if verdict:
            return GuardrailBlock("guardrail", f"{name}: {verdict}")
    return None
