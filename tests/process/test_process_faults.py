"""Bad input and faults: payloads, model endpoints, tools, hooks that stop their process."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from _net_support import free_port
from _process_support import GatedModel, RawToolCallModel, Recorder, eventually, ticket
from tether import AgentProcess, InvalidEventError, ProcessConfig, ProcessStateError, TriggerEvent
from tether.hooks import HookContext, HookErrorInfo, HookEvent
from tether.models import ScriptedModel
from tether.testing import FakeLLM

#: The model-endpoint tests' FakeLLM is the one processes with an ``openai:`` model reach.
pytestmark = pytest.mark.llm(openai_env=True)


def tool_messages(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool"]


async def run_to_completion(process: AgentProcess, event: TriggerEvent | None = None) -> Recorder:
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(event or ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    return rec


# -- payloads -------------------------------------------------------------------------------


def test_a_payload_that_is_not_json_serialisable_is_refused_when_the_event_is_built() -> None:
    with pytest.raises(InvalidEventError, match="payload must be JSON-serialisable"):
        TriggerEvent("helpdesk", "webhook", {"when": object()})


def test_a_payload_with_nan_is_refused() -> None:
    with pytest.raises(InvalidEventError, match="payload must be JSON-serialisable"):
        TriggerEvent("helpdesk", "webhook", {"score": math.nan})


def test_an_invalid_event_error_is_both_a_value_error_and_a_type_error() -> None:
    with pytest.raises(ValueError, match="trigger_id"):
        TriggerEvent("", "webhook", {})
    with pytest.raises(TypeError, match="trigger_type"):
        TriggerEvent("helpdesk", None, {})  # type: ignore[arg-type]


async def test_inject_refuses_something_that_is_not_a_trigger_event() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    with pytest.raises(TypeError, match="inject\\(\\) takes a TriggerEvent, got dict"):
        await process.inject({"ticket": "x"})  # type: ignore[arg-type]


async def test_a_payload_that_is_not_an_object_is_rendered_as_text() -> None:
    model = ScriptedModel()
    await run_to_completion(
        AgentProcess("triage", ProcessConfig(model=model)),
        TriggerEvent("helpdesk", "webhook", ["disk full", 3]),
    )
    assert model.prompts[0].startswith('["disk full", 3]')


# -- model endpoints ------------------------------------------------------------------------


def openai_process(**config: Any) -> AgentProcess:
    config.setdefault("model_max_retries", 0)
    config.setdefault("retry_backoff", 0.001)
    return AgentProcess("triage", ProcessConfig(model="openai:gpt-5-mini", **config))


async def test_an_endpoint_answering_500_is_retried_then_dead_lettered(llm: FakeLLM) -> None:
    llm.errors = [500, 500]
    process = openai_process(max_retries=1)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: process.dead_letters, what="the dead letter")
    assert len(llm.requests) == 2
    assert rec.outcomes() == ["retrying", "failed"]
    [dead] = process.dead_letters
    assert (dead["reason"], dead["attempts"]) == ("process failed", 2)
    assert "HTTP 500" in dead["error"]
    assert "not-a-real-key" not in dead["error"]


async def test_an_endpoint_answering_malformed_json_fails_the_attempt_and_the_retry_succeeds(
    llm: FakeLLM,
) -> None:
    llm.malformed = 1
    process = openai_process(max_retries=1)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="the retry")
    first, second = rec.of(HookEvent.TASK_COMPLETED)
    assert first["outcome"] == "retrying"
    assert "not JSON" in first["error"]
    assert (second["outcome"], second["error"]) == ("success", None)


async def test_a_missing_api_key_dead_letters_the_event_at_once_as_a_misconfiguration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: a missing key was retried (max_retries times, with backoff) before the dead
    letter, though every attempt fails the same way."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://models.example.invalid/v1")
    process = openai_process(max_retries=3)
    rec = await run_to_completion(process)
    assert rec.outcomes() == ["failed"]
    [dead] = process.dead_letters
    assert (dead["reason"], dead["attempts"]) == ("model misconfigured", 1)
    assert "OPENAI_API_KEY" in dead["error"]


async def test_an_unreachable_endpoint_is_a_clear_error_on_the_run_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()  # nobody listens there once the probe closed
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
    process = openai_process(max_retries=0, model_timeout=5)
    await run_to_completion(process)
    [dead] = process.dead_letters
    assert f"cannot reach http://127.0.0.1:{port}/v1" in dead["error"]


async def test_a_slow_endpoint_times_out_with_a_clear_error(llm: FakeLLM) -> None:
    llm.latency = 5
    process = openai_process(max_retries=0, model_timeout=0.2)
    await run_to_completion(process)
    [dead] = process.dead_letters
    assert "no answer from" in dead["error"]
    assert "0.2 s" in dead["error"]


# -- tools ----------------------------------------------------------------------------------


async def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id} shipped"


async def test_a_call_to_an_unknown_tool_tells_the_model_which_tools_exist() -> None:
    model = ScriptedModel(tool_calls=[("refund", {"amount": 5})])
    rec = await run_to_completion(
        AgentProcess("triage", ProcessConfig(model=model, tools=[lookup]))
    )
    assert tool_messages(model.requests[-1]["messages"]) == [
        "error: unknown tool 'refund'; available tools: lookup"
    ]
    assert rec.outcomes() == ["success"]


async def test_tool_arguments_that_do_not_parse_are_reported_to_the_model() -> None:
    model = RawToolCallModel("lookup", '{"order_id": 12')
    rec = await run_to_completion(
        AgentProcess("triage", ProcessConfig(model=model, tools=[lookup]))
    )
    [message] = tool_messages(model.requests[-1])
    assert message.startswith("error: invalid arguments for lookup: arguments are not valid JSON")
    assert rec.outcomes() == ["success"]


async def test_tool_arguments_of_the_wrong_type_are_reported_to_the_model() -> None:
    model = ScriptedModel(tool_calls=[("lookup", {"order_id": "twelve"})])
    rec = await run_to_completion(
        AgentProcess("triage", ProcessConfig(model=model, tools=[lookup]))
    )
    [message] = tool_messages(model.requests[-1]["messages"])
    assert message.startswith("error: invalid arguments for lookup: order_id:")
    assert rec.outcomes() == ["success"]


async def test_a_tool_that_raises_reports_the_error_to_the_model_which_goes_on() -> None:
    async def crm(query: str) -> str:
        """Query the CRM."""
        raise ConnectionError("crm unreachable")

    model = ScriptedModel(reply="The CRM is down.", tool_calls=[("crm", {"query": "x"})])
    rec = await run_to_completion(AgentProcess("triage", ProcessConfig(model=model, tools=[crm])))
    assert tool_messages(model.requests[-1]["messages"]) == [
        "error: ConnectionError: crm unreachable"
    ]
    assert rec.outcomes() == ["success"]


async def test_tool_results_are_fed_back_in_order() -> None:
    model = ScriptedModel(tool_calls=[("lookup", {"order_id": 1}), ("lookup", {"order_id": 2})])
    await run_to_completion(AgentProcess("triage", ProcessConfig(model=model, tools=[lookup])))
    assert tool_messages(model.requests[-1]["messages"]) == [
        "order 1 shipped",
        "order 2 shipped",
    ]


async def test_a_run_past_max_turns_fails_with_a_clear_error() -> None:
    model = ScriptedModel(tool_calls=[("lookup", {"order_id": i}) for i in range(5)])
    process = AgentProcess(
        "triage", ProcessConfig(model=model, tools=[lookup], max_turns=2, max_retries=0)
    )
    rec = await run_to_completion(process)
    assert rec.outcomes() == ["failed"]
    assert "turn limit (max_turns=2)" in process.dead_letters[0]["error"]


# -- hooks that stop their own process ------------------------------------------------------


async def test_a_hook_that_schedules_stop_as_a_task_stops_the_process_without_deadlock() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    scheduled: list[asyncio.Task[None]] = []

    async def shut_down(ctx: HookContext) -> None:
        scheduled.append(asyncio.create_task(process.stop()))

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, shut_down)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_END)
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: process.state.value == "stopped", what="the stop")
    await scheduled[0]
    assert rec.events == ["task_completed", "session_end"]
    assert rec.outcomes() == ["success"]


async def test_a_session_start_hook_that_schedules_stop_leaves_the_process_stopped() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    scheduled: list[asyncio.Task[None]] = []

    async def shut_down(ctx: HookContext) -> None:
        scheduled.append(asyncio.create_task(process.stop()))

    process.hooks.register(HookEvent.SESSION_START, shut_down)
    await process.start()
    await scheduled[0]
    assert process.state.value == "stopped"


async def test_a_hook_that_awaits_stop_gets_a_process_state_error_and_no_deadlock() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    errors: list[HookErrorInfo] = []
    process.hooks.on_error(errors.append)

    async def shut_down(ctx: HookContext) -> None:
        await process.stop()

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, shut_down)
    rec = await run_to_completion(process)
    [info] = errors
    assert info.event == "user_prompt_submit"
    assert isinstance(info.error, ProcessStateError)
    assert "asyncio.create_task(process.stop())" in str(info.error)
    assert rec.outcomes() == ["success"]


async def test_a_session_end_hook_that_awaits_stop_does_not_deadlock() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    errors: list[HookErrorInfo] = []
    process.hooks.on_error(errors.append)

    async def again(ctx: HookContext) -> None:
        await process.stop()

    process.hooks.register(HookEvent.SESSION_END, again)
    async with process:
        pass
    assert process.state.value == "stopped"
    assert [type(i.error) for i in errors] == [ProcessStateError]


async def test_a_tool_that_awaits_its_own_process_stop_gets_an_error_not_a_deadlock() -> None:
    holder: list[AgentProcess] = []

    async def halt() -> str:
        """Stop yourself."""
        await holder[0].stop()
        return "stopped"

    model = ScriptedModel(tool_calls=[("halt", {})])
    process = AgentProcess("triage", ProcessConfig(model=model, tools=[halt]))
    holder.append(process)
    await run_to_completion(process)
    [message] = tool_messages(model.requests[-1]["messages"])
    assert message.startswith("error: ProcessStateError: stop() of process 'triage'")


# -- stop() while runs are in flight ---------------------------------------------------------


async def test_stop_waits_for_runs_in_flight_to_finish() -> None:
    model = GatedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, concurrency=2))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    await process.inject(ticket())
    await process.inject(ticket())
    await eventually(lambda: model.active == 2, what="two runs in flight")
    stopping = asyncio.create_task(process.stop())
    await eventually(lambda: process.state.value == "stopping", what="stop() to begin")
    model.gate.set()
    await stopping
    assert rec.outcomes() == ["success", "success"]
    assert process.dead_letters == []


async def test_stop_cancels_runs_still_in_flight_after_stop_timeout_and_dead_letters_them() -> None:
    """Regression: a run cut off by stop() was dead-lettered without its task_completed."""
    model = GatedModel()  # never released
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.05))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    event = ticket()
    await process.inject(event)
    await eventually(lambda: model.active == 1, what="the run in flight")
    await process.stop()
    assert process.state.value == "stopped"
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"], dead["attempts"]) == (
        event.event_id,
        "process stopped",
        1,
    )
    [data] = rec.of(HookEvent.TASK_COMPLETED)
    assert (data["event_id"], data["outcome"], data["error"]) == (
        event.event_id,
        "dead_lettered",
        "process stopped",
    )


async def test_stop_called_twice_concurrently_stops_once() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_END)
    await process.start()
    await asyncio.gather(process.stop(), process.stop())
    assert process.state.value == "stopped"
    assert len(rec.of(HookEvent.SESSION_END)) == 1
