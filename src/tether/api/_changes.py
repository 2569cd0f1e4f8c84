"""The configuration endpoints of the control API: PATCH .../config and POST .../rewind.

Every change is an operator change: it dispatches config_change with source "operator" and always
applies. A PATCH is checked whole before any of it applies; its fields then apply in this
order, each as one change (so one rollback undoes one of them): instructions, mission, budget,
health, remove_triggers, add_triggers, remove_mcp_servers, add_mcp_servers. ``rollback`` is
sent alone.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..agent import BudgetConfig
from ..process import (
    MISSION_MAX_CHARS,
    REWIND_WAIT,
    AppliedChange,
    McpServerConfig,
    NothingToRollBackError,
    ProcessBusyError,
    RestartPolicy,
    TriggerConfig,
    WebhookTrigger,
    check_mission,
    is_stdio,
    server_name,
)
from ..runtime import WebhookClashError
from ._deploy import commands_message, host_paths
from ._errors import APIError
from ._views import trigger_view

if TYPE_CHECKING:
    from ..process import AgentProcess
    from ._host import ApiHost

__all__ = ["ConfigChange", "ConfigEndpoints", "HealthChange", "RewindRequest"]


def _optional(name: str) -> Any:
    """RestartPolicy's field ``name`` (limits, description) with no default: unset keeps it."""
    field = copy.copy(RestartPolicy.model_fields[name])
    field.default = None
    return field


class HealthChange(BaseModel):
    """The supervision settings to change; fields left out keep their value."""

    model_config = ConfigDict(extra="forbid")

    policy: Literal["never", "on_failure"] | None = _optional("policy")
    max_restarts: int | None = _optional("max_restarts")
    backoff: float | None = _optional("backoff")
    backoff_max: float | None = _optional("backoff_max")
    max_consecutive_failures: int | None = _optional("max_consecutive_failures")


class ConfigChange(BaseModel):
    """PATCH /api/v1/processes/{name}/config: each change dispatches config_change ("operator")."""

    model_config = ConfigDict(extra="forbid")

    instructions: str | None = None
    mission: str | None = Field(
        default=None,
        description=f"The standing goal (at most {MISSION_MAX_CHARS} characters); null clears it",
    )
    budget: BudgetConfig | None = None
    health: HealthChange | None = Field(
        default=None, description="Supervision settings to change (restart policy)"
    )
    add_triggers: list[TriggerConfig] = Field(default_factory=list)
    remove_triggers: list[str] = Field(default_factory=list)
    add_mcp_servers: list[McpServerConfig] = Field(
        default_factory=list,
        description="MCP servers to declare; a stdio server needs allow_command_deploys",
    )
    remove_mcp_servers: list[str] = Field(
        default_factory=list, description="Names of MCP servers to remove"
    )
    rollback: bool = Field(
        default=False,
        description="Undo the last applied change (send it alone); again to go further back",
    )

    @field_validator("mission")
    @classmethod
    def _mission(cls, value: str | None) -> str | None:
        return check_mission(value)


class RewindRequest(BaseModel):
    """POST /api/v1/processes/{name}/rewind."""

    model_config = ConfigDict(extra="forbid")

    messages: int = Field(ge=1, description="How many of the newest messages to drop")
    timeout: float = Field(
        default=REWIND_WAIT,
        gt=0,
        le=300,
        description="Seconds to wait for the runs in flight (409 PROCESS_BUSY after)",
    )


