"""Operator review of the control API: bad requests over real HTTP answer a 4xx JSON error,
never a 500; the token is checked where the API is made."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from _net_support import free_port
from tether import AgentRuntime
from tether.api import APIConfigError, OrchestrationAPI

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}
HOOKED: dict[str, Any] = {
    **SCRIPTED,
    "hooks": [{"event": "user_prompt_submit", "command": "true"}],
}
JSON = {"Content-Type": "application/json"}


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


# -- every endpoint that takes a body --------------------------------------------------------

#: (method, path) of every endpoint that reads a JSON body.
WITH_BODY = [
    ("POST", "/processes"),
    ("POST", "/processes/triage/inject"),
    ("PATCH", "/processes/triage/config"),
    ("POST", "/processes/triage/rewind"),
    ("POST", "/processes/triage/hooks/dry-run"),
    ("POST", "/processes/triage/dead-letters/redeliver"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), WITH_BODY)
@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"42", b"null", b"true"])
async def test_a_body_that_is_not_a_json_object_answers_422(
    client: httpx.AsyncClient, method: str, path: str, body: bytes
) -> None:
    await deploy(client)
    r = await client.request(method, path, content=body, headers=JSON)
    status, code, message = error_of(r)
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith("expected a JSON object, got ")


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path"), WITH_BODY)
@pytest.mark.parametrize("body", [b'{"a": "\xff"}', b"{'a': 1}", b'{"a": 1,}', b'{"a": 1} x'])
async def test_a_body_that_is_not_valid_json_answers_400(
    client: httpx.AsyncClient, method: str, path: str, body: bytes
) -> None:
    await deploy(client)
    r = await client.request(method, path, content=body, headers=JSON)
    assert error_of(r)[:2] == (400, "INVALID_JSON")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        *WITH_BODY[1:],
        ("GET", "/processes/nope/hooks"),
        ("GET", "/processes/nope/hooks/runs"),
        ("POST", "/processes/nope/hooks/hook-1/disable"),
        ("POST", "/processes/nope/hooks/policy/enable"),
        ("GET", "/processes/nope/tasks/abc/artifacts"),
        ("POST", "/processes/nope/stop"),
        ("POST", "/processes/nope/restart"),
        ("DELETE", "/processes/nope/dead-letters"),
    ],
)
async def test_every_endpoint_of_an_unknown_process_answers_404(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await client.request(method, path.replace("triage", "nope"), json={})
    assert error_of(r) == (404, "PROCESS_NOT_FOUND", "no process named 'nope'")


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("last=-1", "last"),
        ("last=1.5", "last"),
        ("last=2147483648", "last"),
        ("since=yesterday", "since"),
        ("since=2025-02-30T00:00:00", "since"),
        ("outcome=ok", "outcome"),
        ("event=task_complete", "event"),
        ("event=ticket.classify", "event"),
        ("limit=5", "limit"),
        ("last=1&last=2", "last"),
    ],
)
async def test_a_bad_runs_query_answers_400_naming_the_parameter(
    client: httpx.AsyncClient, query: str, name: str
) -> None:
    await deploy(client)
    r = await client.get(f"/processes/triage/hooks/runs?{query}")
    status, code, message = error_of(r)
    assert (status, code) == (400, "INVALID_QUERY")
    assert message.startswith(f"{name}: ")
    assert r.json()["error"]["details"] == [
        {"path": f"query.{name}", "message": message[len(name) + 2 :]}
    ]


async def test_every_error_answer_is_json_with_a_code_and_a_message(
    client: httpx.AsyncClient,
) -> None:
    await deploy(client)
    answers = [
        await client.get("/nowhere"),
        await client.delete("/processes"),
        await client.post("/processes", content=b"{}", headers={"Content-Type": "text/yaml"}),
        await client.post("/processes", content=b"x" * (2 * 1024 * 1024), headers=JSON),
        await client.post("/processes", json={"name": "triage", "config": SCRIPTED}),
        await client.post("/processes", json={"name": "../triage", "config": SCRIPTED}),
    ]
    assert [r.status_code for r in answers] == [404, 405, 415, 413, 409, 422]
    for r in answers:
        assert r.headers["content-type"] == "application/json"
        error = r.json()["error"]
        assert isinstance(error["code"], str)
        assert error["code"].isupper()
        assert isinstance(error["message"], str)
        assert error["message"]
