"""TriggerEvent: one thing that asks the agent to run."""

from __future__ import annotations

import json
import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import TetherError

__all__ = [
    "CURRENT_EVENT",
    "InvalidEventError",
    "TriggerEvent",
    "check_traceparent",
    "current_event_id",
    "current_process",
    "render_prompt",
]

#: The process and the id of the event the running task accepts (task_created) or works on
#: (its attempt); hooks and tasks started meanwhile inherit it.
CURRENT_EVENT: ContextVar[tuple[str, str] | None] = ContextVar("tether_current_event", default=None)


def current_event_id() -> str | None:
    """The id of the event being accepted or run by the calling task (None outside one):
    a hook-run listener uses it to tie runs to their event (the dashboard's timeline)."""
    current = CURRENT_EVENT.get()
    return current[1] if current is not None else None


def current_process() -> str | None:
    """The name of the process whose event the calling task accepts or runs (or None)."""
    current = CURRENT_EVENT.get()
    return current[0] if current is not None else None


_TRACEPARENT = re.compile(
    r"(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}"
)


def check_traceparent(value: object) -> str | None:
    """``value`` if it is a W3C ``traceparent`` (version-traceid-spanid-flags, lowercase hex,
    no all-zero ids), None for None; else InvalidEventError saying what is allowed."""
    if value is None:
        return None
    if not isinstance(value, str) or not _TRACEPARENT.fullmatch(value):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise InvalidEventError(
            f"traceparent must be a W3C trace context like "
            f"'00-<32 hex trace id>-<16 hex span id>-01', got {shown}"
        )
    return value


class InvalidEventError(TetherError, ValueError, TypeError):
    """A trigger event was built with a bad field (e.g. a payload that is not JSON)."""


@dataclass(slots=True)
class TriggerEvent:
    """An event from a trigger (or ``inject``): its trigger, a JSON payload and a unique id."""

    trigger_id: str
    trigger_type: str
    payload: Any = field(default_factory=dict)
    event_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: The W3C trace context of whatever sent the event (a webhook's header, an injected
    #: field): its spans are children of it (see tether.telemetry).
    traceparent: str | None = None

    def __post_init__(self) -> None:
        check_traceparent(self.traceparent)
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
        out = {
            "event_id": self.event_id,
            "trigger_id": self.trigger_id,
            "trigger_type": self.trigger_type,
            "payload": self.payload,
            "created_at": self.created_at.isoformat(),
        }
        if self.traceparent is not None:
            out["traceparent"] = self.traceparent
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TriggerEvent:
        created = data.get("created_at")
        return cls(
            trigger_id=data["trigger_id"],
            trigger_type=data["trigger_type"],
            payload=data.get("payload", {}),
            event_id=data["event_id"],
            created_at=datetime.fromisoformat(created) if created else datetime.now(UTC),
            traceparent=data.get("traceparent"),
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
