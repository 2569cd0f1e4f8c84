"""AgentLoop: one run, prompt -> model <-> tools -> answer, driven without any process."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _process_support import FailingModel, RawToolCallModel
from tether import ApprovalDecision, ApprovalPolicy, ApprovalRequest, BudgetConfig, HookEvent
from tether._redact import Redactor
from tether.agent import AgentContext, AgentLoop, BudgetTracker, RunError
from tether.hooks import DispatchResult, HookManager
from tether.models import ScriptedModel


class Emitted:
    """The loop's ``emit``: a real HookManager dispatch, with every event kept."""

    def __init__(self) -> None:
        self.hooks = HookManager()
        self.events: list[tuple[HookEvent, dict[str, Any]]] = []

    async def __call__(
        self, event: HookEvent, data: dict[str, Any], **options: Any
    ) -> DispatchResult:
        self.events.append((event, data))
        return await self.hooks.dispatch(event, data, process_id="loop", **options)

    def of(self, event: HookEvent) -> list[dict[str, Any]]:
        return [d for e, d in self.events if e is event]


def make_loop(model: Any, **options: Any) -> tuple[AgentLoop, Emitted]:
    emit = Emitted()
    context = options.pop("context", None) or AgentContext(50)
    loop = AgentLoop(
        model=model,
        instructions=options.pop("instructions", "You triage tickets."),
        context=context,
        emit=emit,
        **options,
    )
    return loop, emit


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def test_a_run_without_tools_answers_in_one_turn() -> None:
    model = ScriptedModel(reply="P2, web team.")
    loop, _ = make_loop(model)
    result = await loop.run("ticket: Login page is down")
    assert (result.reply, result.turns, result.tool_calls) == ("P2, web team.", 1, 0)
    assert model.requests[0]["messages"] == [
        {"role": "system", "content": "You triage tickets."},
        {"role": "user", "content": "ticket: Login page is down"},
    ]
    assert "tools" not in model.requests[0]


async def test_a_run_offers_its_tools_with_their_json_schema() -> None:
    model = ScriptedModel()
    loop, _ = make_loop(model, tools=[])
    loop.add_tool(lookup)
    await loop.run("where is order 7?")
    [spec] = model.requests[0]["tools"]
    assert spec == {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look an order up.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "integer"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    }


async def test_tool_results_are_fed_back_as_json_and_the_run_counts_them() -> None:
    model = ScriptedModel(reply="Both shipped.", tool_calls=[("lookup", {"order_id": 7})] * 2)
    loop, _ = make_loop(model)
    loop.add_tool(lookup)
    result = await loop.run("where are orders 7 and 8?")
    assert (result.turns, result.tool_calls, result.reply) == (3, 2, "Both shipped.")
    last = model.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert last[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"order": 7, "status": "shipped"}',
    }


async def test_the_conversation_keeps_each_exchange_for_the_next_run() -> None:
    model = ScriptedModel(reply="Noted.")
    loop, _ = make_loop(model)
    await loop.run("first")
    await loop.run("second")
    assert [m["content"] for m in model.requests[1]["messages"]] == [
        "You triage tickets.",
        "first",
        "Noted.",
        "second",
    ]


async def test_the_saved_state_is_part_of_the_system_message() -> None:
    model = ScriptedModel()
    context = AgentContext(50, {"priority": "high"})
    loop, _ = make_loop(model, context=context)
    await loop.run("hello")
    assert model.requests[0]["messages"][0]["content"] == (
        'You triage tickets.\n\nYour saved state: {"priority": "high"}'
    )


async def test_a_model_error_fails_the_run_with_run_error() -> None:
    loop, _ = make_loop(FailingModel("the endpoint is down"))
    with pytest.raises(RunError, match="model error: the endpoint is down"):
        await loop.run("hello")


async def test_a_run_that_never_answers_stops_at_max_turns() -> None:
    model = ScriptedModel(tool_calls=[("lookup", {"order_id": i}) for i in range(10)])
    loop, _ = make_loop(model, max_turns=3)
    loop.add_tool(lookup)
    with pytest.raises(RunError, match=r"turn limit \(max_turns=3\)"):
        await loop.run("loop forever")
    assert len(model.requests) == 3


