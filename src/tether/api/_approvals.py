"""The approval endpoints of the control API: what a process's runs wait on, and an
operator's answer (see ``tether.process._approvals``).

GET  /api/v1/processes/{name}/approvals                the pending requests
POST /api/v1/processes/{name}/approvals/{request_id}   {"approved": bool, "reason", "reviewer"}
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ._errors import APIError

if TYPE_CHECKING:
    from ._host import ApiHost

__all__ = ["ApprovalAnswer", "ApprovalEndpoints"]


class ApprovalAnswer(BaseModel):
    """POST /api/v1/processes/{name}/approvals/{request_id}."""

    model_config = ConfigDict(extra="forbid")

    approved: bool = Field(description="Run the tool call (true) or refuse it (false)")
    reason: str | None = Field(
        default=None, max_length=2000, description="Why (the model reads it)"
    )
    reviewer: str | None = Field(default=None, max_length=200, description="Who decided")


class ApprovalEndpoints:
    """The approval endpoints, for one OrchestrationAPI."""

    def __init__(self, api: ApiHost) -> None:
        self.api = api

    async def pending(self, request: Request) -> Response:
        process = self.api.process_for(request)
        return JSONResponse({"name": process.name, "approvals": process.pending_approvals})

    async def answer(self, request: Request) -> Response:
        process = self.api.process_for(request)
        body = await self.api.parsed_body(request, ApprovalAnswer)
        request_id = request.path_params["request_id"]
        asked = process.answer_approval(
            request_id, body.approved, reason=body.reason, reviewer=body.reviewer
        )
        if asked is None:
            raise APIError(
                404,
                "APPROVAL_NOT_FOUND",
                f"process {process.name!r} has no pending approval {request_id!r}",
            )
        return JSONResponse({"name": process.name, "request": asked, "approved": body.approved})
