"""How processes look in JSON answers. Secret values never leave: every view is redacted."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..process import AgentProcess, WebhookTrigger

if TYPE_CHECKING:
    from ..hooks import HookInfo

__all__ = [
    "artifact_view",
    "catalog_entry",
    "dead_letter_view",
    "process_detail",
    "process_summary",
    "trigger_view",
]


def process_summary(process: AgentProcess) -> dict[str, Any]:
    """``process.status()`` (whose ``hook_count`` counts the process's own hooks, as the
    reference has it) with ``hooks_in_chain``, redacted."""
    summary: dict[str, Any] = process.redactor.value(
        {**process.status(), "hooks_in_chain": hooks_in_chain(process)}
    )
    return summary


def hooks_in_chain(process: AgentProcess) -> dict[str, int]:
    """How many hooks the process's resolved chain runs (what the catalog lists for it): in
    all, and how many of them are shared or inherited."""
    sources = [info.source for info in process.hooks.describe()]
    return {
        "total": len(sources),
        "shared": sources.count("shared"),
        "inherited": sources.count("inherited"),
    }


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
        "mission": config.mission,
        "execution_mode": config.execution_mode,
        "approval_tools": list(config.approval.tools) if config.approval else [],
        "budget": config.budget.model_dump(mode="json") if config.budget else None,
        "context": config.context.model_dump(mode="json"),
        "open_mode": config.open_mode.model_dump(mode="json"),
        "mcp_servers": len(config.mcp_servers),
        "mcp_server_names": [
            s["name"] for s in config.mcp_servers if isinstance(s.get("name"), str)
        ],
        "health": config.restart.model_dump(mode="json"),
        "next_rollback": process.next_rollback.change if process.next_rollback else None,
        "secrets": sorted(config.secrets),
        "concurrency": config.concurrency,
        "max_queue_size": config.max_queue_size,
        "max_retries": config.max_retries,
    }
    detail = {
        **process.status(),
        "hooks_in_chain": hooks_in_chain(process),
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


def catalog_entry(process: AgentProcess, info: HookInfo) -> dict[str, Any]:
    """One resolved hook of ``process`` for the catalog: how and when it runs, and for a
    command hook its command as declared (``${VAR}`` unresolved; env values never leave).

    ``required`` and ``timeout_ms`` repeat ``fail_closed`` and ``timeout`` under the names
    other hook catalogs use; ``metadata`` holds the hook's tag and owner as strings.
    """
    entry = {
        "process": process.name,
        "hook_id": info.hook_id,
        "event": info.event,
        "name": info.name,
        "source": info.source,
        "mode": info.mode,
        "executor_kind": info.executor_kind,
        "protocol": info.protocol,
        "priority": info.priority,
        "order": info.order,
        "timeout": info.timeout,
        "timeout_ms": None if info.timeout is None else round(info.timeout * 1000),
        "fail_closed": info.fail_closed,
        "required": info.fail_closed,
        "once": info.once,
        "tag": info.tag,
        "matcher": info.matcher,
        "enabled": info.enabled,
        "command": list(info.command) if isinstance(info.command, tuple) else info.command,
        "owner": info.owner,
        "metadata": {k: str(v) for k, v in (("tag", info.tag), ("owner", info.owner)) if v},
    }
    view: dict[str, Any] = process.redactor.value(entry)
    return view


def artifact_view(process: AgentProcess, item: dict[str, Any]) -> dict[str, Any]:
    """A stored artifact: its name, payload and when it was written (ISO 8601, UTC)."""
    created = item.get("created_at")
    view = {
        "name": item["name"],
        "payload": item["payload"],
        "created_at": (
            datetime.fromtimestamp(created, UTC).isoformat()
            if isinstance(created, int | float)
            else None
        ),
    }
    redacted: dict[str, Any] = process.redactor.value(view)
    return redacted
