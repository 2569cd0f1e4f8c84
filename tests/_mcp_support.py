"""Helpers of the MCP tests: the fixture server (process/mcp_fixture_server.py, on the SDK)
as a stdio entry or as an HTTP server subprocess, and checks on the processes it ran as."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FIXTURE_SERVER", "HttpMcpServer", "pids", "start_http_server", "stdio_entry"]

FIXTURE_SERVER = str(Path(__file__).parent / "process" / "mcp_fixture_server.py")


def stdio_entry(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """An ``mcp_servers`` entry running the fixture server over stdio."""
    return {"name": name, "command": [sys.executable, FIXTURE_SERVER, "stdio", *args], **fields}


def pids(path: Path) -> list[int]:
    """The pids a fixture server wrote to its ``--pidfile`` (its own first)."""
    return [int(line) for line in path.read_text().split()]


@dataclass
class HttpMcpServer:
    """The fixture server over HTTP (or SSE) on 127.0.0.1, in a process group of its own."""

    url: str
    port: int
    child: asyncio.subprocess.Process

    async def kill(self) -> None:
        if self.child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.child.pid, signal.SIGKILL)
        await self.child.wait()


async def start_http_server(
    transport: str = "http", *, port: int = 0, token: str | None = None
) -> HttpMcpServer:
    """Start the fixture server on ``port`` (0: one the OS picks) and wait until it listens."""
    args = [FIXTURE_SERVER, transport, "--port", str(port)]
    if token is not None:
        args += ["--token", token]
    child = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdout=asyncio.subprocess.PIPE, start_new_session=True
    )
    assert child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
    except BaseException:
        child.kill()
        await child.wait()
        raise
    assert line.startswith(b"PORT "), line
    bound = int(line.split()[1])
    path = "/mcp" if transport == "http" else "/sse"
    return HttpMcpServer(f"http://127.0.0.1:{bound}{path}", bound, child)
