"""Operator review of the control API: bad requests over real HTTP answer a 4xx JSON error,
never a 500; the token is checked where the API is made."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from tether import AgentRuntime
from tether.api import APIConfigError, OrchestrationAPI

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}
HOOKED: dict[str, Any] = {
    **SCRIPTED,
    "hooks": [{"event": "user_prompt_submit", "command": "true"}],
}
JSON = {"Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


async def deploy(client: httpx.AsyncClient, config: dict[str, Any] | None = None) -> None:
    r = await client.post("/processes", json={"name": "triage", "config": config or SCRIPTED})
    assert r.status_code == 201, r.text


#: (method, path, a valid body of the endpoint with NUMBER where a number may go)
BODIES = [
    ("POST", "/processes", '{"name": "n", "config": {"model": "scripted", "max_turns": NUMBER}}'),
    ("POST", "/processes/triage/inject", '{"payload": {"amount": NUMBER}}'),
    ("POST", "/processes/triage/hooks/dry-run", '{"event": "user_prompt_submit", '
     '"data": {"prompt": "hi", "amount": NUMBER}}'),
    ("PATCH", "/processes/triage/config", '{"budget": {"max_tool_calls_per_run": NUMBER}}'),
    ("POST", "/processes/triage/rewind", '{"messages": NUMBER}'),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body"), BODIES)
@pytest.mark.parametrize("number", ["1e400", "-1e400", "1E999"])
async def test_a_number_too_large_for_a_float_answers_400_never_500(
    client: httpx.AsyncClient, method: str, path: str, body: str, number: str
) -> None:
    """Regression: Python's JSON reader turns 1e400 into Infinity, which a dry run then failed
    to answer (500) and inject refused with a confusing 'not JSON-serialisable'."""
    await deploy(client, HOOKED)
    r = await client.request(method, path, content=body.replace("NUMBER", number), headers=JSON)
    status, code, message = error_of(r)
    assert (status, code) == (400, "INVALID_JSON")
    assert "out of range" in message


async def test_a_webhook_body_with_a_number_too_large_answers_400(runtime: AgentRuntime) -> None:
    """Regression: a webhook body with 1e400 answered 422 INVALID_EVENT 'payload must be
    JSON-serialisable'; like any body that is not JSON it answers 400 INVALID_JSON."""
    from tether.api import WebhookServer

    port = free_port()
    trigger = {"type": "webhook", "webhook_path": "/t", "webhook_port": port}
    await runtime.add_process("hooked", {**SCRIPTED, "triggers": [trigger]})
    server = WebhookServer(runtime)
    await server.start()
    try:
        async with httpx.AsyncClient() as web:
            r = await web.post(f"http://127.0.0.1:{port}/t", content=b'{"amount": 1e400}')
    finally:
        await server.stop()
    assert error_of(r)[:2] == (400, "INVALID_JSON")


@pytest.mark.parametrize(("method", "path", "body"), BODIES)
@pytest.mark.parametrize("depth", [150, 400, 900])
async def test_json_nested_hundreds_of_levels_deep_answers_400_never_500(
    client: httpx.AsyncClient, method: str, path: str, body: str, depth: int
) -> None:
    """Regression: a dry run of data nested 400 levels deep ran out of stack in the hook chain
    (500); a body nested deeper than the API reads answers 400 INVALID_JSON wherever it is."""
    await deploy(client, HOOKED)
    nested = "[" * depth + "1" + "]" * depth
    r = await client.request(method, path, content=body.replace("NUMBER", nested), headers=JSON)
    status, code, message = error_of(r)
    assert (status, code) == (400, "INVALID_JSON")
    assert "nested" in message


async def test_a_dry_run_of_data_nested_as_deep_as_the_api_reads_is_answered(
    client: httpx.AsyncClient,
) -> None:
    from tether.api._http import MAX_JSON_DEPTH

    await deploy(client, {**SCRIPTED, "hooks": [{"event": "user_prompt_submit", "command": "cat"}]})
    depth = MAX_JSON_DEPTH - 2  # the body and "data" are the first two levels
    nested: Any = "deep"
    for _ in range(depth):
        nested = [nested]
    body = {"event": "user_prompt_submit", "data": {"prompt": "hi", "n": nested}}
    assert json.dumps(body).count("[") == depth
    r = await client.post("/processes/triage/hooks/dry-run", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["data"]["n"] == nested


@pytest.mark.parametrize("token", ["tökén-ß", " padded ", "two words", "tab\tinside", "new\nline"])
def test_a_token_no_client_can_send_is_a_configuration_error(
    runtime: AgentRuntime, token: str
) -> None:
    """Regression: a token with a character outside printable ASCII, or a space, was accepted,
    and then no request could ever match it (headers are read as Latin-1 and stripped)."""
    with pytest.raises(APIConfigError, match="printable ASCII") as caught:
        OrchestrationAPI(runtime, port=0, token=token)
    assert token.strip() not in str(caught.value)
