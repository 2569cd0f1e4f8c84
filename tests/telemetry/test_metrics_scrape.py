"""Prometheus metrics at GET /metrics, scraped over real HTTP and read with
prometheus_client's own parser."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from _process_support import eventually
from tether import AgentRuntime, ProcessConfig, TriggerEvent
from tether.api import OrchestrationAPI
from tether.hooks import HookBlocked, HookConfig, HookEvent, HookManager
from tether.models import OpenAIModel
from tether.telemetry import Telemetry

if TYPE_CHECKING:
    from tether.testing import FakeLLM

TOKEN = "scrape-token-123"


async def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


async def noop(ctx: Any) -> None:
    return None


def metrics_only() -> Telemetry:
    from tether.telemetry._metrics import Metrics

    return Telemetry(metrics=Metrics())


@pytest.fixture
async def served() -> AsyncIterator[tuple[AgentRuntime, OrchestrationAPI]]:
    runtime = AgentRuntime(hooks=HookManager(), telemetry=metrics_only())
    async with runtime:
        api = OrchestrationAPI(runtime, port=0, webhooks=False, token=TOKEN)
        async with api:
            yield runtime, api


async def scrape(api: OrchestrationAPI, token: str | None = TOKEN) -> dict[str, list[Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient() as client:
        r = await client.get(f"{api.url}/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def value(samples: dict[str, list[Any]], name: str, **labels: str) -> float:
    found = [s.value for s in samples.get(name, []) if labels.items() <= s.labels.items()]
    return sum(found)


async def test_hook_runs_are_counted_by_event_outcome_and_executor_kind(
    served: tuple[AgentRuntime, OrchestrationAPI], llm: FakeLLM, make_script: Any
) -> None:
    runtime, api = served
    script = make_script("import sys; sys.stdin.read()\n")
    model = OpenAIModel("gpt-test", base_url=llm.base_url, api_key="sk-test-0000", timeout=5)
    cfg = ProcessConfig(
        model=model, hooks=[HookConfig(event="task_created", command=[script])], tools=[lookup]
    )
    process = await runtime.add_process("shop", cfg)
    process.hooks.on(HookEvent.TASK_COMPLETED)(noop)
    llm.tool_calls = [("lookup", {"order": "A-1"})]
    await process.inject(TriggerEvent("cli", "manual", {"ask": "where?"}))
    await eventually(lambda: process.status()["invocation_count"] == 1)
    await eventually(lambda: len(process.hook_runs(event="task_completed")) == 1)
    samples = await scrape(api)
    command = {"event": "task_created", "outcome": "passed", "executor": "command"}
    callback = {"event": "task_completed", "outcome": "passed", "executor": "callback"}
    assert value(samples, "tether_hook_runs_total", process="shop", **command) == 1
    assert value(samples, "tether_hook_runs_total", process="shop", **callback) == 1
    assert value(samples, "tether_hook_duration_seconds_count", event="task_created") == 1
    assert value(samples, "tether_tasks_total", process="shop", outcome="success") == 1
    assert value(samples, "tether_runs_total", process="shop") == 1
    assert value(samples, "tether_model_calls_total", model="openai:gpt-test", outcome="ok") == 2
    assert value(samples, "tether_model_call_duration_seconds_count") == 2
    assert value(samples, "tether_model_tokens_total", type="input") > 0
    assert value(samples, "tether_tool_calls_total", tool="lookup", outcome="ok") == 1


async def test_queue_depth_dead_letters_and_state_are_read_at_each_scrape(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    runtime, api = served
    from tether.models import ScriptedModel

    process = await runtime.add_process("gate", ProcessConfig(model=ScriptedModel()))

    @process.hooks.on(HookEvent.TASK_CREATED)
    async def refuse(ctx: Any) -> None:
        raise HookBlocked("closed")

    await process.inject(TriggerEvent("cli", "manual", {}))
    samples = await scrape(api)
    assert value(samples, "tether_process_up", process="gate", state="running") == 1
    assert value(samples, "tether_queue_depth", process="gate") == 0
    assert value(samples, "tether_dead_letters", process="gate") == 1
    assert (
        value(samples, "tether_dead_letters_total", process="gate", reason="blocked by hook") == 1
    )
    assert value(samples, "tether_restarts_total", process="gate") == 0
    blocked = {"event": "task_created", "outcome": "blocked", "executor": "callback"}
    assert value(samples, "tether_hook_runs_total", **blocked) == 1


async def test_retries_are_counted(
    served: tuple[AgentRuntime, OrchestrationAPI], llm: FakeLLM
) -> None:
    runtime, api = served
    llm.errors = [500, 500]
    model = OpenAIModel("m", base_url=llm.base_url, api_key="sk-test-0000", max_retries=0)
    cfg = ProcessConfig(model=model, max_retries=1, retry_backoff=0.01)
    process = await runtime.add_process("flaky", cfg)
    await process.inject(TriggerEvent("cli", "manual", {}))
    await eventually(lambda: process.status()["dead_letter_count"] == 1)
    samples = await scrape(api)
    assert value(samples, "tether_retries_total", process="flaky") == 1
    assert value(samples, "tether_tasks_total", process="flaky", outcome="failed") == 1
    assert value(samples, "tether_model_calls_total", outcome="error") == 2


async def holds_the_loop(ctx: Any) -> None:
    time.sleep(0.2)  # noqa: ASYNC251 (blocking on purpose)


@pytest.mark.parametrize(
    ("kind", "outcome", "timeout", "warn"),
    [("timed_out", "timed_out", 0.05, None), ("warned", "passed", 10.0, 0.05)],
)
async def test_a_hook_holding_the_event_loop_is_counted_by_kind(
    served: tuple[AgentRuntime, OrchestrationAPI],
    kind: str,
    outcome: str,
    timeout: float,
    warn: float | None,
) -> None:
    runtime, api = served
    from tether.models import ScriptedModel

    process = await runtime.add_process("sleepy", ProcessConfig(model=ScriptedModel()))
    process.hooks.loop_block_warn = warn
    process.hooks.register(HookEvent.TASK_COMPLETED, holds_the_loop, name="holder", timeout=timeout)
    await process.inject(TriggerEvent("cli", "manual", {}))
    await eventually(lambda: len(process.hook_runs(event="task_completed")) == 1)
    samples = await scrape(api)
    counted = {"process": "sleepy", "event": "task_completed"}
    assert value(samples, "tether_hook_loop_blocks_total", **counted, kind=kind) == 1
    assert value(samples, "tether_hook_loop_blocks_total") == 1  # of one kind only
    ran = {"event": "task_completed", "outcome": outcome, "executor": "callback"}
    assert value(samples, "tether_hook_runs_total", process="sleepy", **ran) == 1
    [run] = process.hook_runs(event="task_completed")
    if kind == "timed_out":  # its record says why it timed out
        assert run.error is not None
        assert "blocked the event loop" in run.error


async def test_metrics_need_the_token_like_the_rest_of_the_api(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with httpx.AsyncClient() as client:
        r = await client.get(f"{api.url}/metrics")
    assert r.status_code == 401


async def test_open_metrics_serves_a_local_scraper_without_the_token() -> None:
    runtime = AgentRuntime(telemetry=metrics_only())
    async with OrchestrationAPI(
        runtime, port=0, webhooks=False, token=TOKEN, open_metrics=True
    ) as api:
        samples = await scrape(api, token=None)
        async with httpx.AsyncClient() as client:
            other = await client.get(f"{api.url}/api/v1/processes")
    assert "tether_hook_runs_total" not in samples or samples["tether_hook_runs_total"] == []
    assert other.status_code == 401  # only /metrics is open


async def test_a_runtime_without_metrics_answers_503_naming_the_extra() -> None:
    async with (
        OrchestrationAPI(AgentRuntime(), port=0, webhooks=False) as api,
        httpx.AsyncClient() as client,
    ):
        r = await client.get(f"{api.url}/metrics")
    assert r.status_code == 503
    assert "tether[metrics]" in r.json()["error"]["message"]


def test_label_values_are_bounded_and_the_rest_count_as_other() -> None:
    from tether.telemetry._metrics import Metrics

    metrics = Metrics(max_label_values=2)
    assert [metrics.label("tool", f"t{i}") for i in range(4)] == ["t0", "t1", "other", "other"]
    assert metrics.label("tool", "t1") == "t1"
    assert metrics.label("model", "m") == "m"  # each label has its own budget


def test_the_documented_metrics_are_the_served_ones() -> None:
    """docs/observability.md's table lists every metric of METRIC_NAMES, with its type."""
    from pathlib import Path

    from tether.telemetry._metrics import METRIC_NAMES

    docs = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
    rows = re.findall(r"^\| `(tether_\w+)` \| (\w+) \|", docs.read_text(), re.MULTILINE)
    assert dict(rows) == {name: kind for name, (kind, _) in METRIC_NAMES.items()}


async def test_model_cost_and_cached_tokens_are_counted_by_model(
    served: tuple[AgentRuntime, OrchestrationAPI], llm: FakeLLM
) -> None:
    runtime, api = served
    llm.cached_tokens = 2
    llm.reply = "P2 web team"
    cfg = ProcessConfig(
        model="openai:gpt-test",
        base_url=llm.base_url,
        pricing={"gpt-test": {"input": 2.0, "output": 8.0, "cached": 1.0}},
    )
    process = await runtime.add_process("priced", cfg)
    await process.inject(TriggerEvent("cli", "manual", {"ask": "where?"}))
    await eventually(lambda: process.status()["usage"]["model_calls"] == 1)
    samples = await scrape(api)
    usage = process.status()["usage"]
    assert value(samples, "tether_model_tokens_total", type="cached") == 2
    cost = value(samples, "tether_model_cost_total", model="openai:gpt-test")
    assert cost == pytest.approx(usage["cost"])
