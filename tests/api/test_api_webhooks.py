"""Webhook triggers over real HTTP: routing by port and path, signatures, and bad requests."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _net_support import free_port
from _process_support import eventually
from tether import AgentRuntime, OrchestrationAPI
from tether.api import WebhookServer, sign_webhook, webhook_headers

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


def webhook(path: str, port: int, **extra: Any) -> dict[str, Any]:
    return {"type": "webhook", "webhook_path": path, "webhook_port": port, **extra}


@pytest.fixture
async def webhooks(runtime: AgentRuntime) -> AsyncIterator[WebhookServer]:
    server = WebhookServer(runtime)
    await server.start()
    yield server
    await server.stop()


async def test_a_webhook_request_answers_202_and_the_event_runs(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    process = await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    async with httpx.AsyncClient() as client:
        r = await client.post(f"http://127.0.0.1:{port}/t", json={"ticket": "Login is down"})
    assert r.status_code == 202
    body = r.json()
    assert body["process"] == "triage"
    assert body["trigger_id"] == "webhook-0"
    assert body["status"] == "queued"
    await eventually(lambda: body["event_id"] in process.transcripts)
    assert webhooks.endpoints() == [
        {
            "url": f"http://127.0.0.1:{port}/t",
            "process": "triage",
            "trigger_id": "webhook-0",
            "signed": False,
        }
    ]


async def test_processes_share_a_port_on_different_paths(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    await runtime.add_process("billing", {**SCRIPTED, "triggers": [webhook("/billing", port)]})
    await runtime.add_process("support", {**SCRIPTED, "triggers": [webhook("/support", port)]})
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        billing = await client.post("/billing", json={})
        support = await client.post("/support", json={})
        nothing = await client.post("/other", json={})
    assert billing.json()["process"] == "billing"
    assert support.json()["process"] == "support"
    assert nothing.status_code == 404
    assert nothing.json()["error"]["code"] == "NOT_FOUND"


async def test_a_removed_process_frees_its_port(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    await runtime.remove_process("triage")
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))


async def test_a_path_clash_is_an_error(runtime: AgentRuntime) -> None:
    port = free_port()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    with pytest.raises(ValueError, match=f"path /t on port {port} is already served by a/"):
        await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/t", port)]})


async def test_a_signed_webhook_needs_a_valid_signature(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    trigger = webhook("/t", port, secret="hook-secret")
    process = await runtime.add_process("triage", {**SCRIPTED, "triggers": [trigger]})
    body = json.dumps({"ticket": "Printer jammed"}).encode()
    headers = {"Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        unsigned = await client.post("/t", content=body, headers=headers)
        forged = await client.post(
            "/t",
            content=body,
            headers={**headers, **webhook_headers("other-secret", body)},
        )
        tampered = await client.post(
            "/t",
            content=body + b" ",
            headers={**headers, **webhook_headers("hook-secret", body)},
        )
        signed = await client.post(
            "/t",
            content=body,
            headers={**headers, **webhook_headers("hook-secret", body)},
        )
    assert (unsigned.status_code, unsigned.json()["error"]["code"]) == (401, "SIGNATURE_REQUIRED")
    assert (forged.status_code, forged.json()["error"]["code"]) == (401, "INVALID_SIGNATURE")
    assert tampered.status_code == 401
    assert signed.status_code == 202
    assert process.status()["dead_letter_count"] == 0
    assert sign_webhook("k", b"x", 1).startswith("sha256=")


async def test_bad_webhook_requests_answer_4xx(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        get = await client.get("/t")
        garbage = await client.post("/t", content=b"{nope")
        huge = await client.post("/t", content=b"x" * (2 * 1024 * 1024))
        empty = await client.post("/t")
    assert (get.status_code, get.headers["allow"]) == (405, "POST")
    assert garbage.json()["error"]["code"] == "INVALID_JSON"
    assert huge.status_code == 413
    assert empty.status_code == 400


async def test_a_stopped_process_answers_503(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    port = free_port()
    process = await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    await process.stop()
    async with httpx.AsyncClient() as client:
        r = await client.post(f"http://127.0.0.1:{port}/t", json={})
    assert (r.status_code, r.json()["error"]["code"]) == (503, "PROCESS_NOT_RUNNING")


async def test_a_blocked_event_is_reported_as_dead_lettered(
    runtime: AgentRuntime, webhooks: WebhookServer
) -> None:
    from tether import HookBlocked, HookContext, HookEvent

    async def closed(ctx: HookContext) -> None:
        raise HookBlocked("intake is closed")

    runtime.hooks.register(HookEvent.TASK_CREATED, closed)
    port = free_port()
    await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    async with httpx.AsyncClient() as client:
        r = await client.post(f"http://127.0.0.1:{port}/t", json={})
    assert r.status_code == 202
    assert (r.json()["status"], r.json()["reason"]) == ("dead_lettered", "blocked by hook")


async def test_the_api_serves_webhooks_of_processes_it_deploys(runtime: AgentRuntime) -> None:
    port = free_port()
    api = OrchestrationAPI(runtime, port=0)
    await api.start()
    try:
        async with httpx.AsyncClient() as client:
            created = await client.post(
                f"{api.url}/api/v1/processes",
                json={"name": "triage", "config": {**SCRIPTED, "triggers": [webhook("/t", port)]}},
            )
            assert created.status_code == 201
            r = await client.post(f"http://127.0.0.1:{port}/t", json={"ticket": "hi"})
            added = await client.patch(
                f"{api.url}/api/v1/processes/triage/config",
                json={"add_triggers": [webhook("/more", port, id="more")]},
            )
            more = await client.post(f"http://127.0.0.1:{port}/more", json={})
            clash = await client.patch(
                f"{api.url}/api/v1/processes/triage/config",
                json={"add_triggers": [webhook("/more", port)]},
            )
    finally:
        await api.stop()
    assert r.status_code == 202
    assert added.status_code == 200
    assert more.json()["trigger_id"] == "more"
    assert clash.status_code == 409


async def test_a_webhook_port_that_is_taken_fails_start(runtime: AgentRuntime) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
        server = WebhookServer(runtime)
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            await server.start()
        assert not server.running


async def test_the_apis_body_limit_bounds_its_webhooks_too(runtime: AgentRuntime) -> None:
    """Regression: the API's webhook server kept the default limit, not max_body_bytes."""
    port = free_port()
    await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    async with (
        OrchestrationAPI(runtime, port=0, max_body_bytes=2048),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        fits = await client.post("/t", json={"ticket": "x" * 1000})
        over = await client.post("/t", json={"ticket": "x" * 3000})
    assert fits.status_code == 202
    assert over.status_code == 413


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "http://localhost:3000", "http://127.0.0.1:1"],
)
async def test_an_unsigned_webhook_refuses_a_page_of_another_origin(
    runtime: AgentRuntime, webhooks: WebhookServer, origin: str
) -> None:
    """A browser page (even one on this machine, on another port) cannot sign: refused."""
    port = free_port()
    process = await runtime.add_process("triage", {**SCRIPTED, "triggers": [webhook("/t", port)]})
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            f"http://127.0.0.1:{port}/t", json={"ticket": "x"}, headers={"Origin": origin}
        )
        own = await client.post(
            f"http://127.0.0.1:{port}/t",
            json={"ticket": "y"},
            headers={"Origin": f"http://127.0.0.1:{port}"},
        )
    assert refused.status_code == 403
    assert origin in refused.json()["error"]["message"]
    assert own.status_code == 202
    await eventually(lambda: own.json()["event_id"] in process.transcripts)
    assert len(process.transcripts) == 1
