"""Observability endpoints: ``/metrics``, the dashboard, the hook-run feed, timelines, publish.

The dashboard's files (``/`` and ``/dashboard/...``) hold no data and are served to anyone who
may reach the API (the Host and Origin checks still apply); everything they show comes from
the API, under its token rules: the page asks for the token and sends it as a bearer header.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..hooks import OUTCOMES, HookEvent
from ..process import validate_name
from ._errors import APIError
from ._feed import HookFeed
from ._http import bad_query, query_params

if TYPE_CHECKING:
    from ._host import ApiHost

__all__ = ["ObservabilityEndpoints", "PublishEvent"]

#: The dashboard's files and their content types (nothing else is served from the folder).
ASSETS: Final = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
#: The page may load its own files and talk to its own origin, nothing else (no CDN).
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class PublishEvent(BaseModel):
    """POST /api/v1/events."""

    model_config = ConfigDict(extra="forbid")

    event_type: str = Field(min_length=1, max_length=200, description="The event triggers' type")
    payload: dict[str, Any] = Field(default_factory=dict, description="The events' payload")


class ObservabilityEndpoints:
    def __init__(self, api: ApiHost) -> None:
        self.api = api
        self.feed = HookFeed(api.runtime)

    # -- /metrics ------------------------------------------------------------------------------

    async def metrics(self, request: Request) -> Response:
        telemetry = self.api.runtime.telemetry
        metrics = telemetry.metrics if telemetry is not None else None
        if metrics is None:
            raise APIError(
                503,
                "METRICS_UNAVAILABLE",
                "this runtime keeps no metrics: install tether[metrics] (prometheus_client) and "
                "give the runtime a Telemetry (tether serve does so when it is installed)",
            )
        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    # -- the dashboard ---------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return _asset("index.html")

    async def asset(self, request: Request) -> Response:
        name = request.path_params["file"]
        if name not in ASSETS:
            raise APIError(404, "NOT_FOUND", f"no dashboard file {name!r}")
        return _asset(name)

    # -- the live feed and timelines -------------------------------------------------------------

    async def stream(self, request: Request) -> Response:
        params = query_params(request)
        process = params.get("process")
        if process is not None and self.api.runtime.get(process) is None:
            known = ", ".join(sorted(p.name for p in self.api.runtime)) or "none"
            try:
                validate_name(process)
            except ValueError:  # not a name at all: the query is malformed
                raise bad_query(
                    "process", f"no process named {process!r}; processes: {known}"
                ) from None
            raise APIError(
                404, "PROCESS_NOT_FOUND", f"no process named {process!r}; processes: {known}"
            )
        event = params.get("event")
        if event is not None and event not in {e.value for e in HookEvent}:
            raise bad_query("event", f"unknown event {event!r}; see GET /api/v1/hooks/events")
        outcome = params.get("outcome")
        if outcome is not None and outcome not in OUTCOMES:
            raise bad_query("outcome", f"{outcome!r} is not one of {', '.join(OUTCOMES)}")
        filters = {
            key: value
            for key, value in (
                ("process_id", process),
                ("event", event),
                ("outcome", outcome),
                ("hook_name", params.get("hook_name")),
            )
            if value is not None
        }
        return StreamingResponse(
            self.feed.stream(filters),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def timeline(self, request: Request) -> Response:
        process = self.api.process_for(request)
        deprecated = "task_id" in request.path_params  # the old /tasks/{task_id} path
        event_id = request.path_params["task_id" if deprecated else "event_id"]
        runs = self.feed.timeline(process.name, event_id)
        dead = [
            {"reason": d["reason"], "attempts": d["attempts"], "at": d["timestamp"].isoformat()}
            for d in list(process.dead_letters)
            if d["event_id"] == event_id
        ]
        messages = process.transcripts.get(event_id)
        if not runs and not dead and messages is None:
            raise APIError(
                404,
                "TASK_NOT_FOUND" if deprecated else "EVENT_NOT_FOUND",
                f"no timeline kept for {'task' if deprecated else 'event'} {event_id!r} of "
                f"{process.name!r} (the API keeps the last events it saw run)",
            )
        steps = [
            {"role": m.get("role"), "tool_calls": len(m.get("tool_calls") or [])}
            for m in messages or []
        ]
        return JSONResponse(
            process.redactor.value(
                {
                    "name": process.name,
                    "event_id": event_id,
                    "hook_runs": runs,
                    "messages": steps,
                    "dead_letters": dead,
                }
            )
        )

    async def events(self, request: Request) -> Response:
        process = self.api.process_for(request)
        # The deprecated /tasks path answers under its own word (see _routes).
        key = "tasks" if request.url.path.endswith("/tasks") else "events"
        return JSONResponse({"name": process.name, key: self.feed.events(process.name)})

    # -- publishing ------------------------------------------------------------------------------

    async def publish(self, request: Request) -> Response:
        body = await self.api.parsed_body(request, PublishEvent)
        ids = await self.api.runtime.publish(body.event_type, body.payload)
        return JSONResponse({"event_type": body.event_type, "event_ids": ids}, status_code=202)


def _asset(name: str) -> Response:
    data = resources.files("tether.api").joinpath("dashboard", name).read_bytes()
    return Response(
        data,
        media_type=ASSETS[name],
        headers={
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        },
    )
