"""ScriptedModel: an in-process model with canned answers, for unit tests and benchmarks."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Final

from ._base import ModelReply, ToolCall, arguments_text, last_user_text, scripted_usage

__all__ = ["ScriptedModel"]

#: The name ``resolve_model`` knows this model by.
SCRIPTED: Final = "scripted"


class ScriptedModel:
    """A model that answers from a script, with the same semantics as ``tether.testing.FakeLLM``.

    Every call is recorded: ``prompts`` gets the text of the last user message and
    ``requests`` the request as it would go over the wire (``model``, ``messages`` and, when
    offered, ``tools``). When a call offers tools and the ``tool_calls`` queue is not empty,
    the first entry is popped and answered as one tool call (ids ``call_1``, ``call_2``, ...;
    a ``str`` of arguments is sent verbatim, anything else as JSON text); otherwise the
    answer is ``reply``. Both are read at call time, so tests may change them between calls.
    ``latency`` seconds are awaited before each answer; with 0 the call never suspends, which
    keeps it cheap enough for benchmarks. Each reply's ``raw`` holds the ``usage`` FakeLLM
    would report (a token is a word).
    """

    __slots__ = ("_calls", "latency", "name", "prompts", "reply", "requests", "tool_calls")

    def __init__(
        self,
        reply: str = "Ticket triaged.",
        tool_calls: list[tuple[str, dict[str, Any] | str]] | None = None,
        latency: float = 0.0,
    ) -> None:
        if latency < 0:
            raise ValueError(f"latency must be >= 0 seconds, got {latency!r}")
        self.name: str = SCRIPTED
        self.reply = reply
        # A copy: popping the queue must not empty the caller's list.
        self.tool_calls: list[tuple[str, dict[str, Any] | str]] = list(tool_calls or ())
        self.latency = latency
        self.prompts: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self._calls = 0

    def __repr__(self) -> str:
        return f"ScriptedModel(reply={self.reply!r}, queued_tool_calls={len(self.tool_calls)})"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        params: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Record the call (``params``: more request fields) and answer from the script."""
        # Copies: the caller keeps appending to its conversation after the call.
        request: dict[str, Any] = {"model": self.name, "messages": list(messages)}
        if tools:
            request["tools"] = list(tools)
        if params:
            request.update(params)
        self.requests.append(request)
        self.prompts.append(last_user_text(messages))
        if tools and self.tool_calls:
            name, arguments = self.tool_calls.pop(0)
            self._calls += 1
            text = arguments_text(arguments)
            call = ToolCall(id=f"call_{self._calls}", name=name, arguments=text)
            reply = ModelReply(
                content=None, tool_calls=[call], raw={"usage": scripted_usage(messages, text)}
            )
        else:
            usage = scripted_usage(messages, self.reply)
            reply = ModelReply(content=self.reply, tool_calls=[], raw={"usage": usage})
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        return reply

    async def aclose(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> ScriptedModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


ScriptedModel.__module__ = "tether.models"
