"""How processes look in JSON answers. Secret values never leave: every view is redacted."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..process import AgentProcess, WebhookTrigger

__all__ = ["dead_letter_view", "process_detail", "process_summary", "trigger_view"]


def process_summary(process: AgentProcess) -> dict[str, Any]:
    """``process.status()``, redacted."""
    summary: dict[str, Any] = process.redactor.value(process.status())
    return summary


def trigger_view(trigger_id: str, trigger: Any) -> dict[str, Any]:
    """A trigger's settings; a webhook's secret becomes ``signed: true``."""
    view: dict[str, Any] = {"id": trigger_id, **trigger.model_dump(mode="json", exclude={"id"})}
    if isinstance(trigger, WebhookTrigger):
        view.pop("secret", None)
        view["signed"] = trigger.secret is not None
    return view


def process_detail(process: AgentProcess) -> dict[str, Any]:
    """Status, the configuration (secret names only), triggers and the resolved hook chain."""
    config = process.config
    model = config.model if isinstance(config.model, str) else type(config.model).__name__
    settings: dict[str, Any] = {
        "model": model,
        "instructions": config.instructions,
        "execution_mode": config.execution_mode,
        "approval_tools": list(config.approval.tools) if config.approval else [],
        "budget": config.budget.model_dump(mode="json") if config.budget else None,
        "context": config.context.model_dump(mode="json"),
        "open_mode": config.open_mode.model_dump(mode="json"),
        "mcp_servers": len(config.mcp_servers),
        "secrets": sorted(config.secrets),
        "concurrency": config.concurrency,
        "max_queue_size": config.max_queue_size,
        "max_retries": config.max_retries,
    }
    detail = {
        **process.status(),
        "config": settings,
        "triggers": [trigger_view(i, t) for i, t in process.triggers],
        "hooks": [_hook_view(info) for info in process.hooks.describe()],
    }
    view: dict[str, Any] = process.redactor.value(detail)
    return view


def _hook_view(info: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(info) and not isinstance(info, type):
        return {k: v for k, v in dataclasses.asdict(info).items() if _jsonable(v)}
    return {"name": str(info)}


def _jsonable(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | list | dict | tuple)


def dead_letter_view(process: AgentProcess, entry: dict[str, Any]) -> dict[str, Any]:
    event = entry["event"]
    view = {
        "event_id": entry["event_id"],
        "trigger_id": event.trigger_id,
        "trigger_type": event.trigger_type,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
        "reason": entry["reason"],
        "error": entry["error"],
        "attempts": entry["attempts"],
        "timestamp": entry["timestamp"].isoformat(),
    }
    redacted: dict[str, Any] = process.redactor.value(view)
    return redacted