async def test_a_tool_that_takes_too_long_is_reported_as_timed_out() -> None:
    async def slow() -> str:
        """Never finishes."""
        await asyncio.Event().wait()
        return "unreachable"

    model = ScriptedModel(tool_calls=[("slow", {})])
    loop, _ = make_loop(model, tool_timeout=0.01)
    loop.add_tool(slow)
    result = await loop.run("go")
    assert model.requests[-1]["messages"][-1]["content"] == "error: tool slow timed out after 0.01s"
    assert result.tool_calls == 1


async def test_broken_json_arguments_are_reported_and_not_counted() -> None:
    model = RawToolCallModel("lookup", "{order_id: 7")
    loop, _ = make_loop(model)
    loop.add_tool(lookup)
    result = await loop.run("go")
    assert model.requests[-1][-1]["content"].startswith(
        "error: invalid arguments for lookup: arguments are not valid JSON"
    )
    assert result.tool_calls == 0


async def test_an_error_a_tool_raises_is_redacted_before_the_model_sees_it() -> None:
    async def crm() -> str:
        """Query the CRM."""
        raise PermissionError("token tok-7f3a9 expired")

    model = ScriptedModel(tool_calls=[("crm", {})])
    loop, _ = make_loop(model, redactor=Redactor([("crm_token", "tok-7f3a9")]))
    loop.add_tool(crm)
    await loop.run("go")
    assert model.requests[-1]["messages"][-1]["content"] == (
        "error: PermissionError: token [REDACTED:crm_token] expired"
    )


async def test_the_reviewer_sees_redacted_arguments_and_the_tool_gets_the_originals() -> None:
    seen: list[ApprovalRequest] = []
    got: list[str] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(request)
        return ApprovalDecision(approved=True, reviewer_id="alice")

    async def login(password: str) -> str:
        """Log in."""
        got.append(password)
        return "ok"

    model = ScriptedModel(tool_calls=[("login", {"password": "hunter2"})])
    loop, emit = make_loop(
        model,
        approval=ApprovalPolicy(tools=["log*"], handler=reviewer),
        redactor=Redactor([("pw", "hunter2")]),
        process_id="triage",
    )
    loop.add_tool(login)
    await loop.run("go", event_id="evt-1")
    assert seen[0].arguments == {"password": "[REDACTED:pw]"}
    assert (seen[0].process_id, seen[0].event_id) == ("triage", "evt-1")
    assert emit.of(HookEvent.PERMISSION_REQUEST)[0]["arguments"] == {"password": "[REDACTED:pw]"}
    assert got == ["hunter2"]


async def test_a_budget_denial_of_a_tool_call_goes_through_emit() -> None:
    model = ScriptedModel(tool_calls=[("lookup", {"order_id": 1})])
    budget = BudgetTracker(BudgetConfig(max_tool_calls_per_day=0))
    loop, emit = make_loop(model, budget=budget)
    loop.add_tool(lookup)
    result = await loop.run("go")
    [denied] = emit.of(HookEvent.PERMISSION_DENIED)
    assert (denied["limit_name"], denied["limit_value"], denied["current_value"]) == (
        "max_tool_calls_per_day",
        0,
        0,
    )
    assert result.denials == 1


async def test_extra_tools_of_one_run_are_offered_only_to_that_run() -> None:
    from tether.agent import as_tool

    model = ScriptedModel()
    loop, _ = make_loop(model)
    await loop.run("one", extra_tools=[as_tool(lookup)])
    await loop.run("two")
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["lookup"]
    assert "tools" not in model.requests[1]


async def test_remove_tool_takes_it_off_the_offer() -> None:
    loop, _ = make_loop(ScriptedModel())
    loop.add_tool(lookup)
    assert loop.remove_tool("lookup") is True
    assert loop.remove_tool("lookup") is False
    assert loop.tools == {}
