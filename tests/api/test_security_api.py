"""Security review, by experiment: names, ids and webhook keys the control API must refuse.

Everything goes over real HTTP to an API (and webhook listener) served on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from _net_support import free_port
from tether import AgentProcess, AgentRuntime, HookManager, OrchestrationAPI, Plugin, PluginError
from tether.api import webhook_headers
from tether.hooks import register_plugin
from tether.store._artifacts import DirArtifacts


@pytest.fixture
async def api(runtime: AgentRuntime) -> AsyncIterator[OrchestrationAPI]:
    api = OrchestrationAPI(runtime, port=0)
    await api.start()
    yield api
    await api.stop()


async def test_a_process_name_ending_in_a_newline_answers_422(client: httpx.AsyncClient) -> None:
    """Regression: the name pattern ended in "$", which matches before a final newline, so
    "triage\\n" was deployed (and then written as is into log lines and the journal)."""
    r = await client.post("/processes", json={"name": "triage\n", "config": {"model": "scripted"}})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "INVALID_NAME"
    assert "'triage\\n'" in r.json()["error"]["message"]
    assert (await client.get("/processes")).json()["processes"] == []


def test_a_process_name_ending_in_a_newline_is_refused_in_code() -> None:
    with pytest.raises(ValueError, match="not allowed"):
        AgentProcess("triage\n")


async def test_a_task_id_ending_in_a_newline_answers_400(client: httpx.AsyncClient) -> None:
    """Regression: the artifacts endpoint took "abc%0A" as a task id (the "$" anchor again)."""
    r = await client.post("/processes", json={"name": "t", "config": {"model": "scripted"}})
    assert r.status_code == 201, r.text
    r = await client.get("/processes/t/tasks/abc%0A/artifacts")
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "BAD_REQUEST"


def test_an_artifact_store_refuses_a_name_ending_in_a_newline(tmp_path: Path) -> None:
    """Regression: check_artifact_path let a trailing newline into a file name."""
    store = DirArtifacts(tmp_path)
    with pytest.raises(ValueError, match="not a safe file name"):
        store.put("task-1", "debrief.json\n", {"ok": True})
    with pytest.raises(ValueError, match="not a safe file name"):
        store.list("task-1\n")
    assert list(tmp_path.iterdir()) == []


def test_a_plugin_name_ending_in_a_newline_is_refused_at_registration() -> None:
    """Regression: the slug pattern's "$" let "audit\\n" in, and a plugin's name becomes part of
    its artifacts' file names."""

    class Audit(Plugin):
        name = "audit\n"

    manager = HookManager()
    with pytest.raises(PluginError, match="name must be a slug"):
        register_plugin(manager, Audit())
    assert len(manager) == 0


async def test_a_webhook_whose_secret_is_empty_accepts_no_request(
    runtime: AgentRuntime, api: OrchestrationAPI
) -> None:
    """Regression: ``secret: ""`` (say ``${HOOK_SECRET:-}`` with the variable unset) was
    listed as signed, yet anyone could sign a request with the empty key and be accepted.
    A config now refuses it (the next test); the server still answers 503 for one built
    without validation."""
    from pydantic import SecretStr

    from tether import ProcessConfig
    from tether.process._config import WebhookTrigger

    port = free_port()
    trigger = WebhookTrigger.model_construct(
        type="webhook",
        webhook_path="/t",
        webhook_port=port,
        webhook_host="127.0.0.1",
        secret=SecretStr(""),
    )
    config = ProcessConfig(model="scripted", triggers=[trigger])
    process = await runtime.add_process("t", config)
    assert api.webhooks is not None
    await api.webhooks.sync()
    body = b'{"ticket": "forged"}'
    async with httpx.AsyncClient() as client:
        r = await client.post(
            f"http://127.0.0.1:{port}/t",
            content=body,
            headers=webhook_headers("", body),
        )
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "WEBHOOK_MISCONFIGURED"
    assert process.status()["invocation_count"] == 0
    assert process.dead_letters == []


async def test_a_webhook_trigger_with_an_empty_secret_is_refused_at_deploy(
    client: httpx.AsyncClient,
) -> None:
    trigger = {"type": "webhook", "webhook_path": "/t", "webhook_port": free_port(), "secret": ""}
    r = await client.post(
        "/processes", json={"name": "t", "config": {"model": "scripted", "triggers": [trigger]}}
    )
    assert r.status_code == 422, r.text


@pytest.mark.parametrize(
    ("entry", "path"),
    [
        ({"name": "crm", "url": 5}, "config.mcp_servers[0].url"),
        ({"name": "crm", "url": "http://h/mcp", "token": "x"}, "config.mcp_servers[0].token"),
        (
            {"name": "crm", "url": "http://h/mcp", "headers": "Bearer mcp-canary-0451"},
            "config.mcp_servers[0].headers",
        ),
    ],
)
async def test_a_malformed_mcp_server_entry_answers_422_naming_the_field(
    client: httpx.AsyncClient, entry: dict[str, object], path: str
) -> None:
    """Regression: a deployed config's ``mcp_servers`` were kept unchecked (201), though
    PATCH ``add_mcp_servers`` validates each entry; a header's value is never echoed."""
    config = {"model": "scripted", "mcp_servers": [entry]}
    r = await client.post("/processes", json={"name": "t", "config": config})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"][0]["path"] == path
    assert "mcp-canary-0451" not in r.text


async def test_two_mcp_servers_with_one_name_answer_422(client: httpx.AsyncClient) -> None:
    servers = [{"name": "crm", "url": "http://h/a"}, {"name": "crm", "url": "http://h/b"}]
    config = {"model": "scripted", "mcp_servers": servers}
    r = await client.post("/processes", json={"name": "t", "config": config})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"] == (
        "config.mcp_servers[1].name: MCP server name 'crm' is already used by mcp_servers[0]"
    )


async def _raw_get(port: int, headers: list[str]) -> str:
    """The status line of a GET /api/v1/processes sent byte for byte (repeated headers kept)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = "".join(f"{h}\r\n" for h in ["Host: 127.0.0.1", *headers, "Connection: close"])
        writer.write(f"GET /api/v1/processes HTTP/1.1\r\n{head}\r\n".encode("latin-1"))
        await writer.drain()
        return (await reader.readline()).decode("latin-1").strip()
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.parametrize(
    "origins",
    [
        ["Origin: http://evil.example", "Origin: http://localhost"],
        ["Origin: http://localhost", "Origin: http://evil.example"],
    ],
)
async def test_a_foreign_origin_is_refused_whichever_origin_header_it_is(
    api: OrchestrationAPI, origins: list[str]
) -> None:
    """Regression: without a token only the last Origin header was checked, so a foreign
    origin sent before a loopback one was let through."""
    assert await _raw_get(api.port, origins) == "HTTP/1.1 403 Forbidden"
    assert await _raw_get(api.port, ["Origin: http://localhost"]) == "HTTP/1.1 200 OK"
