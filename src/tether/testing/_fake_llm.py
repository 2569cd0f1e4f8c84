"""FakeLLM: a real OpenAI-compatible chat-completions server on 127.0.0.1, with a script.

It serves from the caller's event loop (uvicorn's ``Server.serve`` as a task) on a socket it
binds itself, so a busy port fails ``start()`` with ``OSError`` instead of uvicorn's
``sys.exit``, and it leaves the signal handlers alone so Ctrl-C still reaches the program.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from types import TracebackType
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tether.api import AppServer
from tether.models import arguments_text, last_user_text, scripted_usage

__all__ = ["FakeLLM"]

DEFAULT_REPLY: Final = "Ticket triaged: P2, routed to the web team."
_MODEL_ID: Final = "fake-llm"
# Seconds uvicorn waits for in-flight requests at stop() before cancelling them.
_GRACE: Final = 2
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
_ERRORS_ALLOWED: Final = "FakeLLM.errors holds HTTP statuses (200-599), got {!r}"


class FakeLLM:
    """A scripted OpenAI-compatible model server, for tests and tutorials.

    Serves ``POST /v1/chat/completions`` (non-streaming) and ``GET /v1/models`` at
    ``base_url``. Every chat request is recorded: ``requests`` gets the JSON body, ``prompts``
    the text of its last user message. A request that offers tools while the ``tool_calls``
    queue is not empty is answered with the first queued call (popped; ids ``call_1``,
    ``call_2``, ...; a ``str`` of arguments is sent verbatim, so broken JSON can be scripted,
    anything else as JSON text); any other with the first of ``replies`` (popped), once they
    are used with ``reply``. Faults, consumed in order:
    ``errors`` is a queue of HTTP statuses to answer with (OpenAI-style error bodies, plus a
    ``retry-after-ms`` header when ``retry_after`` is set), ``malformed`` counts requests to
    answer with a 200 whose body is not JSON; ``latency`` seconds pass before every answer.
    Every answer reports its ``usage``: a token is a word (of the messages sent, of the answer),
    and ``cached_tokens`` of the prompt's (at most all of them) are reported as served from
    the provider's cache.
    All of these are read per request, so a test may change them at any time; ``tool_calls``,
    ``replies``, ``latency`` and ``errors`` may also be given to the constructor (lists are
    copied).
    """

    def __init__(
        self,
        port: int = 8781,
        *,
        reply: str = DEFAULT_REPLY,
        host: str = "127.0.0.1",
        tool_calls: list[tuple[str, dict[str, Any] | str]] | None = None,
        replies: list[str] | None = None,
        latency: float = 0.0,
        errors: list[int] | None = None,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0 (any free port) or 1-65535, got {port!r}")
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
        self.host = host
        self.reply = reply
        # A copy: popping the queue must not empty the caller's list.
        self.tool_calls: list[tuple[str, dict[str, Any] | str]] = list(tool_calls or ())
        self.replies: list[str] = list(replies or ())
        self.latency: float = latency
        self._errors: list[int] = []
        self.errors = list(errors or ())
        self.malformed: int = 0
        self.cached_tokens: int = 0
        self.retry_after: float | None = None
        self.prompts: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self._port = port
        self._ids = itertools.count(1)
        self._server: AppServer | None = None
        self._starting = False
        self._stopping = asyncio.Event()

    @property
    def port(self) -> int:
        """The port served on: the real one once started, even when constructed with 0."""
        if self._port == 0:
            raise RuntimeError("FakeLLM(port=0) has no port until start() has picked one")
        return self._port

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client, e.g. ``http://127.0.0.1:8781/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def errors(self) -> list[int]:
        """HTTP statuses (200-599) the next requests are answered with, in order."""
        return self._errors

    @errors.setter
    def errors(self, statuses: list[int]) -> None:
        statuses = list(statuses)
        for status in statuses:
            if not _is_error_status(status):
                raise ValueError(_ERRORS_ALLOWED.format(status))
        self._errors = statuses

    @property
    def running(self) -> bool:
        return self._server is not None

    def __repr__(self) -> str:
        where = self.base_url if self._port else f"{self.host}:<unbound>"
        return f"<FakeLLM {where} {'running' if self.running else 'stopped'}>"

    async def start(self) -> None:
        """Listen and serve; returns once the socket accepts connections."""
        if self._server is not None:
            raise RuntimeError(f"FakeLLM is already running at {self.base_url}")
        if self._starting:  # (it would serve a second time, and stop() stop one of the two)
            raise RuntimeError("FakeLLM is already starting")
        self._starting = True
        try:
            self._stopping = asyncio.Event()
            server = AppServer(_app(self), self.host, self._port, name="FakeLLM", grace=_GRACE)
            await server.start()
            self._port = server.port
            self._server = server
        finally:
            self._starting = False

    async def stop(self) -> None:
        """Stop serving; in-flight answers are sent first (their latency cut short)."""
        server = self._server
        if server is None:
            return
        self._stopping.set()
        try:
            await server.stop()
        finally:
            self._server = None

    async def __aenter__(self) -> FakeLLM:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- request handling -------------------------------------------------------------

    async def _chat(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "The request body is not valid JSON.")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is a required property.", param="messages")
        self.requests.append(body)
        self.prompts.append(last_user_text(body["messages"]))
        # Decide now, in arrival order; answer after the latency.
        if self.errors:
            status = self.errors.pop(0)
            if _is_error_status(status):
                answer = _error(status, _status_text(status), retry_after=self.retry_after)
            else:  # appended to the list, so the setter never saw it
                answer = _error(500, _ERRORS_ALLOWED.format(status))
        elif self.malformed > 0:
            self.malformed -= 1
            answer = Response(b"<html>upstream hiccup</html>", media_type="application/json")
        elif body.get("stream"):
            answer = _error(400, "FakeLLM does not stream; send stream=false.", param="stream")
        else:
            answer = JSONResponse(self._completion(body))
        if self.latency > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.latency)
        return answer

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any]
        if body.get("tools") and self.tool_calls:
            name, arguments = self.tool_calls.pop(0)
            text = arguments_text(arguments)
            call = {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {"name": name, "arguments": text},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            text = self.replies.pop(0) if self.replies else self.reply
            message = {"role": "assistant", "content": text}
            finish = "stop"
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or _MODEL_ID),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": scripted_usage(body["messages"], text, self.cached_tokens),
        }

    async def _models(self, request: Request) -> Response:
        model = {"id": _MODEL_ID, "object": "model", "created": 0, "owned_by": "tether"}
        return JSONResponse({"object": "list", "data": [model]})


def _app(llm: FakeLLM) -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/chat/completions", llm._chat, methods=["POST"]),
            Route("/v1/models", llm._models, methods=["GET"]),
        ]
    )


def _error(
    status: int, message: str, *, param: str | None = None, retry_after: float | None = None
) -> Response:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    headers = {}
    if retry_after is not None:
        headers["retry-after-ms"] = str(max(1, round(retry_after * 1000)))
    return JSONResponse(body, status_code=status, headers=headers)


def _is_error_status(status: object) -> bool:
    return type(status) is int and 200 <= status <= 599


def _status_text(status: int) -> str:
    from http import HTTPStatus

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    return f"FakeLLM was told to fail this request with HTTP {status} ({phrase})."


FakeLLM.__module__ = "tether.testing"
