"""The model interface: what the agent loop sends (OpenAI chat messages) and gets back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Model",
    "ModelReply",
    "ToolCall",
    "arguments_text",
    "last_user_text",
    "scripted_usage",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the JSON text exactly as sent."""

    id: str
    name: str
    arguments: str

    def to_wire(self) -> dict[str, Any]:
        """This call in the OpenAI ``tool_calls`` wire format."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model turn: text, tool calls, or both; ``raw`` is the decoded response body if any."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    raw: dict[str, Any] | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message to append to the conversation for the next call."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_wire() for call in self.tool_calls]
        return message


@runtime_checkable
class Model(Protocol):
    """A chat model: OpenAI chat-completions messages and tool specs in, one reply out.

    ``messages`` are OpenAI message dicts (roles system, user, assistant, tool; assistant
    messages may carry ``tool_calls``, tool messages carry ``tool_call_id``). ``tools`` are
    OpenAI tool specs (``{"type": "function", "function": {"name", "description",
    "parameters"}}``). ``complete`` raises ``ModelError`` subclasses, nothing else;
    ``aclose`` releases connections and may be called more than once.
    """

    name: str

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ModelReply: ...

    async def aclose(self) -> None: ...


def arguments_text(arguments: Any) -> str:
    """Scripted tool-call arguments as wire text: a ``str`` verbatim (broken JSON stays
    broken, for fault tests), anything else as JSON."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message ("" if there is none); text parts are joined."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(
                    part.get("text", "")
                    for part in content
                    if isinstance(part, dict) and part.get("type") == "text"
                )
            return ""
    return ""


def _words(content: Any) -> int:
    if isinstance(content, str):
        return len(content.split())
    if isinstance(content, list):
        return sum(_words(part.get("text")) for part in content if isinstance(part, dict))
    return 0


def scripted_usage(messages: list[dict[str, Any]], answer: str, cached: int = 0) -> dict[str, Any]:
    """The OpenAI ``usage`` a scripted model reports: a token is a word (of the messages'
    text, of the answer); ``cached`` of the prompt's (at most all) come from a cache."""
    prompt = sum(_words(m.get("content")) for m in messages if isinstance(m, dict))
    completion = _words(answer)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
    }


for _cls in (ToolCall, ModelReply, Model):
    _cls.__module__ = "tether.models"
