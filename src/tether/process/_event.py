"""TriggerEvent: one thing that asks the agent to run."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["InvalidEventError", "TriggerEvent", "render_prompt"]


class InvalidEventError(ValueError, TypeError):
    """A trigger event was built with a bad field (e.g. a payload that is not JSON)."""


@dataclass(slots=True)
class TriggerEvent:
    """An event from a trigger (or ``inject``): its trigger, a JSON payload and a unique id."""

    trigger_id: str
    trigger_type: str
    payload: Any = field(default_factory=dict)
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        for name in ("trigger_id", "trigger_type", "event_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InvalidEventError(f"{name} must be a non-empty string, got {value!r}")
        try:
            json.dumps(self.payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            # Not the payload (nor its keys): it may hold a secret, which the event knows of
            # none to redact, and this error ends up in tracebacks and logs.
            raise InvalidEventError(f"payload must be JSON-serialisable: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "trigger_id": self.trigger_id,
            "trigger_type": self.trigger_type,
            "payload": self.payload,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TriggerEvent:
        created = data.get("created_at")
        return cls(
            trigger_id=data["trigger_id"],
            trigger_type=data["trigger_type"],
            payload=data.get("payload", {}),
            event_id=data["event_id"],
            created_at=datetime.fromisoformat(created) if created else datetime.now(UTC),
        )


TriggerEvent.__module__ = "tether"
InvalidEventError.__module__ = "tether"


def render_prompt(event: TriggerEvent) -> str:
    """The payload as readable text, then the event's id and its trigger's id and type."""
    lines: list[str] = []
    payload = event.payload
    if isinstance(payload, dict):
        for key, value in payload.items():
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            lines.append(f"{key}: {text}")
    elif payload not in (None, ""):
        lines.append(payload if isinstance(payload, str) else json.dumps(payload, default=str))
    lines.append("")
    lines.append(
        f"(event {event.event_id} from trigger {event.trigger_id!r}, type {event.trigger_type})"
    )
    return "\n".join(lines)
