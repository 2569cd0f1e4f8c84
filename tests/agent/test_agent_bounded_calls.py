"""A tool's timeout, and an approval handler's, bound the run even when they ignore the
cancellation that ends them (as a hook's timeout bounds a dispatch)."""

from __future__ import annotations

import asyncio
from typing import Any

from _loop_support import make_loop, stubborn_crm
from tether import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.models import ScriptedModel

STUBBORN_S = 3.0  # what the stubborn callables go on for after their cancellation


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id}


async def test_a_tool_that_swallows_its_timeout_cancellation_is_still_cut_off() -> None:
    went_on: list[str] = []
    model = ScriptedModel(tool_calls=[("crm", {})], reply="done")
    loop = make_loop(model, stubborn_crm(went_on, STUBBORN_S), tool_timeout=0.1)
    result = await loop.run("go")
    assert went_on == ["cancelled"]  # the run did not wait for the tool to carry on
    assert result.reply == "done"
    assert model.requests[1]["messages"][-1]["content"] == "error: tool crm timed out after 0.1s"


async def test_an_approval_handler_that_swallows_its_timeout_cancellation_is_still_cut_off() -> (
    None
):
    went_on: list[str] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            went_on.append("cancelled")
            await asyncio.sleep(STUBBORN_S)  # carries on regardless
            went_on.append("finished")
        return ApprovalDecision(True, "late", None)

    model = ScriptedModel(tool_calls=[("lookup", {"order_id": 7})], reply="done")
    policy = ApprovalPolicy(tools=["lookup"], handler=reviewer, timeout=0.1)
    loop = make_loop(model, lookup, approval=policy)
    await loop.run("go")
    assert went_on == ["cancelled"]  # the run did not wait for the reviewer to carry on
    refusal = model.requests[1]["messages"][-1]["content"]
    assert refusal.startswith("refused: approval handler timed out after 0.")
