"""Parsing chat.completion bodies into ModelReply: what counts as malformed."""

from __future__ import annotations

from typing import Any

import pytest

from tether.models import ModelReply, ModelResponseError, ToolCall
from tether.models._openai import parse_chat_completion


def completion(message: Any) -> dict[str, Any]:
    return {"object": "chat.completion", "choices": [{"index": 0, "message": message}]}


def test_a_text_message_parses() -> None:
    body = completion({"role": "assistant", "content": "hi"})
    assert parse_chat_completion(body) == ModelReply(content="hi", tool_calls=[], raw=body)


def test_tool_calls_keep_their_arguments_text_verbatim() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    reply = parse_chat_completion(completion({"content": None, "tool_calls": [call]}))
    assert reply.tool_calls == [ToolCall(id="c1", name="f", arguments='{"a":1}')]


def test_object_arguments_from_lenient_servers_become_json_text() -> None:
    call = {"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}
    reply = parse_chat_completion(completion({"content": None, "tool_calls": [call]}))
    assert reply.tool_calls[0].arguments == '{"a": 1}'


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ([], "JSON list"),
        ("text", "JSON str"),
        ({}, "without choices"),
        ({"choices": []}, "without choices"),
        ({"choices": ["x"]}, "no message"),
        ({"choices": [{"index": 0}]}, "no message"),
        (completion({"content": 3}), "content is not a string"),
        (completion({"content": None, "tool_calls": {}}), "tool_calls is not a list"),
        (completion({"content": None, "tool_calls": ["x"]}), r"tool_calls\[0\] is not an object"),
        (
            completion({"content": None, "tool_calls": [{"id": "c", "type": "custom"}]}),
            "unsupported type 'custom'",
        ),
        (completion({"content": None, "tool_calls": [{"id": "c"}]}), "lacks an id or a function"),
        (
            completion({"content": None, "tool_calls": [{"id": "c", "function": {"name": 1}}]}),
            "lacks a function name",
        ),
    ],
)
def test_malformed_bodies_raise_response_errors(body: Any, reason: str) -> None:
    with pytest.raises(ModelResponseError, match=reason):
        parse_chat_completion(body)
