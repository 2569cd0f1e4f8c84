"""ScriptedModel: the in-process model, with FakeLLM's scripting semantics."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tether.models import Model, ModelReply, ScriptedModel, ToolCall

USER = [{"role": "user", "content": "Login page is down"}]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "update_state", "parameters": {"type": "object"}}}
]


async def test_it_answers_with_the_reply() -> None:
    reply = await ScriptedModel(reply="Done.").complete(USER)
    assert (reply.content, reply.tool_calls) == ("Done.", [])
    assert isinstance(reply, ModelReply)


async def test_it_reports_usage_a_word_a_token_as_fakellm_does() -> None:
    reply = await ScriptedModel(reply="Done, routed.").complete(
        [{"role": "user", "content": "Login page is down"}]
    )
    assert reply.raw == {
        "usage": {
            "prompt_tokens": 4,
            "completion_tokens": 2,
            "total_tokens": 6,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
    }


async def test_the_default_reply_triages_the_ticket() -> None:
    assert (await ScriptedModel().complete(USER)).content == "Ticket triaged."


async def test_calls_are_recorded_as_prompts_and_wire_requests() -> None:
    model = ScriptedModel()
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Triage."}, *USER]
    await model.complete(messages, tools=TOOLS)
    await model.complete([{"role": "user", "content": "second"}])
    assert model.prompts == ["Login page is down", "second"]
    assert model.requests == [
        {"model": "scripted", "messages": messages, "tools": TOOLS},
        {"model": "scripted", "messages": [{"role": "user", "content": "second"}]},
    ]


async def test_a_recorded_request_does_not_change_when_the_caller_appends() -> None:
    model = ScriptedModel()
    messages = list(USER)
    await model.complete(messages)
    messages.append({"role": "assistant", "content": "ok"})
    assert model.requests[0]["messages"] == USER


async def test_the_tool_call_queue_pops_only_when_tools_are_offered() -> None:
    model = ScriptedModel(tool_calls=[("update_state", {"key": "priority", "value": "high"})])
    assert (await model.complete(USER)).content == "Ticket triaged."
    assert (await model.complete(USER, tools=[])).content == "Ticket triaged."
    called = await model.complete(USER, tools=TOOLS)
    assert called.content is None
    assert called.tool_calls == [
        ToolCall(id="call_1", name="update_state", arguments='{"key": "priority", "value": "high"}')
    ]
    assert (await model.complete(USER, tools=TOOLS)).content == "Ticket triaged."


async def test_tool_call_ids_count_up_and_arguments_are_json_text() -> None:
    model = ScriptedModel(tool_calls=[("a", {"n": 1}), ("b", {"n": 2})])
    first = await model.complete(USER, tools=TOOLS)
    second = await model.complete(USER, tools=TOOLS)
    assert [first.tool_calls[0].id, second.tool_calls[0].id] == ["call_1", "call_2"]
    assert json.loads(second.tool_calls[0].arguments) == {"n": 2}


async def test_the_callers_tool_call_list_is_not_consumed() -> None:
    script: list[tuple[str, dict[str, Any]]] = [("a", {})]
    model = ScriptedModel(tool_calls=script)
    await model.complete(USER, tools=TOOLS)
    assert script == [("a", {})]
    assert model.tool_calls == []


async def test_reply_and_queue_are_read_at_call_time() -> None:
    model = ScriptedModel()
    model.reply = "changed"
    assert (await model.complete(USER)).content == "changed"
    model.tool_calls.append(("late", {}))
    assert (await model.complete(USER, tools=TOOLS)).tool_calls[0].name == "late"


def test_without_latency_a_call_never_suspends() -> None:
    coro = ScriptedModel().complete(USER)
    with pytest.raises(StopIteration) as done:
        coro.send(None)
    assert done.value.value.content == "Ticket triaged."


async def test_latency_suspends_the_call() -> None:
    model = ScriptedModel(latency=30)
    call = asyncio.create_task(model.complete(USER))
    await asyncio.sleep(0)
    assert not call.done()
    assert model.prompts == ["Login page is down"]  # recorded before the wait
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


def test_negative_latency_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="latency"):
        ScriptedModel(latency=-1)


async def test_the_prompt_is_the_text_of_the_last_user_message() -> None:
    model = ScriptedModel()
    parts = [{"type": "text", "text": "a "}, {"type": "image_url"}, {"type": "text", "text": "b"}]
    await model.complete([{"role": "user", "content": parts}, {"role": "assistant", "content": ""}])
    await model.complete([{"role": "system", "content": "no user here"}])
    await model.complete([{"role": "user", "content": None}])
    assert model.prompts == ["a b", "", ""]


async def test_it_is_a_model_and_closes_as_one() -> None:
    async with ScriptedModel() as model:
        assert isinstance(model, Model)
        assert model.name == "scripted"
    await model.aclose()
    assert "Ticket triaged." in repr(model)


def test_to_message_gives_the_assistant_message_in_wire_format() -> None:
    text = ModelReply(content="hi", tool_calls=[])
    assert text.to_message() == {"role": "assistant", "content": "hi"}
    call = ModelReply(content=None, tool_calls=[ToolCall(id="c1", name="f", arguments="{}")])
    assert call.to_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
