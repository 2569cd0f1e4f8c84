"""What a process's model calls used and cost, as the API and ``tether ps`` show them."""

from __future__ import annotations

from typing import Any

import httpx

from _process_support import eventually
from tether import AgentRuntime, TriggerEvent
from tether.api import OrchestrationAPI
from tether.testing import FakeLLM


async def ran_one_priced_task(runtime: AgentRuntime, llm: FakeLLM) -> None:
    process = await runtime.add_process(
        "triage",
        {
            "model": "openai:gpt-4o",
            "base_url": llm.base_url,
            "pricing": {"gpt-4o": {"input": 2.5, "output": 10}},
        },
    )
    await process.inject(TriggerEvent("cli", "manual", {"ticket": "Login is down"}))
    await eventually(lambda: process.invocation_count == 1 and not process.status()["in_flight"])


async def test_the_api_shows_a_processs_model_usage_and_cost(
    runtime: AgentRuntime, client: httpx.AsyncClient, llm: FakeLLM
) -> None:
    llm.reply = "P2 web team"
    await ran_one_priced_task(runtime, llm)
    [listed] = (await client.get("/processes")).json()["processes"]
    one = (await client.get("/processes/triage")).json()
    prompt_tokens = sum(len(str(m["content"]).split()) for m in llm.requests[0]["messages"])
    for usage in (listed["usage"], one["usage"]):
        assert usage["input_tokens"] == prompt_tokens
        assert usage["output_tokens"] == 3
        assert usage["model_calls"] == 1
        assert usage["cost"] == round((prompt_tokens * 2.5 + 3 * 10) / 1e6, 8)
        assert usage["cost_today"] == usage["cost"]


async def test_ps_shows_the_tokens_and_cost_of_each_process(
    runtime: AgentRuntime, api: OrchestrationAPI, llm: FakeLLM, cli: Any
) -> None:
    llm.reply = "P2 web team"
    await ran_one_priced_task(runtime, llm)
    done = await cli("ps", "--url", api.url)
    header, row = done.stdout.splitlines()[:2]
    cells = row.split()
    process = runtime.get("triage")
    assert process is not None
    usage = process.status()["usage"]
    assert "TOKENS" in header
    assert "COST" in header
    assert str(usage["total_tokens"]) in cells
    assert f"{usage['cost']:.4f}" in cells


async def test_a_cost_budget_patched_through_the_api_refuses_the_next_model_call(
    runtime: AgentRuntime, client: httpx.AsyncClient, llm: FakeLLM
) -> None:
    await ran_one_priced_task(runtime, llm)  # the process has spent something today
    r = await client.patch(
        "/processes/triage/config", json={"budget": {"max_cost_per_day": 0.000001}}
    )
    assert r.status_code == 200
    process = runtime.get("triage")
    assert process is not None
    await process.inject(TriggerEvent("cli", "manual", {"ticket": "Printer jammed"}))
    await eventually(lambda: len(process.dead_letters) == 1)
    [letter] = process.dead_letters
    assert letter["reason"] == "budget exceeded"
    assert letter["error"].startswith("budget limit max_cost_per_day=1e-06 reached")
    assert len(llm.requests) == 1
