"""WebhookServer: serves every webhook trigger of a runtime's processes over HTTP.

One listener per (host, port); several processes may share a port on different paths. A
request is routed by its path at the time it arrives, so processes and triggers added later
are served as soon as their port listens (``sync()``, run on every add and remove).

A trigger with a ``secret`` only accepts requests signed with it, and each signed request
only once: the header ``X-Tether-Timestamp: <Unix seconds>`` and the header
``X-Tether-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + the raw body>``. A timestamp
more than ``replay_window`` seconds (default 300) from this host's clock is refused, and so is a
signature already accepted within the window (a replay). A trigger without a secret takes
requests from this machine only (a listener off loopback refuses the others) and refuses those
from a browser page of another site (an ``Origin`` not on this machine). An accepted
request answers 202 with the event id; the JSON body becomes the event's payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import heapq
import hmac
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from .._redact import redacted_trace
from ..process import AgentProcess, InvalidEventError, ProcessState, TriggerEvent, check_traceparent
from ..runtime import AgentRuntime, WebhookRoute
from ._errors import PASSED_ON, APIConfigError, APIError, error_response
from ._http import (
    DEFAULT_MAX_BODY,
    foreign_origin,
    host_port,
    is_loopback,
    parse_json,
    read_body,
)
from ._server import AppServer

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "ReplayGuard",
    "WebhookServer",
    "sign_webhook",
    "webhook_headers",
]

logger = logging.getLogger("tether.api")

SIGNATURE_HEADER: Final = "X-Tether-Signature"
TIMESTAMP_HEADER: Final = "X-Tether-Timestamp"
#: Seconds a signed request's timestamp may differ from this host's clock (either way).
DEFAULT_REPLAY_WINDOW: Final = 300.0
#: Most signatures remembered at once; past it, signed requests are refused (503) until the
#: oldest expire, so a replay is never accepted because its signature was forgotten.
MAX_REMEMBERED: Final = 200_000
_CLOSED: Final = (ProcessState.STOPPED, ProcessState.STOPPING)


def sign_webhook(secret: str, body: bytes, timestamp: int) -> str:
    """The ``X-Tether-Signature`` value for ``body`` sent at ``timestamp`` (Unix seconds).

    ``sha256=<hex HMAC-SHA256 of b"<timestamp>." + body>``, keyed with ``secret``.
    """
    signed = str(int(timestamp)).encode("ascii") + b"." + body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def webhook_headers(secret: str, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """Both headers a sender adds to a signed webhook request (timestamp: now by default)."""
    when = int(time.time()) if timestamp is None else int(timestamp)
    return {TIMESTAMP_HEADER: str(when), SIGNATURE_HEADER: sign_webhook(secret, body, when)}


class ReplayGuard:
    """The signatures accepted within the replay window, each kept until it expires.

    ``check`` refuses a timestamp outside the window and a signature already spent; ``spend``
    and ``refund`` are synchronous, so a check and its spending cannot interleave with another
    request's. ``clock`` (wall-clock seconds) is the timestamps' clock.
    """

    def __init__(
        self,
        window: float = DEFAULT_REPLAY_WINDOW,
        *,
        max_remembered: int = MAX_REMEMBERED,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(window, bool) or not isinstance(window, int | float):
            raise APIConfigError(f"replay_window must be a number of seconds, got {window!r}")
        if not math.isfinite(window) or window <= 0:
            raise APIConfigError(
                f"replay_window must be a positive number of seconds, got {window!r}"
            )
        if isinstance(max_remembered, bool) or not isinstance(max_remembered, int):
            raise APIConfigError(f"max_remembered must be an int, got {max_remembered!r}")
        if max_remembered < 1:
            raise APIConfigError(f"max_remembered must be at least 1, got {max_remembered!r}")
        self.window = float(window)
        self.max_remembered = max_remembered
        self._clock = clock
        self._expiry: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        self._forget_expired(self._clock())
        return len(self._expiry)

    def spend(self, signature: str, timestamp: int) -> None:
        """Accept ``signature`` once; APIError if stale, already spent, or the cache is full."""
        now = self._clock()
        if abs(now - timestamp) > self.window:
            raise APIError(
                401,
                "STALE_TIMESTAMP",
                f"the {TIMESTAMP_HEADER} header is more than {self.window:g} seconds from this "
                "host's clock; sign each request (and each retry) when it is sent",
            )
        self._forget_expired(now)
        if signature in self._expiry:
            raise APIError(
                401,
                "REPLAYED",
                "this signed request was already accepted; sign a retry anew (a new timestamp)",
            )
        if len(self._expiry) >= self.max_remembered:
            raise APIError(
                503,
                "REPLAY_CACHE_FULL",
                "too many signed requests within the replay window; retry later",
                headers={"Retry-After": "1"},
            )
        # Kept until its timestamp leaves the window: until then it could still be accepted.
        expires = timestamp + self.window
        self._expiry[signature] = expires
        heapq.heappush(self._heap, (expires, signature))

    def refund(self, signature: str) -> None:
        """Forget a spent signature whose request was not taken (so its retry is accepted)."""
        self._expiry.pop(signature, None)

    def _forget_expired(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][0] < now:
            expires, signature = heapq.heappop(heap)
            if self._expiry.get(signature) == expires:
                del self._expiry[signature]


class WebhookServer:
    """Listens on every port a webhook trigger of ``runtime`` names; see the module doc."""

    def __init__(
        self,
        runtime: AgentRuntime,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY,
        replay_window: float = DEFAULT_REPLAY_WINDOW,
    ) -> None:
        self.runtime = runtime
        self.max_body_bytes = max_body_bytes
        self.replay_guard = ReplayGuard(replay_window)
        self._servers: dict[tuple[str, int], AppServer] = {}
        self._lock = asyncio.Lock()
        self._running = False
        runtime.on_change(self._changed)

    def __repr__(self) -> str:
        ports = sorted(f"{h}:{p}" for h, p in self._servers)
        return f"<WebhookServer {'running' if self._running else 'stopped'} {ports}>"

    @property
    def running(self) -> bool:
        return self._running

    def endpoints(self) -> list[dict[str, Any]]:
        """Every served webhook: url, process, trigger_id, signed."""
        out: list[dict[str, Any]] = []
        for (host, port), routes in sorted(self.runtime.webhook_routes().items()):
            if (host, port) not in self._servers:
                continue
            shown = f"[{host}]" if ":" in host else host
            for path, route in sorted(routes.items()):
                out.append(
                    {
                        "url": f"http://{shown}:{port}{path}",
                        "process": route.process.name,
                        "trigger_id": route.trigger_id,
                        "signed": route.trigger.secret is not None,
                    }
                )
        return out

    async def start(self) -> None:
        """Listen on every webhook port of the runtime; OSError (nothing left open) if busy."""
        self._running = True
        try:
            await self.sync()
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop every listener."""
        self._running = False
        async with self._lock:
            servers, self._servers = list(self._servers.values()), {}
            for server in servers:
                await server.stop()

    async def sync(self) -> None:
        """Open listeners for new webhook ports, close those no trigger uses any more."""
        if not self._running:
            return
        async with self._lock:
            wanted = self.runtime.webhook_listeners()
            for key in sorted(set(self._servers) - wanted):
                await self._servers.pop(key).stop()
            for key in sorted(wanted - set(self._servers)):
                host, port = key
                server = AppServer(_WebhookApp(self, key), host, port, name=f"webhooks:{port}")
                await server.start()
                self._servers[key] = server
                logger.info("webhooks listening on %s:%s", host, port)

    async def _changed(self, change: str, process: AgentProcess) -> None:
        try:
            await self.sync()
        except OSError as exc:
            logger.error("webhook triggers of %s cannot be served: %s", process.name, exc)

    async def handle(self, key: tuple[str, int], request: Request) -> Response:
        """Answer one request on the listener ``key``."""
        route = self.runtime.webhook_route(*key, request.url.path)
        if route is None:
            raise APIError(404, "NOT_FOUND", f"no webhook trigger at {request.url.path}")
        if request.method != "POST":
            raise APIError(
                405,
                "METHOD_NOT_ALLOWED",
                f"webhooks take POST, not {request.method}",
                headers={"Allow": "POST"},
            )
        secret = route.trigger.secret
        client = request.client.host if request.client is not None else ""
        if secret is None and not is_loopback(key[0]) and not is_loopback(client):
            # As the control API needs a token off loopback: without a signature, anyone on
            # the network could feed the agent events.
            raise APIError(
                403,
                "SIGNATURE_REQUIRED",
                "this webhook is not signed, so it only takes requests from this machine; "
                "give its trigger a secret to take them from elsewhere",
            )
        origin = None
        if secret is None:
            # A page on this machine but on another port (a development server's
            # localhost:3000) is another site as much as a remote one.
            sent_to = host_port(request.headers.get("host"), key[1])
            origin = foreign_origin(request.scope["headers"], sent_to)
        if origin is not None:
            # A page of any web site the host's user visits could otherwise feed the agent
            # events (a form or fetch() POST needs no CORS consent); a signed webhook is safe,
            # as the page cannot sign.
            raise APIError(
                403,
                "FORBIDDEN",
                f"requests from the web origin {origin!r} are refused: this webhook is not "
                "signed (give its trigger a secret)",
            )
        body = await read_body(request, self.max_body_bytes)
        if secret is not None:
            given = request.headers.get(SIGNATURE_HEADER)
            if not given:
                raise APIError(
                    401, "SIGNATURE_REQUIRED", f"this webhook needs a {SIGNATURE_HEADER} header"
                )
            signing_key = secret.get_secret_value()
            if not signing_key.strip():
                # An empty key (say ``secret: ${HOOK_SECRET:-}`` with the variable unset) is
                # a key anyone can sign with: such a trigger accepts no request at all.
                raise APIError(
                    503, "WEBHOOK_MISCONFIGURED", "this webhook's secret is empty; set one"
                )
            timestamp = _timestamp(request.headers.get(TIMESTAMP_HEADER))
            expected = sign_webhook(signing_key, body, timestamp)
            if not hmac.compare_digest(given.strip().encode(), expected.encode()):
                raise APIError(
                    401,
                    "INVALID_SIGNATURE",
                    f"the signature does not match the {TIMESTAMP_HEADER} header and the body",
                )
            # Spent before the first await, so two copies sent at once cannot both pass.
            self.replay_guard.spend(expected, timestamp)
            try:
                return await self._take(route, request, body)
            except BaseException:
                # Not taken (process stopped, bad JSON, refused event): a retry of the same
                # request must not be refused as a replay.
                self.replay_guard.refund(expected)
                raise
        return await self._take(route, request, body)

    async def _take(self, route: WebhookRoute, request: Request, body: bytes) -> Response:
        payload = parse_json(body)
        process = route.process
        if process.state in _CLOSED or self.runtime.get(process.name) is not process:
            raise APIError(
                503, "PROCESS_NOT_RUNNING", f"process {process.name!r} is {process.state.value}"
            )
        try:
            event = TriggerEvent(route.trigger_id, "webhook", payload)
            # A sender's W3C trace context continues in the event's spans; one that is not
            # valid is ignored, as the W3C recommendation has a receiver do.
            sent = request.headers.get("traceparent", "").strip().lower()
            with contextlib.suppress(InvalidEventError):
                event.traceparent = check_traceparent(sent or None)
            event_id = await process.inject(event)
        except InvalidEventError as exc:
            raise APIError(422, "INVALID_EVENT", str(exc)) from None
        answer: dict[str, Any] = {
            "event_id": event_id,
            "process": process.name,
            "trigger_id": route.trigger_id,
            "status": "queued",
        }
        for entry in reversed(process.dead_letters):
            if entry["event_id"] == event_id:
                answer["status"] = "dead_lettered"
                answer["reason"] = entry["reason"]
                break
        return JSONResponse(answer, status_code=202)


def _timestamp(given: str | None) -> int:
    """The request's signing time: whole Unix seconds, as the header must give them."""
    if not given:
        raise APIError(
            401,
            "TIMESTAMP_REQUIRED",
            f"a signed webhook needs a {TIMESTAMP_HEADER} header (Unix seconds), covered by "
            "its signature",
        )
    text = given.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 12):
        raise APIError(
            401,
            "TIMESTAMP_REQUIRED",
            f"the {TIMESTAMP_HEADER} header must be whole Unix seconds (digits only), got "
            f"{text[:20]!r}",
        )
    return int(text)


class _WebhookApp:
    """The ASGI app of one listener."""

    def __init__(self, server: WebhookServer, key: tuple[str, int]) -> None:
        self.server = server
        self.key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            response = await self.server.handle(self.key, request)
        except APIError as exc:
            response = exc.response()
        except PASSED_ON:
            raise
        except BaseException as exc:  # a hook's own BaseException too: see PASSED_ON
            trace = redacted_trace(exc, self.server.runtime.redact)
            logger.error("webhook %s failed\n%s", request.url.path, trace)
            response = error_response(500, "INTERNAL_ERROR", "the webhook could not be handled")
        await response(scope, receive, send)


WebhookServer.__module__ = "tether.api"
