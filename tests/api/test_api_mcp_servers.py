"""The control API's process view shows each MCP server's connection, and PATCH
add_mcp_servers / remove_mcp_servers really connect and disconnect (real HTTP both ways)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _mcp_support import start_http_server, stdio_entry
from tether import AgentRuntime, OrchestrationAPI

SCRIPTED: dict[str, Any] = {"model": "scripted", "stop_timeout": 2.0}


@pytest.fixture
async def api(runtime: AgentRuntime) -> AsyncIterator[OrchestrationAPI]:
    """The control API, HTTP MCP servers on this machine allowed (allowed_hook_hosts)."""
    api = OrchestrationAPI(runtime, port=0, webhooks=False, allowed_hook_hosts=["127.0.0.1"])
    async with api:
        yield api


@pytest.mark.slow
async def test_the_process_view_shows_each_servers_state_and_tools(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    await runtime.add_process("desk", {**SCRIPTED, "mcp_servers": [stdio_entry("crm")]})
    body = (await client.get("/processes/desk")).json()
    crm = body["mcp_servers"]["crm"]
    assert (crm["transport"], crm["state"], crm["tools"], crm["last_error"]) == (
        "stdio",
        "connected",
        7,
        None,
    )
    assert "mcp__crm__add" in crm["tool_names"]
    assert body["config"]["mcp_server_names"] == ["crm"]


@pytest.mark.slow
async def test_patch_connects_an_added_server_and_disconnects_a_removed_one(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    server = await start_http_server("http", token="tok-api-4411aa")
    try:
        await runtime.add_process("desk", SCRIPTED)
        entry = {
            "name": "docs",
            "url": server.url,
            "headers": {"Authorization": "Bearer tok-api-4411aa"},
        }
        r = await client.patch("/processes/desk/config", json={"add_mcp_servers": [entry]})
        assert r.status_code == 200, r.text
        view = await client.get("/processes/desk")
        assert view.json()["mcp_servers"]["docs"]["state"] == "connected"
        assert "tok-api-4411aa" not in view.text
        r = await client.patch("/processes/desk/config", json={"remove_mcp_servers": ["docs"]})
        assert r.status_code == 200, r.text
        assert (await client.get("/processes/desk")).json()["mcp_servers"] == {}
    finally:
        await server.kill()
