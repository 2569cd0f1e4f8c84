"""OrchestrationAPI: the runtime's control API (JSON over HTTP, under ``/api/v1``).

Every request needs ``Authorization: Bearer <token>`` when a token is configured; without one
the API only starts on a loopback host and then refuses requests that come from a browser page
of another origin or name a non-loopback Host (DNS rebinding). Request bodies must be JSON and
at most ``max_body_bytes`` long.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .._redact import redacted_trace
from ..hooks import ClaudeCodeHooksError, DeclarationError, PluginError
from ..manifest import (
    ProcessSpec,
    secretish,
    spec_problems,
    spec_to_process_config,
    validation_errors,
)
from ..process import (
    AgentProcess,
    InvalidEventError,
    ProcessError,
    ProcessState,
    QueueUnavailableError,
    TriggerEvent,
    validate_name,
)
from ..runtime import AgentRuntime, ProcessExistsError, WebhookClashError
from ._approvals import ApprovalEndpoints
from ._changes import ConfigEndpoints
from ._cluster import ClusterRouter
from ._deploy import (
    check_allowed_env,
    check_hook_hosts,
    code_only_fields,
    command_uses,
    commands_message,
    env_message,
    env_refused,
    hook_hosts_message,
    host_paths,
    mcp_hosts_message,
    mcp_hosts_refused,
    url_hooks_refused,
)
from ._errors import PASSED_ON, APIConfigError, APIError, error_response
from ._hooks import HookEndpoints
from ._http import (
    DECLARED_QUERY,
    DEFAULT_MAX_BODY,
    check_bearer,
    foreign_origin,
    host_port,
    hostname,
    is_loopback,
    parse_json,
    read_body,
)
from ._observe import ObservabilityEndpoints
from ._routes import PREFIX, ROUTES, CreateProcess, InjectEvent, Operation, Redeliver
from ._server import AppServer
from ._views import dead_letter_view, process_detail, process_summary
from ._webhooks import WebhookServer

__all__ = ["DEFAULT_PORT", "OrchestrationAPI"]

M = TypeVar("M", bound=BaseModel)

logger = logging.getLogger("tether.api")

DEFAULT_PORT: Final = 9781
_STATUS_CODES: Final = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}
_SENDABLE_TOKEN: Final = re.compile(r"[\x21-\x7e]+")

Handler = Callable[[Request], Awaitable[Response]]


#: Seconds a client is told to wait before it injects again an event refused with a 503.
RETRY_AFTER: Final = 1


class OrchestrationAPI:
    """Serve the control API for ``runtime`` (and its webhook triggers) in the running loop.

    ``start()`` returns once the API accepts connections; ``stop()`` stops serving but leaves
    the runtime and its processes alone. ``port=0`` picks a free port (see ``port`` after
    start). With ``allow_command_deploys=False`` a deployed config may not run programs on
    this host (command hooks, stdio MCP servers, open-mode tool creation): 403. A deployed URL
    hook may only name a host listed in ``allowed_hook_hosts`` (names, addresses or ``*``
    patterns, each optionally with ``:port``): 403 HOOK_HOST_NOT_ALLOWED otherwise; so may an
    HTTP MCP server's ``url`` (403 MCP_HOST_NOT_ALLOWED). A ``${VAR}`` reference anywhere in a
    configuration sent over HTTP is refused (403 ENV_NOT_ALLOWED) unless ``allowed_env`` names
    VAR: it would be resolved from this host's environment.

    ``GET /metrics`` (Prometheus) needs the token like the rest; ``open_metrics=True`` serves
    it without one to clients on this machine (a local Prometheus agent). The dashboard is at
    ``/`` (see _observe).
    """

    def __init__(
        self,
        runtime: AgentRuntime,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str | None = None,
        allow_command_deploys: bool = False,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        webhooks: bool = True,
        allowed_hook_hosts: Sequence[str] = (),
        allowed_env: Sequence[str] = (),
        open_metrics: bool = False,
    ) -> None:
        if not isinstance(runtime, AgentRuntime):
            raise TypeError(f"runtime must be an AgentRuntime, got {type(runtime).__name__}")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise APIConfigError(f"port must be 0 (any free port) or 1-65535, got {port!r}")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise APIConfigError("token must be a non-empty string (or None for no token)")
        if token is not None and not _SENDABLE_TOKEN.fullmatch(token):
            # A client sends it in a header: a space, a control character or a non-ASCII one
            # would never arrive as given, so no request could ever match it.
            raise APIConfigError(
                "token must be printable ASCII without spaces (letters, digits and "
                "punctuation), as an Authorization header carries it"
            )
        if not isinstance(max_body_bytes, int) or max_body_bytes < 1024:
            raise APIConfigError(f"max_body_bytes must be at least 1024, got {max_body_bytes!r}")
        self.runtime = runtime
        self.host = host
        self.token = token
        self.allow_command_deploys = allow_command_deploys
        try:
            self.allowed_hook_hosts = check_hook_hosts(allowed_hook_hosts)
            self.allowed_env = check_allowed_env(allowed_env)
        except (TypeError, ValueError) as exc:
            raise APIConfigError(str(exc)) from None
        self.max_body_bytes = max_body_bytes
        self.open_metrics = open_metrics
        self.observe = ObservabilityEndpoints(self)
        self.webhooks: WebhookServer | None = (
            WebhookServer(runtime, max_body_bytes=max_body_bytes) if webhooks else None
        )
        self.app: ASGIApp = _Guard(ClusterRouter(self._build_app(), self), self)
        self._server = AppServer(self.app, host, port, name=f"tether-api:{port}")

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<OrchestrationAPI {self.host}:{self._server.port} {state}>"

    @property
    def port(self) -> int:
        """The port served on (the real one once started, even when constructed with 0)."""
        return self._server.port

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:9781`` (endpoints are under /api/v1)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._server.running

    async def start(self) -> None:
        """Check the setup, start the webhook server, then listen; OSError if a port is busy."""
        if self.token is None and not is_loopback(self.host):
            raise APIConfigError(
                f"refusing to serve the control API on {self.host} without a token: anyone who "
                "can reach it could drive the runtime. Pass token=... (tether serve --token), "
                "or listen on 127.0.0.1"
            )
        if self.webhooks is not None:
            await self.webhooks.start()
        self.observe.feed.start()
        try:
            await self._server.start()
        except BaseException:
            self.observe.feed.close()
            if self.webhooks is not None:
                await self.webhooks.stop()
            raise
        logger.info("control API listening on %s%s", self.url, PREFIX)

    async def stop(self) -> None:
        """Stop serving the API and the webhooks; the processes keep running."""
        self.observe.feed.close()  # ends the live streams, which would hold the stop up
        await self._server.stop()
        if self.webhooks is not None:
            await self.webhooks.stop()

    async def __aenter__(self) -> OrchestrationAPI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the app ---------------------------------------------------------------------------

    def _build_app(self) -> Starlette:
        """The routes of the table (see _routes), each served by its endpoint's method."""
        owners: dict[str, object] = {
            "api": self,
            "hooks": HookEndpoints(self),
            "changes": ConfigEndpoints(self),
            "approvals": ApprovalEndpoints(self),
            "observe": self.observe,
        }
        routes = [
            (route.served_at, self._served(owners, route), (route.method,)) for route in ROUTES
        ]
        return Starlette(routes=_by_path(routes), exception_handlers={HTTPException: _http_error})

    def _served(self, owners: dict[str, object], route: Operation) -> Handler:
        """The method ``route.endpoint`` names (``"owner.method"``), its errors answered."""
        owner, _, method = route.endpoint.partition(".")
        handler: Handler = getattr(owners[owner], method)
        return _endpoint(handler, self.runtime.redact, route.query_names)

    # -- helpers ---------------------------------------------------------------------------

    def process_for(self, request: Request) -> AgentProcess:
        """The process the request's ``{name}`` names; a 404 APIError when there is none."""
        name = request.path_params["name"]
        process = self.runtime.get(name)
        if process is None:
            raise APIError(404, "PROCESS_NOT_FOUND", f"no process named {name!r}")
        return process

    async def _body(self, request: Request, *, optional: bool = False) -> Any:
        body = await read_body(request, self.max_body_bytes)
        if optional and not body.strip():
            return {}
        data = parse_json(body)
        if not isinstance(data, dict):
            raise APIError(
                422, "VALIDATION_ERROR", f"expected a JSON object, got {type(data).__name__}"
            )
        return data

    async def parsed_body(
        self, request: Request, model: type[M], *, optional: bool = False, config: bool = False
    ) -> M:
        """The request's JSON body validated as ``model`` (422 naming each bad field);
        ``config``: it is configuration, refused if it names a host variable (check_env)."""
        data = await self._body(request, optional=optional)
        if config:
            self.check_env(data, "")
        try:
            return strict_validate(model, data)
        except ValidationError as exc:
            raise _invalid(exc, model) from None

    # -- endpoints -------------------------------------------------------------------------

    async def _health(self, request: Request) -> Response:
        from .._version import __version__

        return JSONResponse({"status": "ok", "version": __version__, **self.runtime.health()})

    async def _openapi(self, request: Request) -> Response:
        from ._openapi import openapi_document

        return JSONResponse(openapi_document(secured=self.token is not None))

    async def _list(self, request: Request) -> Response:
        return JSONResponse({"processes": [process_summary(p) for p in self.runtime]})

    async def _create(self, request: Request) -> Response:
        data = await self._body(request)
        name = data.get("name")
        if "name" not in data:
            raise APIError(422, "VALIDATION_ERROR", "name: missing required field 'name'")
        try:
            validate_name(name)
            if name.endswith("\n"):  # validate_name's "$" lets one trailing newline through
                raise ValueError(f"process name {name!r} is not allowed: it ends in a newline")
        except ValueError as exc:
            raise APIError(422, "INVALID_NAME", f"name: {exc}") from None
        config = data.get("config", {})
        if not isinstance(config, dict):
            raise APIError(422, "VALIDATION_ERROR", "config: expected a JSON object")
        self.check_env(config, "config")
        code = code_only_fields(config)
        if code:
            details = [{"path": f"config.{path}", "message": why} for path, why in code]
            raise APIError(422, "VALIDATION_ERROR", f"config.{code[0][0]}: {code[0][1]}", details)
        try:
            request_model = strict_validate(CreateProcess, data)
        except ValidationError as exc:
            raise _invalid(exc, CreateProcess) from None
        spec = request_model.config
        problems = spec_problems(spec)
        if problems:
            details = [{"path": _join("config", loc), "message": m} for loc, m in problems]
            raise APIError(422, "VALIDATION_ERROR", _first(details), details)
        uses = command_uses(spec)
        if uses and not self.allow_command_deploys:
            raise APIError(403, "COMMANDS_NOT_ALLOWED", commands_message(uses))
        refused = url_hooks_refused(spec.hooks, self.allowed_hook_hosts)
        if refused:
            message = hook_hosts_message(refused, self.allowed_hook_hosts)
            raise APIError(403, "HOOK_HOST_NOT_ALLOWED", message)
        self.check_mcp_hosts(spec.mcp_servers, "config.mcp_servers")
        paths = host_paths(spec.triggers, spec.journal_path, spec.artifacts_dir)
        if spec.open_mode.allow_host_triggers:  # the agent could pick host paths itself
            paths.append("open_mode.allow_host_triggers")
        self.check_host_paths([f"config.{path}" for path in paths])
        if spec.base_url is not None and not self.allow_command_deploys:
            # The host's model key (OPENAI_API_KEY) would be sent wherever the client says.
            raise APIError(
                403,
                "BASE_URL_NOT_ALLOWED",
                "config.base_url sends the host's model API key to the given URL; over the API "
                "that needs allow_command_deploys=True (or set base_url in a manifest on the host)",
            )
        try:
            process_config = spec_to_process_config(spec)
        except ValidationError as exc:
            raise _invalid(exc, ProcessSpec, prefix="config") from None
        except ClaudeCodeHooksError as exc:  # a named file that cannot be read or mapped
            details = [{"path": "config.claude_code_hooks", "message": str(exc)}]
            raise APIError(
                422, "VALIDATION_ERROR", f"config.claude_code_hooks: {exc}", details
            ) from None
        try:
            process = await self.runtime.add_process(request_model.name, process_config)
        except ProcessExistsError as exc:
            raise APIError(409, "PROCESS_EXISTS", str(exc)) from None
        except PluginError as exc:  # a named plugin that cannot be loaded or registered
            message = str(exc)
            details = [{"path": "config.plugins", "message": message}]
            raise APIError(422, "VALIDATION_ERROR", f"config.plugins: {message}", details) from None
        except WebhookClashError as exc:
            raise APIError(409, "WEBHOOK_CLASH", str(exc)) from None
        except DeclarationError as exc:  # a before/after name the runtime's chain lacks
            details = [{"path": p.path("config.hooks"), "message": p.message} for p in exc.problems]
            raise APIError(422, "VALIDATION_ERROR", _first(details), details) from None
        except ValueError as exc:  # a secret's ${VAR} not set on the host, named (never a value)
            path, _, message = str(exc).partition(": ")
            details = [{"path": f"config.{path}", "message": message}]
            raise APIError(422, "VALIDATION_ERROR", f"config.{exc}", details) from None
        await self._sync_webhooks(process)
        return JSONResponse(process_summary(process), status_code=201)

    async def _sync_webhooks(self, process: AgentProcess) -> None:
        if self.webhooks is None or not self.webhooks.running or not process.webhook_triggers:
            return
        try:
            await self.webhooks.sync()
        except OSError as exc:
            await self.runtime.remove_process(process.name)
            raise APIError(409, "PORT_UNAVAILABLE", f"webhook trigger: {exc}") from None

    async def _detail(self, request: Request) -> Response:
        return JSONResponse(process_detail(self.process_for(request)))

    async def _delete(self, request: Request) -> Response:
        process = self.process_for(request)
        await self.runtime.remove_process(process.name)
        return JSONResponse({"name": process.name, "removed": True})

    async def _start(self, request: Request) -> Response:
        process = self.process_for(request)
        await _state_call(process.start())
        return JSONResponse(process_summary(process))

    async def _stop(self, request: Request) -> Response:
        process = self.process_for(request)
        await _state_call(process.stop())
        return JSONResponse(process_summary(process))

    async def _restart(self, request: Request) -> Response:
        process = self.process_for(request)
        await _state_call(process.restart())
        return JSONResponse(process_summary(process))

    async def _inject(self, request: Request) -> Response:
        process = self.process_for(request)
        data = await self._body(request, optional=True)
        try:
            body = strict_validate(InjectEvent, data)
            event = TriggerEvent(
                body.trigger_id,
                _trigger_type(process, body),
                body.payload,
                traceparent=body.traceparent,
            )
        except ValidationError as exc:
            raise _invalid(exc, InjectEvent) from None
        except InvalidEventError as exc:
            raise APIError(422, "VALIDATION_ERROR", str(exc)) from None
        try:
            event_id = await process.inject(event)
        except QueueUnavailableError as exc:  # not queued: the client retries
            raise APIError(
                503, "QUEUE_UNAVAILABLE", str(exc), headers={"Retry-After": str(RETRY_AFTER)}
            ) from None
        outcome = None
        if body.wait > 0 and process.state is ProcessState.RUNNING:
            outcome = await process.outcome(event_id, timeout=body.wait)
        return JSONResponse(_accepted(process, event_id, outcome), status_code=202)

    async def _dead_letters(self, request: Request) -> Response:
        process = self.process_for(request)
        letters = [dead_letter_view(process, d) for d in list(process.dead_letters)]
        return JSONResponse({"name": process.name, "dead_letters": letters})

    async def _redeliver(self, request: Request) -> Response:
        process = self.process_for(request)
        body = await self.parsed_body(request, Redeliver, optional=True)
        count = await process.redeliver_dead_letters(body.event_ids)
        return JSONResponse({"name": process.name, "redelivered": count})

    async def _clear(self, request: Request) -> Response:
        process = self.process_for(request)
        return JSONResponse({"name": process.name, "cleared": process.clear_dead_letters()})

    async def _hooks(self, request: Request) -> Response:
        process = self.process_for(request)
        return JSONResponse({"name": process.name, "hooks": process_detail(process)["hooks"]})

    def check_env(self, data: Any, prefix: str) -> None:
        """A 403 ENV_NOT_ALLOWED naming each ``${VAR}`` reference in ``data`` (configuration
        sent over HTTP) to a variable ``allowed_env`` does not name."""
        refused = env_refused(data, prefix, self.allowed_env)
        if refused:
            details = [
                {"path": path, "message": f"names the host environment variable {name!r}"}
                for path, name in refused
            ]
            raise APIError(403, "ENV_NOT_ALLOWED", env_message(refused), details)

    def check_mcp_hosts(self, servers: Sequence[Any], prefix: str) -> None:
        """A 403 MCP_HOST_NOT_ALLOWED naming the first HTTP MCP server of ``servers`` whose
        ``url`` is not on a host of ``allowed_hook_hosts``."""
        refused = mcp_hosts_refused(servers, self.allowed_hook_hosts, prefix)
        if refused:
            message = mcp_hosts_message(refused, self.allowed_hook_hosts)
            raise APIError(403, "MCP_HOST_NOT_ALLOWED", message)

    def check_host_paths(self, paths: list[str]) -> None:
        """A 403 APIError naming the first of ``paths`` (paths on the runtime's host) unless
        the API allows command deploys."""
        if paths and not self.allow_command_deploys:
            raise APIError(
                403,
                "HOST_PATHS_NOT_ALLOWED",
                f"{paths[0]} names a path on the runtime's host (watched, or written to); "
                "over the API that needs allow_command_deploys=True. Load the process from a "
                "manifest on the host instead.",
            )


