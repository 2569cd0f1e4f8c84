"""A real MCP server for the tests, written with the SDK's MCPServer (FastMCP in mcp 1.x).

Run as ``python mcp_fixture_server.py stdio|http [--port N] [--pidfile PATH] [--grandchild]``.
With ``--pidfile`` it writes its pid (and, with ``--grandchild``, the pid of a ``sleep`` it
leaves running in its process group) one per line, so a test can kill it or check that a stop
left nothing behind.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys

from mcp.server.mcpserver import MCPServer
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
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pidfile")
    parser.add_argument("--grandchild", action="store_true")
    options = parser.parse_args()
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
    elif options.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=options.port)
    else:
        server.run("sse", host="127.0.0.1", port=options.port)


if __name__ == "__main__":
    main()
