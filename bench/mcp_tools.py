"""An MCP tool call through tether beside the same call made with the bare SDK.

Run: ``.venv/bin/python bench/mcp_tools.py``. One fixture server
(tests/process/mcp_fixture_server.py) per side and transport: tether's side calls the
``mcp__fx__add`` Tool a running AgentProcess offers its model (what the agent loop calls);
the bare side is ``ClientSession.call_tool`` on a session of the SDK's own stdio or
streamable-HTTP client. Calls are interleaved so drift in the machine hits both alike. No
target: the table shows what tether adds to a call.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tether import AgentProcess, ProcessConfig
from tether.models import ScriptedModel

RUNS = 300
SERVER = str(Path(__file__).parents[1] / "tests" / "process" / "mcp_fixture_server.py")
ARGS = {"a": 2, "b": 3}


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, SERVER, "http", stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    line = await child.stdout.readline()
    try:
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        child.kill()
        await child.wait()


@contextlib.asynccontextmanager
async def bare_session(url: str | None) -> AsyncIterator[ClientSession]:
    async with contextlib.AsyncExitStack() as stack:
        if url is None:
            params = StdioServerParameters(command=sys.executable, args=[SERVER, "stdio"])
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            read, write = await stack.enter_async_context(streamable_http_client(url))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


async def measure(call: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def compare(label: str, entry: dict[str, Any], url: str | None) -> list[tuple[str, float]]:
    process = AgentProcess("bench", ProcessConfig(model=ScriptedModel(), mcp_servers=[entry]))
    async with process, bare_session(url) as session:
        assert process._loop is not None
        tool = process._loop.tools["mcp__fx__add"]
        for _ in range(20):  # warm both paths
            await tool.fn(**ARGS)
            await session.call_tool("add", ARGS)
        ours: list[float] = []
        bare: list[float] = []
        for _ in range(RUNS):
            ours.append(await measure(lambda: tool.fn(**ARGS)))
            bare.append(await measure(lambda: session.call_tool("add", ARGS)))
    return [
        (f"tether MCP tool, {label}", statistics.median(ours)),
        (f"SDK ClientSession.call_tool, {label}", statistics.median(bare)),
    ]


async def main() -> None:
    rows = await compare(
        "stdio", {"name": "fx", "command": [sys.executable, SERVER, "stdio"]}, None
    )
    async with http_server() as url:
        rows += await compare("HTTP", {"name": "fx", "url": url}, url)
    print(f"MCP tool call add(2, 3), {RUNS} calls each, interleaved")
    print(f"{'':<44}{'median ms':>10}")
    for label, median in rows:
        print(f"{label:<44}{median * 1e3:>10.3f}")
    for i in (0, 2):
        print(f"{rows[i][0]}: {rows[i][1] / rows[i + 1][1]:.2f}x the bare SDK")


if __name__ == "__main__":
    asyncio.run(main())
