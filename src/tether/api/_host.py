"""What the endpoint groups (approvals, config changes, hooks, observability, the cluster
router) use of the ``OrchestrationAPI`` that owns them: a protocol, so they are handed the API
without importing its module (which imports them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..process import AgentProcess
    from ..runtime import AgentRuntime
    from ._webhooks import WebhookServer

__all__ = ["ApiHost"]

M = TypeVar("M", bound=BaseModel)


class ApiHost(Protocol):
    """The API as its endpoint groups see it."""

    @property
    def runtime(self) -> AgentRuntime: ...

    @property
    def allow_command_deploys(self) -> bool: ...

    @property
    def webhooks(self) -> WebhookServer | None: ...

    def process_for(self, request: Request) -> AgentProcess: ...

    async def parsed_body(
        self, request: Request, model: type[M], *, optional: bool = False, config: bool = False
    ) -> M: ...

    def check_mcp_hosts(self, servers: Sequence[Any], prefix: str) -> None: ...

    def check_host_paths(self, paths: list[str]) -> None: ...
