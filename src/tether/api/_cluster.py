"""The control API of a clustered host: one control plane for every process of the cluster.

In front of the routes when the runtime is in a cluster (``runtime.cluster``):

* ``GET /processes`` lists every process of the cluster with the host it runs on;
* ``GET /processes/{name}/hooks/runs`` (event, outcome, hook, since, last) reads the
  process's hook-run history from Redis (kept there, capped, whichever host ran the hooks);
* ``POST /processes/{name}/inject`` is served here: task_created hooks run on this host (every
  host has the same hooks), then the event goes to the process's stream, wherever it runs;
* ``POST /processes/{name}/start`` lets the cluster run a process an operator stopped;
* any other request about a process another host holds is forwarded to that host through
  Redis (not host-to-host HTTP) and served there by its own API, with its own rules;
* a request about a process no host holds now (stopped, or being taken over) that would change
  it is refused with 409 ``PROCESS_NOT_PLACED``; reads answer from this host's idle copy, but
  ``GET /processes/{name}/approvals``, read from Redis (what the next holder will wait on);
* while Redis does not answer, what needs it is refused with 503 ``CLUSTER_UNAVAILABLE`` and
  Retry-After (an inject: 503 ``QUEUE_UNAVAILABLE``), never a 500.

A forwarded request is never forwarded again (``x-tether-forwarded``): the host it reached
serves it, so a lease changing hands meanwhile cannot bounce it between hosts.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, cast

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ._errors import APIError, error_response

if TYPE_CHECKING:
    from ..cluster import ClusterNode
    from ._host import ApiHost

__all__ = ["ClusterRouter"]

_PROCESS: Final = re.compile(r"^/api/v1/processes/(?P<name>[^/]+)(?P<rest>/.*)?$")
FORWARDED: Final = "x-tether-forwarded"


class ClusterRouter:
    """ASGI middleware: answers or forwards the requests described in the module docstring."""

    def __init__(self, app: ASGIApp, api: ApiHost) -> None:
        self.app = app
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.api.runtime.cluster is None:
            await self.app(scope, receive, send)
            return
        # Only ClusterNode.start sets runtime.cluster (the runtime cannot name the type).
        node = cast("ClusterNode", self.api.runtime.cluster)
        try:
            response = await self._route(node, scope, receive)
        except APIError as exc:
            response = exc.response()
        except Exception as exc:
            from redis.exceptions import RedisError

            if not isinstance(exc, RedisError | OSError):
                raise
            response = error_response(
                503,
                "CLUSTER_UNAVAILABLE",
                f"the cluster's Redis does not answer ({type(exc).__name__}); retry later",
                headers={"Retry-After": "1"},
            )
        if response is None:
            await self.app(scope, receive, send)
        else:
            await response(scope, receive, send)

    async def _route(self, node: ClusterNode, scope: Scope, receive: Receive) -> Response | None:
        path, method = scope["path"], scope["method"]
        if path == "/api/v1/processes" and method == "GET":
            processes = await node.processes()  # each redacted by the host that ran it
            return JSONResponse({"host": node.host, "processes": processes})
        match = _PROCESS.match(path)
        if match is None or match["name"] not in self.api.runtime:
            return None
        name, rest = match["name"], match["rest"] or ""
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        if FORWARDED in headers:
            return None
        if rest == "/inject" and method == "POST":
            return None  # task_created runs here, then the event goes to the stream
        if rest == "/hooks/runs" and method == "GET":
            return await self._runs(node, name, scope)
        if rest == "/start" and method == "POST" and name not in node.held:
            await node.start_process(name)
            return JSONResponse(
                {"name": name, "state": "waiting", "host": await node.holder(name)}, 202
            )
        if name in node.held:
            return None
        holder = await node.holder(name)
        if holder is None or holder == node.host:
            if rest == "/approvals" and method == "GET":  # journaled: its next holder's
                approvals = await node.pending_approvals(name)
                return JSONResponse({"name": name, "approvals": approvals})
            if method == "GET":
                return None
            raise APIError(
                409,
                "PROCESS_NOT_PLACED",
                f"process {name!r} runs on no host now (stopped cluster-wide, or being taken "
                "over); start it, or try again in a few seconds",
            )
        body = await _read(receive)
        query = scope.get("query_string", b"").decode("latin-1")
        try:
            status, answer = await node.forward(holder, method, path, query, body)
        except Exception as exc:
            raise APIError(504, "CLUSTER_TIMEOUT", f"{exc}") from None
        return Response(answer, status, media_type="application/json")

    async def _runs(self, node: ClusterNode, name: str, scope: Scope) -> Response:
        from urllib.parse import parse_qs

        params = {k: v[-1] for k, v in parse_qs(scope["query_string"].decode()).items()}
        allowed = {"event", "outcome", "hook", "last", "since"}
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise APIError(
                422,
                "VALIDATION_ERROR",
                f"unknown query parameter {unknown[0]!r} (the cluster's history takes "
                f"{', '.join(sorted(allowed))})",
            )
        last: int | None = None
        if "last" in params:
            try:
                last = int(params["last"])
            except ValueError:
                raise APIError(
                    422, "VALIDATION_ERROR", f"last must be an integer, got {params['last']!r}"
                ) from None
        since = _when(params["since"]) if "since" in params else None

        def match(run: dict[str, Any]) -> bool:
            return (
                (since is None or _when(f"{run.get('recorded_at')}") >= since)
                and params.get("event") in (None, run.get("event"))
                and params.get("outcome") in (None, run.get("outcome"))
                and params.get("hook") in (None, run.get("hook_id"), run.get("hook_name"))
            )

        # The newest ``last`` matching runs: Redis is read newest first until they are found.
        runs = await node.hook_runs(name, last=last, match=match)
        for run in runs:
            run["process"] = run.get("process_id")
        process = self.api.runtime.get(name)
        shown = process.redactor.value(runs) if process is not None else runs
        body = {"name": name, "runs": shown}
        return Response(json.dumps(body, default=str), media_type="application/json")


def _when(text: str) -> datetime:
    """An ISO time (UTC when it has no offset); 422 naming ``since`` otherwise."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise APIError(
            422, "VALIDATION_ERROR", f"since must be an ISO time, got {text[:40]!r}"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


async def _read(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
