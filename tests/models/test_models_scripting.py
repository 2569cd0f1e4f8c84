"""Review: scripting tool calls in FakeLLM and ScriptedModel, driven through the agent loop."""

from __future__ import annotations

from typing import Any

from _loop_support import make_loop
from tether.models import OpenAIModel, ScriptedModel
from tether.testing import FakeLLM

KEY = "sk-review-0123456789"


def tool_messages(llm: FakeLLM) -> list[str]:
    """The tool results the model was sent, in order, across all requests."""
    seen: list[str] = []
    for body in llm.requests:
        for message in body["messages"]:
            if message.get("role") == "tool" and message["content"] not in seen:
                seen.append(message["content"])
    return seen


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def test_fake_llm_sends_text_arguments_verbatim_so_unparseable_ones_can_be_scripted(
    llm: FakeLLM,
) -> None:
    """Regression: a str of arguments was JSON-encoded again (a JSON string, never broken JSON)."""
    llm.tool_calls = [("lookup", "{order_id: 7")]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY) as model:
        result = await make_loop(model, lookup).run("go")
    call = llm.requests[1]["messages"][-2]["tool_calls"][0]
    assert call["function"]["arguments"] == "{order_id: 7"
    assert tool_messages(llm)[0].startswith(
        "error: invalid arguments for lookup: arguments are not valid JSON"
    )
    assert (result.reply, result.tool_calls) == (llm.reply, 0)


async def test_scripted_model_sends_text_arguments_verbatim() -> None:
    """Regression: as FakeLLM, ScriptedModel JSON-encoded a str of arguments a second time."""
    model = ScriptedModel(tool_calls=[("lookup", "{order_id: 7")])
    result = await make_loop(model, lookup).run("go")
    assert model.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == (
        "{order_id: 7"
    )
    assert model.requests[1]["messages"][-1]["content"].startswith(
        "error: invalid arguments for lookup: arguments are not valid JSON"
    )
    assert result.tool_calls == 0
