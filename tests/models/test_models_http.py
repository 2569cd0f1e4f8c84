"""Review: the agent loop against FakeLLM over real HTTP, through OpenAIModel (pinned faults)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _loop_support import KEY, make_loop
from tether.agent import RunError
from tether.models import OpenAIModel
from tether.testing import FakeLLM

#: A bound for a test that must not hang; never a timing assertion.
NO_HANG = 30


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def test_a_500_then_an_answer_is_retried_within_one_run(llm: FakeLLM) -> None:
    llm.errors = [500]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY, max_retries=1) as model:
        result = await make_loop(model).run("Login page is down")
    assert result.reply == llm.reply
    assert llm.prompts == ["Login page is down", "Login page is down"]


@pytest.mark.slow
async def test_an_endpoint_that_never_answers_fails_the_run_after_its_attempts(
    llm: FakeLLM,
) -> None:
    llm.latency = 3600
    model = OpenAIModel("m", base_url=llm.base_url, api_key=KEY, timeout=0.2, max_retries=1)
    async with model, asyncio.timeout(NO_HANG):
        with pytest.raises(RunError, match=r"no answer from .* within 0.2 s after 2 attempts"):
            await make_loop(model).run("go")
    assert len(llm.requests) == 2


async def test_arguments_that_are_not_an_object_go_back_to_the_model(llm: FakeLLM) -> None:
    llm.tool_calls = [("lookup", "[7]")]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY) as model:
        result = await make_loop(model, lookup).run("go")
    assert llm.requests[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "error: invalid arguments for lookup: arguments must be a JSON object",
    }
    assert (result.reply, result.tool_calls) == (llm.reply, 0)


async def test_concurrent_runs_against_one_fake_llm_each_get_an_answer(llm: FakeLLM) -> None:
    llm.latency = 0.05  # the requests overlap
    llm.tool_calls = [("lookup", {"order_id": 1}), ("lookup", {"order_id": 2})]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY) as model:
        runs = [make_loop(model, lookup).run(f"ticket {i}") for i in range(3)]
        results = await asyncio.gather(*runs)
    assert [r.reply for r in results] == [llm.reply] * 3
    assert sum(r.tool_calls for r in results) == 2  # the queue is consumed once per request
    assert sorted(set(llm.prompts)) == ["ticket 0", "ticket 1", "ticket 2"]
    assert len(llm.requests) == 5
