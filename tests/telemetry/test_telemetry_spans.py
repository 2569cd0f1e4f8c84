"""OpenTelemetry spans: task -> run -> model call -> tool call -> hook run, with the GenAI
attributes, parented on the trigger's W3C traceparent (SDK in-memory exporter)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest

from _net_support import free_port
from _process_support import eventually
from _telemetry_support import by_name
from tether import ProcessConfig, TriggerEvent
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookBlocked, HookConfig, HookEvent
from tether.models import OpenAIModel
from tether.telemetry import Telemetry

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tether import AgentRuntime
    from tether.testing import FakeLLM


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    return InMemorySpanExporter()


@pytest.fixture
def telemetry(exporter: InMemorySpanExporter) -> Telemetry:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tether.telemetry import Telemetry

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry.with_provider(provider, metrics=True)


@pytest.fixture
async def observed(telemetry: Telemetry) -> AsyncIterator[AgentRuntime]:
    """A started runtime whose processes report to ``telemetry``."""
    from tether import AgentRuntime, HookManager

    runtime = AgentRuntime(hooks=HookManager(), telemetry=telemetry)
    await runtime.start_all()
    yield runtime
    await runtime.stop_all()


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"


async def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


async def noop(ctx: Any) -> None:
    return None


async def approve(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision(True)


def config(llm: FakeLLM, **extra: Any) -> ProcessConfig:
    model = OpenAIModel("gpt-test", base_url=llm.base_url, api_key="sk-test-0000", timeout=5)
    return ProcessConfig(model=model, tools=[lookup], **extra)


async def finished(exporter: InMemorySpanExporter, name: str, count: int = 1) -> list[Any]:
    await eventually(
        lambda: len(by_name(exporter).get(name, [])) >= count, what=f"{count} {name!r} spans"
    )
    return by_name(exporter)[name]


async def test_a_task_s_spans_nest_task_run_model_call_tool_call_and_hook_runs(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    llm.tool_calls = [("lookup", {"order": "A-1"})]
    approval = ApprovalPolicy(tools=["lookup"], handler=approve)
    process = await observed.add_process("shop", config(llm, approval=approval))
    process.hooks.on(HookEvent.USER_PROMPT_SUBMIT)(noop)
    process.hooks.on(HookEvent.PERMISSION_REQUEST)(noop)
    await process.inject(TriggerEvent("cli", "manual", {"ask": "where is A-1?"}))
    [task] = await finished(exporter, "task shop")
    spans = by_name(exporter)
    [run] = spans["invoke_agent shop"]
    chats = spans["chat openai:gpt-test"]
    [tool] = spans["execute_tool lookup"]
    [prompt_hook] = spans["hook user_prompt_submit"]
    [tool_hook] = spans["hook permission_request"]
    assert run.parent.span_id == task.context.span_id
    assert {chat.parent.span_id for chat in chats} == {run.context.span_id}
    assert tool.parent.span_id == run.context.span_id
    assert prompt_hook.parent.span_id == task.context.span_id
    assert tool_hook.parent.span_id == tool.context.span_id
    assert len({s.context.trace_id for s in exporter.get_finished_spans()}) == 1
    assert task.attributes["tether.outcome"] == "success"
    assert task.attributes["tether.attempt"] == 1


async def test_model_and_tool_spans_carry_the_genai_semantic_convention_attributes(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    llm.tool_calls = [("lookup", {"order": "A-1"})]
    process = await observed.add_process("shop", config(llm))
    await process.inject(TriggerEvent("cli", "manual", {"ask": "where is A-1?"}))
    await finished(exporter, "task shop")
    spans = by_name(exporter)
    chat = spans["chat openai:gpt-test"][0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "openai:gpt-test"
    assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat.attributes["gen_ai.usage.output_tokens"] >= 0
    [tool] = spans["execute_tool lookup"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "lookup"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["tether.outcome"] == "ok"
    [run] = spans["invoke_agent shop"]
    assert run.attributes["gen_ai.agent.name"] == "shop"


async def test_a_hook_run_span_names_the_hook_event_executor_outcome_and_block(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    process = await observed.add_process("shop", config(llm))

    @process.hooks.on(HookEvent.USER_PROMPT_SUBMIT, name="gate")
    async def gate(ctx: Any) -> None:
        raise HookBlocked("no orders today")

    await process.inject(TriggerEvent("cli", "manual", {"ask": "hi"}))
    [task] = await finished(exporter, "task shop")
    [hook] = by_name(exporter)["hook user_prompt_submit"]
    assert hook.attributes["tether.hook.name"] == "gate"
    assert hook.attributes["tether.hook.event"] == "user_prompt_submit"
    assert hook.attributes["tether.hook.executor_kind"] == "callback"
    assert hook.attributes["tether.hook.outcome"] == "blocked"
    assert hook.attributes["tether.hook.blocked"] is True
    assert hook.attributes["tether.hook.duration_ms"] >= 0
    assert hook.end_time >= hook.start_time
    assert task.attributes["tether.outcome"] == "blocked"


@pytest.mark.slow
async def test_a_command_hook_span_says_its_executor_is_a_command(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM, make_script: Any
) -> None:
    script = make_script("import sys; sys.stdin.read()\n")
    hook = HookConfig(event="task_created", command=[script])
    process = await observed.add_process("shop", config(llm, hooks=[hook]))
    await process.inject(TriggerEvent("cli", "manual", {"ask": "hi"}))
    [span] = await finished(exporter, "hook task_created")
    assert span.attributes["tether.hook.executor_kind"] == "command"
    [accept] = by_name(exporter)["accept shop"]
    assert span.parent.span_id == accept.context.span_id


async def test_an_injected_traceparent_becomes_the_parent_of_the_task(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    process = await observed.add_process("shop", config(llm))
    await process.inject(TriggerEvent("cli", "manual", {}, traceparent=TRACEPARENT))
    [task] = await finished(exporter, "task shop")
    [accept] = by_name(exporter)["accept shop"]
    for span in (task, accept):
        assert format(span.context.trace_id, "032x") == TRACE_ID
        assert format(span.parent.span_id, "016x") == PARENT_SPAN


async def test_without_a_traceparent_every_attempt_joins_the_trace_its_acceptance_began(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    llm.errors = [500, 500, 500, 500, 500, 500]  # the first run fails (the SDK retries twice)
    cfg = config(llm, max_retries=1, retry_backoff=0.01)
    cfg.model._max_retries = 0  # type: ignore[attr-defined]
    process = await observed.add_process("shop", cfg)
    await process.inject(TriggerEvent("cli", "manual", {}))
    tasks = await finished(exporter, "task shop", 2)
    [accept] = by_name(exporter)["accept shop"]
    assert {t.context.trace_id for t in tasks} == {accept.context.trace_id}
    assert {t.parent.span_id for t in tasks} == {accept.context.span_id}
    assert [t.attributes["tether.outcome"] for t in tasks] == ["retrying", "failed"]


async def test_the_api_takes_an_injected_event_s_traceparent(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    from tether.api import OrchestrationAPI

    await observed.add_process("shop", config(llm))
    async with (
        OrchestrationAPI(observed, port=0, webhooks=False) as api,
        httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client,
    ):
        r = await client.post("/processes/shop/inject", json={"traceparent": TRACEPARENT})
        assert r.status_code == 202, r.text
        bad = await client.post("/processes/shop/inject", json={"traceparent": "00-nope"})
    [task] = await finished(exporter, "task shop")
    assert format(task.context.trace_id, "032x") == TRACE_ID
    assert bad.status_code == 422
    assert "traceparent" in bad.json()["error"]["message"]


async def test_a_webhook_s_traceparent_header_becomes_the_parent(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    from tether import WebhookTrigger
    from tether.api import WebhookServer

    port = free_port()
    trigger = WebhookTrigger(id="hook", webhook_port=port, webhook_path="/in")
    await observed.add_process("shop", config(llm, triggers=[trigger]))
    webhooks = WebhookServer(observed)
    await webhooks.start()
    try:
        [endpoint] = webhooks.endpoints()
        async with httpx.AsyncClient() as client:
            r = await client.post(endpoint["url"], json={}, headers={"traceparent": TRACEPARENT})
            assert r.status_code == 202, r.text
            ignored = await client.post(endpoint["url"], json={}, headers={"traceparent": "junk"})
            assert ignored.status_code == 202, ignored.text
    finally:
        await webhooks.stop()
    tasks = await finished(exporter, "task shop", 2)
    ids = sorted(format(t.context.trace_id, "032x") == TRACE_ID for t in tasks)
    assert ids == [False, True]  # the junk header was ignored: a trace of its own


async def test_a_bad_traceparent_is_refused_when_the_event_is_built() -> None:
    import pytest

    from tether import InvalidEventError

    with pytest.raises(InvalidEventError, match="traceparent must be a W3C trace context"):
        TriggerEvent("cli", "manual", {}, traceparent="00-" + "0" * 32 + "-00f067aa0ba902b7-01")


async def test_a_traceparent_survives_the_journal_round_trip() -> None:
    event = TriggerEvent("cli", "manual", {}, traceparent=TRACEPARENT)
    assert TriggerEvent.from_dict(event.to_dict()).traceparent == TRACEPARENT
    assert "traceparent" not in TriggerEvent("cli", "manual", {}).to_dict()


async def test_a_chat_span_carries_cached_tokens_and_the_cost_a_model_hook_run_its_span(
    observed: AgentRuntime, exporter: InMemorySpanExporter, llm: FakeLLM
) -> None:
    llm.cached_tokens = 3
    process = await observed.add_process(
        "shop", config(llm, pricing={"gpt-test": {"input": 1.0, "output": 2.0}})
    )
    process.hooks.on(HookEvent.PRE_MODEL_CALL)(noop)
    await process.inject(TriggerEvent("cli", "manual", {"ask": "where is A-1?"}))
    await finished(exporter, "task shop")
    spans = by_name(exporter)
    [chat] = spans["chat openai:gpt-test"]
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 3
    assert chat.attributes["tether.cost"] == pytest.approx(process.status()["usage"]["cost"])
    [hook] = spans["hook pre_model_call"]
    assert hook.attributes["tether.hook.event"] == "pre_model_call"
