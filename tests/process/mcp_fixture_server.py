"""A real MCP server for the tests, written with the SDK's MCPServer (FastMCP in mcp 1.x).

Run as ``python mcp_fixture_server.py stdio|http|sse [--port N] [--pidfile PATH]
[--grandchild] [--token T] [--refuse-if PATH]``.

With ``--pidfile`` it writes its pid (and, with ``--grandchild``, the pid of a sleeping child
it leaves in its process group) one per line, so a test can kill it or check that a stop left
nothing behind. Over HTTP it serves on 127.0.0.1 with uvicorn, on ``--port`` or (0) a port
the OS picks, and prints ``PORT <n>`` once it listens; with ``--token`` a request without
``Authorization: Bearer <T>`` gets 401. With ``--refuse-if`` it exits at once (code 3) while
that file exists.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import socket
import subprocess
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fixture")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable of the server, or '<unset>'."""
    return os.environ.get(name, "<unset>")


@server.tool()
def order(order_id: str) -> dict[str, object]:
    """A structured answer."""
    return {"order_id": order_id, "status": "shipped", "items": 2}


@server.tool()
async def sleep(seconds: float, mark: str = "") -> str:
    """Sleep, then answer; with ``mark``, create that file first (the call has arrived)."""
    if mark:
        os.close(os.open(mark, os.O_CREAT | os.O_WRONLY))
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
async def meta(key: str, ctx: Context) -> str:
    """The value the call's ``_meta`` holds under ``key``, or '<unset>'."""
    found = ctx.request_context.meta or {}
    return str(found.get(key, "<unset>"))


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool ``name`` (answering its own name) and tell the client the list changed."""

    def grown() -> str:
        return name

    server.add_tool(grown, name=name, description="A tool added at run time.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


def guarded(app: Any, token: str) -> Any:
    """``app`` refusing HTTP requests without the token: as a bearer token, or as the password
    of basic auth (any user)."""

    def allowed(given: str) -> bool:
        if given == f"Bearer {token}":
            return True
        if given.startswith("Basic "):
            _, _, password = base64.b64decode(given[6:]).decode().partition(":")
            return password == token
        return False

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        given = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
        if scope["type"] == "http" and not allowed(given):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await app(scope, receive, send)

    return guard


def serve_http(transport: str, port: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(guarded(app, token) if token else app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pidfile")
    parser.add_argument("--grandchild", action="store_true")
    parser.add_argument("--token")
    parser.add_argument("--refuse-if", help="exit at once (code 3) while this file exists")
    options = parser.parse_args()
    if options.refuse_if and os.path.exists(options.refuse_if):
        print(f"refusing to start: {options.refuse_if} exists", file=sys.stderr)
        sys.exit(3)
    pids = [os.getpid()]
    if options.grandchild:
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        pids.append(child.pid)
    if options.pidfile:
        with open(options.pidfile + ".tmp", "w") as out:
            out.write("\n".join(str(p) for p in pids) + "\n")
        os.replace(options.pidfile + ".tmp", options.pidfile)
    if options.transport == "stdio":
        server.run("stdio")
    else:
        serve_http(options.transport, options.port, options.token)


if __name__ == "__main__":
    main()
