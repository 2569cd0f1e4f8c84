"""Shared helpers of the executor tests: a real policy service over HTTP on 127.0.0.1.

``PolicyServer`` is a starlette app served by uvicorn on a free loopback port. Each path
answers one way (``/allow``, ``/block``, ``/rewrite``, ``/status/{code}``, ``/redirect``,
``/text``, ``/list``, ``/big``, ``/slow``, ``/echo-headers``, ``/echo-error``, ``/cookie``,
``/claude``: Claude Code's answers) and every request is kept in ``requests`` (path,
headers, body, client port) for the test to read.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tether.api._server import AppServer

__all__ = ["PolicyServer", "Received"]


@dataclass
class Received:
    """One request the policy service got."""

    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int

    def json(self) -> Any:
        return json.loads(self.body)


class PolicyServer:
    """A policy service on a free loopback port (``async with PolicyServer() as server``)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        #: Set to let /slow answer (the test's teardown sets it, so nothing hangs).
        self.release = asyncio.Event()
        self.rewrite_to: dict[str, Any] = {"prompt": "REWRITTEN"}
        self._server = AppServer(self._app(), "127.0.0.1", 0, name="policy", grace=1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    async def __aenter__(self) -> PolicyServer:
        await self._server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release.set()
        await self._server.stop()

    def _app(self) -> Starlette:
        async def keep(request: Request) -> Received:
            got = Received(
                path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=await request.body(),
                client_port=request.client.port if request.client else -1,
            )
            self.requests.append(got)
            return got

        async def allow(request: Request) -> Response:
            await keep(request)
            return Response(status_code=204)

        async def block(request: Request) -> Response:
            await keep(request)
            return JSONResponse({"block": True, "reason": "refused by the policy service"})

        async def rewrite(request: Request) -> Response:
            got = await keep(request)
            data = {**got.json()["data"], **self.rewrite_to}
            return JSONResponse({"data": data, "log": "rewrote it"})

        async def status(request: Request) -> Response:
            await keep(request)
            code = int(request.path_params["code"])
            return PlainTextResponse(f"the service says {code}", status_code=code)

        async def redirect(request: Request) -> Response:
            await keep(request)
            return RedirectResponse("/block", status_code=307)

        async def text(request: Request) -> Response:
            await keep(request)
            return PlainTextResponse("hello, not JSON")

        async def a_list(request: Request) -> Response:
            await keep(request)
            return JSONResponse([1, 2, 3])

        async def big(request: Request) -> Response:
            await keep(request)
            return JSONResponse({"log": "x" * 200_000})

        async def slow(request: Request) -> Response:
            await keep(request)
            await self.release.wait()
            return Response(status_code=204)

        async def echo_error(request: Request) -> Response:
            got = await keep(request)
            said = got.headers.get("authorization", "")
            return PlainTextResponse(f"credentials {said} were rejected", status_code=401)

        async def cookie(request: Request) -> Response:
            await keep(request)
            answer = Response(status_code=204)
            answer.set_cookie("session", "kept-by-the-client?")
            return answer

        async def claude(request: Request) -> Response:
            got = await keep(request)
            if "block" in str(got.json().get("prompt", "")):
                return JSONResponse({"decision": "block", "reason": "claude says no"})
            return PlainTextResponse("Remember: answer briefly.")

        async def echo_headers(request: Request) -> Response:
            got = await keep(request)
            return JSONResponse({"log": json.dumps(got.headers)})

        handlers = {
            "/allow": allow,
            "/block": block,
            "/rewrite": rewrite,
            "/status/{code}": status,
            "/redirect": redirect,
            "/text": text,
            "/list": a_list,
            "/big": big,
            "/slow": slow,
            "/echo-headers": echo_headers,
            "/echo-error": echo_error,
            "/claude": claude,
            "/cookie": cookie,
        }
        return Starlette(
            routes=[Route(path, fn, methods=["POST"]) for path, fn in handlers.items()]
        )
