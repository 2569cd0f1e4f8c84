"""A chat completion with neither text nor tool calls: a refusal is the answer; an answer cut
off at the token limit before anything is an error, not an empty success."""

from __future__ import annotations

from typing import Any

import pytest

from tether.models import ModelResponseError
from tether.models._openai import parse_chat_completion


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}


def test_a_refusal_is_the_answer() -> None:
    reply = parse_chat_completion(
        completion({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    )
    assert reply.content == "I can't help with that."
    assert reply.tool_calls == []


def test_an_answer_cut_off_before_any_text_is_a_response_error() -> None:
    with pytest.raises(ModelResponseError, match="cut off at the model's token limit"):
        parse_chat_completion(completion({"role": "assistant", "content": None}, "length"))


def test_text_cut_off_at_the_limit_is_kept_and_an_empty_stop_stays_empty() -> None:
    cut = parse_chat_completion(completion({"role": "assistant", "content": "Partial"}, "length"))
    assert cut.content == "Partial"
    empty = parse_chat_completion(completion({"role": "assistant", "content": None}))
    assert empty.content is None
