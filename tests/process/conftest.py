"""Fixtures of the process-layer tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from _mcp_support import HttpMcpServer, start_http_server


@pytest.fixture
async def http_mcp() -> AsyncIterator[Callable[..., Awaitable[HttpMcpServer]]]:
    """Start the fixture MCP server over HTTP: ``await http_mcp("http", port=0, token=None)``;
    every server started is killed after the test."""
    started: list[HttpMcpServer] = []

    async def start(*args: Any, **kwargs: Any) -> HttpMcpServer:
        server = await start_http_server(*args, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.kill()
