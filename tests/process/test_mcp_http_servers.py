"""MCP servers over HTTP: the fixture server (the SDK's MCPServer) served by uvicorn on a free
127.0.0.1 port in a subprocess, reached over streamable HTTP (and SSE) by a real AgentProcess."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from _mcp_support import HttpMcpServer, start_http_server
from _process_support import Recorder, eventually
from tether import AgentProcess, HookEvent, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel

pytestmark = pytest.mark.slow

StartServer = Callable[..., Awaitable[HttpMcpServer]]
CONNECT = 60.0


@pytest.fixture
async def http_mcp() -> AsyncIterator[StartServer]:
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


def make(*servers: dict[str, Any], **config: Any) -> tuple[AgentProcess, ScriptedModel, Recorder]:
    model = ScriptedModel(reply="done")
    config.setdefault("stop_timeout", 2.0)
    process = AgentProcess("web", ProcessConfig(model=model, mcp_servers=list(servers), **config))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    return process, model, rec


async def run_calls(
    process: AgentProcess, model: ScriptedModel, rec: Recorder, *calls: tuple[str, dict[str, Any]]
) -> list[str]:
    """One run making ``calls``; the tool results the model read, in order."""
    model.tool_calls = list(calls)
    done, asked = len(rec.outcomes()), len(model.requests)
    await process.inject(TriggerEvent("desk", "webhook", {"ticket": "t"}))
    await eventually(lambda: len(rec.outcomes()) > done, timeout=CONNECT, what="the run")
    return [r["messages"][-1]["content"] for r in model.requests[asked + 1 :]]


async def test_a_streamable_http_servers_tools_are_offered_and_answer(
    http_mcp: StartServer,
) -> None:
    server = await http_mcp("http")
    process, model, rec = make({"name": "docs", "url": server.url})
    async with process:
        status = process.status()["mcp_servers"]["docs"]
        assert (status["transport"], status["state"], status["tools"]) == ("http", "connected", 7)
        add, fail = await run_calls(
            process,
            model,
            rec,
            ("mcp__docs__add", {"a": 20, "b": 22}),
            ("mcp__docs__fail", {"reason": "read only"}),
        )
        spec = next(
            t["function"]
            for t in model.requests[0]["tools"]
            if t["function"]["name"] == "mcp__docs__add"
        )
    assert add == "42"
    assert fail == "error: McpToolError: Error executing tool fail: refused: read only"
    assert spec["parameters"]["required"] == ["a", "b"]


async def test_a_killed_http_server_gives_a_clear_error_and_is_reconnected_when_back(
    http_mcp: StartServer,
) -> None:
    server = await http_mcp("http")
    process, model, rec = make({"name": "docs", "url": server.url}, tool_timeout=10)
    async with process:
        await server.kill()
        [result] = await run_calls(process, model, rec, ("mcp__docs__add", {"a": 1, "b": 2}))
        assert result.startswith("error: McpServerUnavailableError: MCP server 'docs' ")
        assert "it is being reconnected" in result
        await eventually(
            lambda: process.status()["mcp_servers"]["docs"]["state"] == "reconnecting",
            what="the loss to be seen",
        )
        assert process.status()["mcp_servers"]["docs"]["tools"] == 0
        await http_mcp("http", port=server.port)  # back, on the same port
        await eventually(
            lambda: process.status()["mcp_servers"]["docs"]["connects"] == 2,
            timeout=CONNECT,
            what="the reconnect",
        )
        assert await run_calls(process, model, rec, ("mcp__docs__add", {"a": 1, "b": 2})) == ["3"]


async def test_headers_reach_the_server_and_their_secrets_are_never_shown(
    http_mcp: StartServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = "tok-5f1e9a7c33"
    monkeypatch.setenv("DOCS_TOKEN", token)
    server = await http_mcp("http", token=token)
    good = {"name": "docs", "url": server.url, "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    bad = {"name": "other", "url": server.url, "headers": {"Authorization": "Bearer wrong-77d1c0"}}
    process, model, rec = make(good, bad)
    async with process:
        status = process.status()["mcp_servers"]
        assert status["docs"]["state"] == "connected"
        assert status["other"]["state"] == "reconnecting"
        assert status["other"]["last_error"]
        assert await run_calls(process, model, rec, ("mcp__docs__add", {"a": 1, "b": 1})) == ["2"]
        dump = process.config.model_dump(mode="json", exclude={"model"})
        shown = f"{process.status()} {process.config!r} {dump}"
    for secret in (token, "wrong-77d1c0"):
        assert secret not in shown
        assert secret not in caplog.text


async def test_a_urls_password_goes_as_basic_auth_and_is_never_shown(
    http_mcp: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    password = "pw-b4sic-91e2"
    server = await http_mcp("http", token=password)
    url = server.url.replace("http://", f"http://bob:{password}@")
    process, model, rec = make({"name": "docs", "url": url})
    async with process:
        assert process.status()["mcp_servers"]["docs"]["state"] == "connected"
        assert await run_calls(process, model, rec, ("mcp__docs__add", {"a": 5, "b": 5})) == ["10"]
        shown = f"{process.status()} {process.config!r}"
    assert password not in shown
    assert password not in caplog.text
    assert f"POST {server.url}" in caplog.text  # (httpx2's own log line, without it)


async def test_an_idle_server_that_went_away_is_found_out_without_a_call(
    http_mcp: StartServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="tether.process")
    server = await http_mcp("http")
    process, _, _ = make({"name": "docs", "url": server.url})
    async with process:
        await server.kill()
        await eventually(
            lambda: process.status()["mcp_servers"]["docs"]["state"] == "reconnecting",
            timeout=CONNECT,
            what="the loss to be seen",
        )
        status = process.status()["mcp_servers"]["docs"]
    assert status["tools"] == 0
    assert status["last_error"]
    [lost, *_] = [r.getMessage() for r in caplog.records if r.name == "tether.process"]
    assert lost.startswith("MCP server 'docs': ")
    assert lost.endswith("reconnecting in 0.5s")


async def test_an_sse_server_is_reached_too(http_mcp: StartServer) -> None:
    server = await http_mcp("sse")
    process, model, rec = make({"name": "legacy", "transport": "sse", "url": server.url})
    async with process:
        assert process.status()["mcp_servers"]["legacy"]["state"] == "connected"
        assert await run_calls(process, model, rec, ("mcp__legacy__add", {"a": 2, "b": 2})) == ["4"]


async def test_an_http_server_added_at_run_time_connects_and_removed_disconnects(
    http_mcp: StartServer,
) -> None:
    server = await http_mcp("http")
    process, model, rec = make()
    async with process:
        assert await process.add_mcp_server(
            {"name": "docs", "transport": "streamable-http", "url": server.url}
        )
        assert process.status()["mcp_servers"]["docs"]["state"] == "connected"
        assert await run_calls(process, model, rec, ("mcp__docs__add", {"a": 3, "b": 4})) == ["7"]
        assert await process.remove_mcp_server("docs")
        assert await run_calls(process, model, rec) == []
        assert "tools" not in model.requests[-1]