# -- plumbing --------------------------------------------------------------------------------


def strict_validate(model: type[M], data: Any) -> M:
    """``data`` (parsed JSON) as ``model``, its JSON types taken as they are: ``0`` is no
    boolean, ``"3"`` no number and ``true`` no number, as the OpenAPI document says."""
    return model.model_validate_json(json.dumps(data), strict=True)


def _by_path(routes: Sequence[tuple[str, Handler, tuple[str, ...]]]) -> list[Route]:
    """One Route per path, whatever number of entries name it: a method the path does not
    take answers 405 with an ``Allow`` listing every method it does take (HEAD with GET), not
    just those of the first entry that matched the path."""
    table: dict[str, dict[str, Handler]] = {}
    for path, handler, methods in routes:
        handlers = table.setdefault(path, {})
        for method in methods:
            if method in handlers:
                raise ValueError(f"{method} {path} is routed twice")
            handlers[method] = handler
    return [
        Route(path, _dispatcher(handlers), methods=list(handlers))
        for path, handlers in table.items()
    ]


def _dispatcher(handlers: dict[str, Handler]) -> Handler:
    if len(handlers) == 1:
        return next(iter(handlers.values()))

    async def by_method(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)  # Route answered 405 to any other method

    return by_method


def _endpoint(handler: Handler, redact: Callable[[str], str], query: tuple[str, ...]) -> Handler:
    """Turn APIError into its answer and any other error (but PASSED_ON) into a 500, its
    traceback logged through ``redact`` (the runtime's: every process's secrets) and never
    sent. ``query``: the query parameters the route table declares (see query_params)."""

    async def endpoint(request: Request) -> Response:
        request.scope[DECLARED_QUERY] = query
        try:
            return await handler(request)
        except APIError as exc:
            return exc.response()
        except PASSED_ON:
            raise
        except BaseException as exc:
            trace = redacted_trace(exc, redact)
            logger.error("%s %s failed\n%s", request.method, request.url.path, trace)
            return error_response(
                500, "INTERNAL_ERROR", "the runtime failed to answer; see its log for details"
            )

    return endpoint


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = _STATUS_CODES.get(exc.status_code, "HTTP_ERROR")
    message = (
        f"no endpoint {request.url.path}"
        if exc.status_code == 404
        else f"{request.method} is not allowed on {request.url.path}"
        if exc.status_code == 405
        else str(exc.detail)
    )
    return error_response(
        exc.status_code, code, message, headers=dict(exc.headers) if exc.headers else None
    )


