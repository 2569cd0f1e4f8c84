"""Human (or programmatic) approval of tool calls: the policy, the request and the decision."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["ApprovalDecision", "ApprovalPolicy", "ApprovalRequest"]


@dataclass(slots=True)
class ApprovalRequest:
    """What the approval handler is asked: one tool call (arguments redacted)."""

    tool_name: str
    arguments: dict[str, Any]
    process_id: str
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    event_id: str | None = None
    #: Why approval is asked, when not for the policy: a hook asked (a Claude Code hook's
    #: "ask" reason), or "outcome unknown after a crash".
    reason: str | None = None


@dataclass(slots=True)
class ApprovalDecision:
    """The handler's answer. ``decided_by`` names who decided (default: the reviewer)."""

    approved: bool
    reviewer_id: str | None = None
    reason: str | None = None
    decided_by: str | None = None

    def __post_init__(self) -> None:
        if self.decided_by is None:
            self.decided_by = self.reviewer_id or "handler"


ApprovalHandler = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


class ApprovalPolicy(BaseModel):
    """Which tools need approval (names or glob patterns) and who decides."""

    model_config = ConfigDict(defer_build=True, extra="forbid", arbitrary_types_allowed=True)

    tools: list[str] = Field(default_factory=list, description="Tool names or glob patterns")
    handler: Callable[..., Any] | None = Field(
        default=None, exclude=True, description="async (ApprovalRequest) -> ApprovalDecision"
    )
    timeout: float = Field(default=300.0, gt=0, le=86400, description="Seconds to wait")
    operator: bool = Field(
        default=False,
        description="Wait for an operator's answer (API, `tether approvals`) too; with a "
        "handler, the first answer wins",
    )

    @field_validator("handler")
    @classmethod
    def _async_handler(cls, value: Any) -> Any:
        import inspect

        if value is not None and not (
            inspect.iscoroutinefunction(value)
            or inspect.iscoroutinefunction(getattr(type(value), "__call__", None))  # noqa: B004
        ):
            raise TypeError("approval handler must be an async function")
        return value

    def needs_approval(self, tool_name: str) -> bool:
        return any(fnmatchcase(tool_name, pattern) for pattern in self.tools)


for _cls in (ApprovalDecision, ApprovalPolicy, ApprovalRequest):
    _cls.__module__ = "tether.approval"
