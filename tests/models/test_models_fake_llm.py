"""Review: FakeLLM's fault script refuses what it cannot answer with."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tether.testing import FakeLLM


@pytest.mark.parametrize("status", ["500", 99, 199, 1000, 500.0, True])
def test_an_error_that_is_not_an_http_status_is_refused_when_scripted(status: Any) -> None:
    """Regression: the bad entry crashed the request handler when a request came (a traceback
    in the server, and "Server disconnected" or a bare 500 for the client)."""
    llm = FakeLLM(port=0)
    with pytest.raises(ValueError, match=r"FakeLLM.errors holds HTTP statuses \(200-599\)"):
        llm.errors = [503, status]
    assert llm.errors == []


async def test_a_bad_status_appended_later_is_answered_as_a_500_that_says_so() -> None:
    async with FakeLLM(port=0) as llm, httpx.AsyncClient() as client:
        llm.errors.append("503")  # type: ignore[arg-type]
        response = await client.post(
            f"{llm.base_url}/chat/completions", json={"model": "m", "messages": []}
        )
    assert response.status_code == 500
    assert response.json()["error"]["message"] == (
        "FakeLLM.errors holds HTTP statuses (200-599), got '503'"
    )


async def test_scripted_errors_are_a_queue_the_test_may_append_to() -> None:
    async with FakeLLM(port=0) as llm, httpx.AsyncClient() as client:
        llm.errors = [429]
        llm.errors.append(503)
        url = f"{llm.base_url}/chat/completions"
        body = {"model": "m", "messages": []}
        statuses = [(await client.post(url, json=body)).status_code for _ in range(3)]
    assert statuses == [429, 503, 200]


async def test_the_script_can_be_given_at_construction_as_for_scripted_model() -> None:
    """Regression: ScriptedModel(reply, tool_calls, latency) claims FakeLLM's semantics, but
    FakeLLM(tool_calls=...), (latency=...) and (errors=...) raised TypeError."""
    calls: list[tuple[str, Any]] = [("lookup", {"order_id": 7})]
    llm = FakeLLM(port=0, tool_calls=calls, latency=0.01, errors=[503])
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    async with llm, httpx.AsyncClient() as client:
        url = f"{llm.base_url}/chat/completions"
        failed, answered = [await client.post(url, json=body) for _ in range(2)]
    assert failed.status_code == 503
    [call] = answered.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "lookup", "arguments": '{"order_id": 7}'}
    assert llm.latency == 0.01
    assert calls == [("lookup", {"order_id": 7})]  # the caller's list is not consumed


def test_a_negative_latency_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="latency must be >= 0 seconds"):
        FakeLLM(port=0, latency=-1)


async def test_a_start_while_another_is_under_way_is_refused_and_leaves_one_server() -> None:
    """Regression: two concurrent start() calls both served (port 0: on two ports); stop()
    stopped the second, and the first server's task was left listening."""
    llm = FakeLLM(port=0)
    outcomes = await asyncio.gather(llm.start(), llm.start(), return_exceptions=True)
    try:
        [refusal] = [o for o in outcomes if isinstance(o, BaseException)]
        assert isinstance(refusal, RuntimeError)
        assert "FakeLLM is already starting" in str(refusal)
    finally:
        await llm.stop()
    assert [t for t in asyncio.all_tasks() if t.get_name() == "FakeLLM"] == []