async def _state_call(call: Awaitable[None]) -> None:
    try:
        await call
    except ProcessError as exc:
        raise APIError(409, "INVALID_STATE", str(exc)) from None


#: The trigger ids of a manual event: the API's default and the CLI's.
MANUAL_TRIGGER_IDS: Final = frozenset({"api", "cli"})


def _trigger_type(process: AgentProcess, body: InjectEvent) -> str:
    """The type of the event ``body`` injects: a ``trigger_id`` other than a manual one must
    name a trigger of the process (as ``tether inject --trigger-id`` requires), whose type the
    event takes unless ``trigger_type`` is given."""
    if body.trigger_id in MANUAL_TRIGGER_IDS:
        return body.trigger_type
    triggers = dict(process.triggers)
    trigger = triggers.get(body.trigger_id)
    if trigger is None:
        known = ", ".join(sorted(triggers)) or "none"
        raise APIError(
            422,
            "UNKNOWN_TRIGGER",
            f"trigger_id: process {process.name!r} has no trigger {body.trigger_id!r} (its "
            f"triggers: {known}); leave trigger_id out to inject a manual event",
        )
    return body.trigger_type if "trigger_type" in body.model_fields_set else str(trigger.type)


def _accepted(process: AgentProcess, event_id: str, outcome: str | None) -> dict[str, Any]:
    for entry in reversed(process.dead_letters):
        if entry["event_id"] == event_id:
            return {
                "event_id": event_id,
                "process": process.name,
                "status": "dead_lettered",
                "reason": entry["reason"],
                "error": process.redactor.text(entry["error"] or ""),
            }
    if outcome is not None:
        return {"event_id": event_id, "process": process.name, "status": "done", "outcome": outcome}
    return {"event_id": event_id, "process": process.name, "status": "queued"}


