"""Guardrails: scans of a trigger event's payload and prompt before its run."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any

from ._config import GuardrailConfig

__all__ = ["GuardrailDenial", "scan"]


@dataclass(slots=True, frozen=True)
class GuardrailDenial:
    decided_by: str  # "payload_scan" or "guardrail"
    reason: str


def _payload_text(payload: Any) -> str:
    if isinstance(payload, str):
        return payload
    return json.dumps(payload, default=str, ensure_ascii=False)


async def scan(config: GuardrailConfig, payload: Any, prompt: str) -> GuardrailDenial | None:
    """Run the payload scan, then every scanner; the first refusal wins.

    A scanner that raises refuses too (a broken guardrail must not let the event through).
    """
    if config.payload_scan:
        text = _payload_text(payload).lower()
        for marker in config.markers:
            if marker.lower() in text:
                return GuardrailDenial(
                    "payload_scan", f"payload contains a prompt-injection marker: {marker!r}"
                )
    for scanner in config.scanners:
        name = getattr(scanner, "__name__", type(scanner).__name__)
        try:
            verdict = scanner(payload, prompt)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except Exception as exc:
            return GuardrailDenial("guardrail", f"guardrail {name} failed: {exc!r}")
        if verdict:
            return GuardrailDenial("guardrail", f"{name}: {verdict}")
    return None
