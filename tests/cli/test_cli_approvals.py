"""``tether approvals list / approve / deny`` against a real API: an operator answers from the
shell and the run waiting on the approval goes on."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from _process_support import Recorder, eventually
from tether import AgentRuntime, ApprovalPolicy, HookEvent, ProcessConfig, TriggerEvent
from tether.agent import tool
from tether.api import OrchestrationAPI
from tether.models import ScriptedModel

RAN: list[int] = []


@tool
async def refund(amount: int) -> str:
    """Refund an amount."""
    RAN.append(amount)
    return "refunded"


@pytest.fixture
async def served() -> AsyncIterator[tuple[AgentRuntime, OrchestrationAPI]]:
    RAN.clear()
    runtime = AgentRuntime()
    async with runtime, OrchestrationAPI(runtime, port=0, webhooks=False) as api:
        yield runtime, api


async def waiting(runtime: AgentRuntime, amount: int) -> tuple[Any, Recorder]:
    config = ProcessConfig(
        model=ScriptedModel(reply="ok", tool_calls=[("refund", {"amount": amount})]),
        tools=[refund],
        approval=ApprovalPolicy(tools=["refund"], operator=True),
    )
    process = await runtime.add_process(f"desk{amount}", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.inject(TriggerEvent("desk", "webhook", {"ticket": "refund"}))
    await eventually(lambda: process.pending_approvals, what="the approval request")
    return process, rec


async def test_an_operator_lists_and_approves_a_pending_call_from_the_shell(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    runtime, api = served
    _, rec = await waiting(runtime, 30)
    listed = await cli("approvals", "list", "desk30", "--json", "--url", api.url)
    assert listed.returncode == 0, listed.stderr
    (asked,) = json.loads(listed.stdout)
    assert (asked["tool_name"], asked["arguments"]) == ("refund", {"amount": 30})
    table = await cli("approvals", "list", "desk30", "--url", api.url)
    assert asked["request_id"] in table.stdout
    done = await cli("approvals", "approve", "desk30", asked["request_id"], "--url", api.url)
    assert done.returncode == 0, done.stderr
    assert "approved refund" in done.stdout
    await eventually(lambda: rec.outcomes() == ["success"], what="the run")
    assert RAN == [30]


async def test_a_denial_from_the_shell_refuses_the_call_and_an_unknown_id_exits_1(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    runtime, api = served
    process, rec = await waiting(runtime, 40)
    (asked,) = process.pending_approvals
    denied = await cli(
        "approvals", "deny", "desk40", asked["request_id"], "--reason", "too much", "--url", api.url
    )
    assert denied.returncode == 0, denied.stderr
    await eventually(lambda: rec.outcomes() == ["success"], what="the run")
    assert RAN == []
    unknown = await cli("approvals", "approve", "desk40", "nope", "--url", api.url)
    assert unknown.returncode == 1
    assert "APPROVAL_NOT_FOUND" in unknown.stderr