def _join(prefix: str, loc: tuple[str | int, ...]) -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _first(details: list[dict[str, Any]]) -> str:
    first = f"{details[0]['path']}: {details[0]['message']}"
    return first + (f" (and {len(details) - 1} more)" if len(details) > 1 else "")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _invalid(exc: ValidationError, root: type[BaseModel], prefix: str = "") -> APIError:
    """The 422 for ``exc``: each bad field by its path, with what was wrong and (for a single
    value) the value it got."""
    details = []
    for issue, err in validation_errors(exc, root):
        path = f"{prefix}.{issue.path}" if prefix and issue.path else prefix or issue.path
        detail = {"path": path, "message": issue.message}
        value = err.get("input") if err is not None else None
        if (
            err is not None
            and err["type"] not in ("extra_forbidden", "missing")
            and "got " not in detail["message"]  # the message may name it already
            and not isinstance(value, dict | list)
            and value != "<not shown>"  # a value a model withheld from its error
            and not secretish(detail["path"])  # never echo what may be a secret
        ):
            detail["message"] += f" (got {_shown(value)})"
        details.append(detail)
    return APIError(422, "VALIDATION_ERROR", _first(details), details)


class _Guard:
    """Authentication and request hygiene in front of every route."""

    def __init__(self, app: ASGIApp, api: OrchestrationAPI) -> None:
        self.app = app
        self.api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            self._check(scope, headers)
        except APIError as exc:
            await exc.response()(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope, headers: dict[str, str]) -> None:
        token = self.api.token
        if token is not None:
            # With a token, the dashboard's files (no data in them) open from any machine; the
            # Host and Origin checks are for the token-less API, which only this machine uses.
            if not self._open(scope):
                check_bearer(headers.get("authorization"), token)
        else:
            host = hostname(headers.get("host", ""))
            if host and not is_loopback(host):
                raise APIError(403, "FORBIDDEN", f"Host {host!r} is not a loopback name")
            # The port the page would have to be served from: the one the request was sent to
            # (its Host; a forwarded port included), so a page of localhost:3000 is refused.
            port = host_port(headers.get("host"), self.api.port)
            origin = foreign_origin(scope["headers"], port)
            if origin is not None:
                raise APIError(
                    403, "FORBIDDEN", f"requests from the web origin {origin!r} are refused"
                )
        method = scope["method"]
        if method in ("POST", "PUT", "PATCH") and _has_body(headers):
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise APIError(
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    f"send the body as application/json, not {kind or 'no content type'}",
                )

    def _open(self, scope: Scope) -> bool:
        """Served without the token: the dashboard's files (no data in them), and /metrics to a
        client on this machine when the operator said so (open_metrics)."""
        path = scope["path"]
        if scope["method"] not in ("GET", "HEAD"):
            return False
        if path == "/" or path.startswith("/dashboard/"):
            return True
        client = scope.get("client")
        return (
            path == "/metrics"
            and self.api.open_metrics
            and client is not None
            and is_loopback(str(client[0]))
        )


def _has_body(headers: dict[str, str]) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() != "0")
