"""What model calls use and cost, and the budgets on it: a real process on FakeLLM, whose
usage counts a word as a token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from _manifest_support import write
from _process_support import Recorder, run_task
from tether import AgentProcess, ProcessConfig, load_manifest
from tether.agent import BudgetConfig, ModelPrice
from tether.hooks import HookEvent
from tether.manifest import spec_to_process_config
from tether.testing import FakeLLM

PRICES = {"gpt-4o": ModelPrice(input=2.5, output=10.0, cached=1.25)}


async def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return "shipped"


def process_on(llm: FakeLLM, **config: Any) -> AgentProcess:
    config.setdefault("pricing", PRICES)
    return AgentProcess(
        "triage",
        ProcessConfig(model="openai:gpt-4o", base_url=llm.base_url, max_retries=0, **config),
    )


def record(process: AgentProcess) -> Recorder:
    return Recorder().attach(
        process.hooks,
        HookEvent.POST_MODEL_CALL,
        HookEvent.POST_TOOL_USE,
        HookEvent.PERMISSION_DENIED,
        HookEvent.TASK_COMPLETED,
    )


async def test_cached_tokens_are_priced_at_the_cached_price(llm: FakeLLM) -> None:
    llm.cached_tokens = 4
    llm.reply = "P2 web"
    process = process_on(llm)
    rec = record(process)
    async with process:
        await run_task(process, rec)
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    tokens = post["usage"]
    assert tokens["cached_tokens"] == 4
    fresh = tokens["input_tokens"] - 4
    assert post["cost"] == pytest.approx((fresh * 2.5 + 4 * 1.25 + 2 * 10.0) / 1e6)


async def test_post_tool_use_carries_the_runs_and_the_processs_running_totals(
    llm: FakeLLM,
) -> None:
    llm.tool_calls = [("lookup_order", {"order_id": "A-1"})]
    process = process_on(llm, tools=[lookup_order])
    rec = record(process)
    async with process:
        await run_task(process, rec)
        await run_task(process, rec)
    first_call = rec.of(HookEvent.POST_MODEL_CALL)[0]
    [tool] = rec.of(HookEvent.POST_TOOL_USE)
    assert tool["run_usage"] == first_call["run_usage"]  # one model call so far
    assert tool["run_usage"]["model_calls"] == 1
    runs = [done["run_usage"] for done in rec.of(HookEvent.TASK_COMPLETED)]
    assert [r["model_calls"] for r in runs] == [2, 1]
    status = process.status()["usage"]
    assert status["model_calls"] == 3
    assert status["total_tokens"] == sum(r["total_tokens"] for r in runs)
    assert status["cost"] == pytest.approx(sum(r["cost"] for r in runs))
    assert status["cost_today"] == pytest.approx(status["cost"])


async def test_max_tokens_per_run_refuses_the_next_model_call_once_reached(
    llm: FakeLLM,
) -> None:
    llm.tool_calls = [("lookup_order", {"order_id": "A-1"})]
    process = process_on(llm, tools=[lookup_order], budget=BudgetConfig(max_tokens_per_run=5))
    rec = record(process)
    async with process:
        event_id = await run_task(process, rec)
    assert len(llm.requests) == 1  # the second turn was refused before it was sent
    used = rec.of(HookEvent.POST_MODEL_CALL)[0]["run_usage"]["total_tokens"]
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["kind"] == "budget"
    assert (denied["limit_name"], denied["limit_value"], denied["current_value"]) == (
        "max_tokens_per_run",
        5,
        used,
    )
    assert denied["event_id"] == event_id
    assert denied["tool_name"] is None
    [done] = rec.of(HookEvent.TASK_COMPLETED)
    assert done["outcome"] == "dead_lettered"
    assert done["error"] == f"budget limit max_tokens_per_run=5 reached (current {used})"
    [letter] = process.dead_letters
    assert letter["reason"] == "budget exceeded"


async def test_max_cost_per_run_refuses_the_call_after_the_one_that_reached_it(
    llm: FakeLLM,
) -> None:
    llm.tool_calls = [("lookup_order", {"order_id": "A-1"})]
    process = process_on(llm, tools=[lookup_order], budget=BudgetConfig(max_cost_per_run=1e-5))
    rec = record(process)
    async with process:
        await run_task(process, rec)
    assert len(llm.requests) == 1
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["cost"] >= 1e-5  # the first call reached the limit
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert (denied["limit_name"], denied["limit_value"]) == ("max_cost_per_run", 1e-5)
    assert denied["current_value"] == pytest.approx(post["cost"])
    assert rec.outcomes() == ["dead_lettered"]


async def test_max_cost_per_day_refuses_the_next_runs_model_call(llm: FakeLLM) -> None:
    process = process_on(llm, budget=BudgetConfig(max_cost_per_day=0.00001))
    rec = record(process)
    async with process:
        await run_task(process, rec)  # this run's call reaches the limit
        await run_task(process, rec)
    assert len(llm.requests) == 1
    assert rec.outcomes() == ["success", "dead_lettered"]
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["limit_name"] == "max_cost_per_day"
    assert denied["current_value"] == pytest.approx(process.status()["usage"]["cost_today"])


async def test_a_budget_not_reached_lets_the_run_finish(llm: FakeLLM) -> None:
    llm.tool_calls = [("lookup_order", {"order_id": "A-1"})]
    process = process_on(
        llm,
        tools=[lookup_order],
        budget=BudgetConfig(max_tokens_per_run=10_000, max_cost_per_run=1.0, max_cost_per_day=5),
    )
    rec = record(process)
    async with process:
        await run_task(process, rec)
    assert rec.outcomes() == ["success"]
    assert rec.of(HookEvent.PERMISSION_DENIED) == []


async def test_a_cost_budget_on_an_unpriced_model_never_refuses(llm: FakeLLM) -> None:
    """Unpriced calls cost None, never a guess: they add nothing a cost budget could reach."""
    process = process_on(llm, pricing={}, budget=BudgetConfig(max_cost_per_run=0.0000001))
    rec = record(process)
    async with process:
        await run_task(process, rec)
        await run_task(process, rec)
    assert rec.outcomes() == ["success", "success"]


def test_a_manifest_declares_pricing_and_the_model_budgets(tmp_path: Path) -> None:
    manifest = load_manifest(
        write(
            tmp_path,
            """\
            version: 1
            name: triage
            model: openai:gpt-4o
            pricing:
              gpt-4o: {input: 2.5, output: 10, cached: 1.25}
              openai:gpt-4o-mini: {input: 0.15, output: 0.6}
            budget:
              max_tokens_per_run: 20000
              max_cost_per_run: 0.05
              max_cost_per_day: 10
            """,
        )
    )
    config = spec_to_process_config(manifest)
    assert config.pricing["gpt-4o"] == ModelPrice(input=2.5, output=10, cached=1.25)
    assert config.pricing["openai:gpt-4o-mini"].cached is None
    assert config.budget is not None
    assert config.budget.max_cost_per_run == 0.05


def test_a_negative_price_is_refused_naming_the_field(tmp_path: Path) -> None:
    from _manifest_support import problems

    found = problems(
        tmp_path,
        """\
        version: 1
        name: triage
        pricing:
          gpt-4o: {input: -1, output: 10}
        """,
    )
    assert len(found) == 1
    assert "pricing.gpt-4o.input" in found[0]
    assert "greater than or equal to 0" in found[0]


async def test_a_scripted_model_reports_usage_as_fakellm_does(llm: FakeLLM) -> None:
    from tether.models import ScriptedModel

    llm.reply = scripted_reply = "P2, web team."
    scripted = ScriptedModel(reply=scripted_reply)
    totals = []
    for model in (scripted, "openai:gpt-4o"):
        process = AgentProcess(
            "triage", ProcessConfig(model=model, base_url=llm.base_url, instructions="Triage.")
        )
        rec = record(process)
        async with process:
            await run_task(process, rec)
        totals.append(process.status()["usage"]["total_tokens"])
    assert totals[0] == totals[1] > 0
