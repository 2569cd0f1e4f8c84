"""Review: faults of one agent run (tools, models), over real HTTP where a model is involved."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _loop_support import KEY, make_loop
from tether import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.agent import RunError
from tether.models import ModelError, OpenAIModel, ScriptedModel
from tether.testing import FakeLLM


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def test_a_timeout_error_a_tool_raises_itself_is_not_reported_as_the_tool_timeout() -> None:
    """Regression: a tool's own TimeoutError read "timed out after 120s" at once."""

    async def crm() -> str:
        """Query the CRM."""
        raise TimeoutError("the CRM did not answer")

    model = ScriptedModel(tool_calls=[("crm", {})])
    result = await make_loop(model, crm).run("go")
    assert model.requests[1]["messages"][-1]["content"] == (
        "error: TimeoutError: the CRM did not answer"
    )
    assert result.tool_calls == 1


async def test_a_model_that_answers_no_model_reply_fails_the_run_with_run_error() -> None:
    """Regression: a custom model returning a str crashed the run with AttributeError."""

    class Broken:
        name = "broken"

        async def complete(self, messages: Any, tools: Any = None) -> Any:
            return "P2, web team."

        async def aclose(self) -> None:
            pass

    with pytest.raises(RunError, match="model broken answered a str, not a ModelReply"):
        await make_loop(Broken()).run("go")


async def test_a_model_error_on_the_run_says_what_failed(llm: FakeLLM) -> None:
    llm.errors = [401]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY) as model:
        with pytest.raises(RunError, match="rejected the API key: HTTP 401") as caught:
            await make_loop(model).run("go")
    assert isinstance(caught.value.__cause__, ModelError)
    assert len(llm.requests) == 1  # a rejected key is not retried


async def test_a_timeout_error_an_approval_handler_raises_is_a_failure_not_a_timeout() -> None:
    """Regression: the handler's own TimeoutError read "timed out after 0.0s" (decided_by
    "timeout"), as if the reviewer had been waited for."""

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        raise TimeoutError("the review queue is down")

    model = ScriptedModel(tool_calls=[("lookup", {"order_id": 7})])
    policy = ApprovalPolicy(tools=["lookup"], handler=reviewer)
    await make_loop(model, lookup, approval=policy).run("go")
    assert model.requests[1]["messages"][-1]["content"] == (
        "refused: approval handler failed: TimeoutError('the review queue is down')"
    )


async def test_cancelling_the_run_while_a_tool_runs_still_cancels_it() -> None:
    started = asyncio.Event()

    async def crm() -> str:
        """Query the CRM."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    model = ScriptedModel(tool_calls=[("crm", {})])
    run = asyncio.create_task(make_loop(model, crm).run("go"))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert len(model.requests) == 1  # the model was not asked again