class ConfigEndpoints:
    """PATCH .../config and POST .../rewind, for one OrchestrationAPI."""

    def __init__(self, api: ApiHost) -> None:
        self.api = api

    async def change(self, request: Request) -> Response:
        process = self.api.process_for(request)
        change = await self.api.parsed_body(request, ConfigChange, config=True)
        if change.rollback:
            return await self._rollback(process, change)
        self._check(process, change)
        self.api.check_host_paths([f"add_{p}" for p in host_paths(change.add_triggers, None, None)])
        changed: list[str] = []
        if change.instructions is not None:
            await process.update_instructions(change.instructions)
            changed.append("instructions")
        if "mission" in change.model_fields_set:  # null clears the mission
            await process.set_mission(change.mission)
            changed.append("mission")
        if change.budget is not None:
            await process.set_budget(change.budget)
            changed.append("budget")
        if change.health is not None:
            await process.set_health(change.health.model_dump(exclude_none=True))
            changed.append("health")
        for trigger_id in change.remove_triggers:
            await process.remove_trigger(trigger_id)
            changed.append(f"trigger_removed:{trigger_id}")
        added: list[str] = []
        for trigger in change.add_triggers:
            await process.add_trigger(trigger)
            added.append(process.triggers[-1][0])
            changed.append(f"trigger_added:{added[-1]}")
        for name in change.remove_mcp_servers:
            await process.remove_mcp_server(name)
            changed.append(f"mcp_server_removed:{name}")
        for server in change.add_mcp_servers:
            await process.add_mcp_server(server)
            changed.append(f"mcp_server_added:{server.name}")
        if added:
            await self._sync_webhooks(process, added)
        return JSONResponse(_answer(process, changed))

    async def _rollback(self, process: AgentProcess, change: ConfigChange) -> Response:
        others = sorted(change.model_fields_set - {"rollback"})
        if others:
            raise APIError(
                422,
                "VALIDATION_ERROR",
                f"rollback: send it alone; it undoes the last applied change, and this request "
                f"also sets {', '.join(others)}",
            )
        undone: list[AppliedChange] = []

        def check(undoing: AppliedChange) -> None:  # the change undone, read under its lock
            if undoing.triggers is not None:
                webhooks = [(i, t) for i, t in undoing.triggers if isinstance(t, WebhookTrigger)]
                try:
                    self.api.runtime.check_webhooks(webhooks, owner=process.name)
                except WebhookClashError as exc:
                    raise APIError(409, "WEBHOOK_CLASH", f"rollback: {exc}") from None
            undone.append(undoing)

        try:
            await process.rollback(check=check)
        except NothingToRollBackError as exc:
            raise APIError(409, "NOTHING_TO_ROLL_BACK", str(exc)) from None
        [undoing] = undone
        if undoing.triggers is not None and self.api.webhooks is not None:
            try:
                await self.api.webhooks.sync()
            except OSError as exc:
                raise APIError(
                    409,
                    "PORT_UNAVAILABLE",
                    f"the rollback applied, but a webhook trigger it restored cannot be "
                    f"served: {exc}",
                ) from None
        return JSONResponse(_answer(process, [f"rollback:{undoing.change}"]))

    def _check(self, process: AgentProcess, change: ConfigChange) -> None:
        """Refuse the whole change before any of it applies."""
        current = dict(process.triggers)
        for trigger_id in change.remove_triggers:
            if trigger_id not in current:
                raise APIError(
                    422,
                    "VALIDATION_ERROR",
                    f"remove_triggers: process {process.name!r} has no trigger {trigger_id!r}",
                )
            del current[trigger_id]
        webhooks = [(i, t) for i, t in current.items() if isinstance(t, WebhookTrigger)]
        for n, trigger in enumerate(change.add_triggers):
            if trigger.id is not None and trigger.id in current:
                raise APIError(
                    422,
                    "VALIDATION_ERROR",
                    f"add_triggers[{n}].id: process {process.name!r} already has a trigger "
                    f"{trigger.id!r}",
                )
            if trigger.id is not None:
                current[trigger.id] = trigger
            if isinstance(trigger, WebhookTrigger):
                webhooks.append((trigger.id or f"add_triggers[{n}]", trigger))
        self._check_mcp_servers(process, change)
        try:
            self.api.runtime.check_webhooks(webhooks, owner=process.name)
        except WebhookClashError as exc:
            raise APIError(409, "WEBHOOK_CLASH", str(exc)) from None

    def _check_mcp_servers(self, process: AgentProcess, change: ConfigChange) -> None:
        names = [server_name(s) for s in process.config.mcp_servers]
        for name in change.remove_mcp_servers:
            if name not in names:
                known = ", ".join(repr(n) for n in names if n is not None) or "none"
                raise APIError(
                    422,
                    "VALIDATION_ERROR",
                    f"remove_mcp_servers: process {process.name!r} has no MCP server {name!r} "
                    f"(it has: {known})",
                )
            names.remove(name)
        for n, server in enumerate(change.add_mcp_servers):
            if server.name in names:
                raise APIError(
                    422,
                    "VALIDATION_ERROR",
                    f"add_mcp_servers[{n}].name: process {process.name!r} already has an MCP "
                    f"server {server.name!r}",
                )
            names.append(server.name)
        uses = [
            f"add_mcp_servers[{n}] is a stdio MCP server"
            for n, server in enumerate(change.add_mcp_servers)
            if is_stdio(server.entry())
        ]
        if uses and not self.api.allow_command_deploys:
            raise APIError(403, "COMMANDS_NOT_ALLOWED", commands_message(uses))
        self.api.check_mcp_hosts(change.add_mcp_servers, "add_mcp_servers")

    async def _sync_webhooks(self, process: AgentProcess, added: list[str]) -> None:
        webhooks = self.api.webhooks
        if webhooks is None or not webhooks.running:
            return
        try:
            await webhooks.sync()
        except OSError as exc:
            for trigger_id in added:  # the port cannot be served: take the triggers back
                await process.remove_trigger(trigger_id)
            raise APIError(409, "PORT_UNAVAILABLE", f"webhook trigger: {exc}") from None

    async def rewind(self, request: Request) -> Response:
        process = self.api.process_for(request)
        body = await self.api.parsed_body(request, RewindRequest)
        try:
            await process.rewind(body.messages, timeout=body.timeout)
        except ProcessBusyError as exc:
            raise APIError(409, "PROCESS_BUSY", str(exc)) from None
        except ValueError:  # more messages than the conversation holds once runs are done
            raise _too_many(process, body.messages, len(process.context.conversation)) from None
        return JSONResponse(
            {
                "name": process.name,
                "dropped": body.messages,
                "conversation_size": len(process.context.conversation),
            }
        )


def _too_many(process: AgentProcess, messages: int, size: int) -> APIError:
    return APIError(
        422,
        "VALIDATION_ERROR",
        f"messages: cannot rewind {messages} messages; the conversation of process "
        f"{process.name!r} holds {size} (allowed: 1 to {size})",
        [{"path": "messages", "message": f"at most {size}, got {messages}"}],
    )


def _answer(process: AgentProcess, changed: list[str]) -> dict[str, Any]:
    return {
        "name": process.name,
        "changed": changed,
        "triggers": [trigger_view(i, t) for i, t in process.triggers],
    }
