"""The hooks around one model call: ``pre_model_call`` before it, ``post_model_call`` after it.

Each is dispatched here and nowhere else. A ``pre_model_call`` hook may rewrite the request's
``messages``, ``tools``, ``params`` and ``model``, or set ``response`` to answer instead of the
model; a ``post_model_call`` hook may rewrite the ``response``'s text and tool calls. Each
rewrite is checked as it is made (``ctx.set`` or a command hook's ``data`` answer), so an
invalid one is that hook's error (recorded in the dispatch result and the run history) and
what it would have replaced stands; one written around the context (``ctx.data[...] = ...``)
is checked after the dispatch, and dropped with a warning if invalid.

Hooks see the request and the response with declared secrets redacted; a message, text or
tool call that comes back as it was shown goes on with its real values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..hooks import HookContext, HookError, HookEvent
from ..models import ModelReply, ToolCall
from ._tool_hooks import Dispatch

__all__ = [
    "InvalidModelCallRewrite",
    "ModelCallContext",
    "ModelRequest",
    "PreModelCall",
    "post_model_call",
    "pre_model_call",
]

logger = logging.getLogger("tether.agent")

Shown = Callable[[Any], Any]
#: Whether a dispatch of an event would reach a hook.
Listens = Callable[[HookEvent], bool]

ROLES: Final = ("assistant", "developer", "system", "tool", "user")
#: Request keys that are not params: the agent loop sends them itself.
NOT_PARAMS: Final = frozenset({"messages", "model", "stream", "tools"})


class InvalidModelCallRewrite(HookError):
    """A model-call hook rewrote the request or the response into one that is not valid."""


def _invalid(what: str) -> InvalidModelCallRewrite:
    return InvalidModelCallRewrite(f"{what}; the original stands")


# -- checks ------------------------------------------------------------------------------------


def check_messages(value: Any) -> list[dict[str, Any]]:
    """``value`` as chat messages; InvalidModelCallRewrite naming the message and field."""
    if not isinstance(value, list) or not value:
        raise _invalid(
            f"messages rewritten to {type(value).__name__} {value!r:.60}, not a "
            "non-empty list of messages"
        )
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            raise _invalid(f"messages[{i}] is a {type(message).__name__}, not an object")
        role = message.get("role")
        if role not in ROLES:
            raise _invalid(f"messages[{i}].role is {role!r}; allowed: {', '.join(ROLES)}")
        content = message.get("content")
        if not (content is None or isinstance(content, str) or _parts(content)):
            raise _invalid(
                f"messages[{i}].content is a {type(content).__name__}; allowed: a string, "
                "null, or a list of parts with a 'type'"
            )
        if role == "tool" and not isinstance(message.get("tool_call_id"), str):
            raise _invalid(f"messages[{i}] (role tool) has no tool_call_id string")
        if role == "assistant" and "tool_calls" in message:
            _check_wire_calls(message["tool_calls"], f"messages[{i}].tool_calls")
    return value


def _parts(content: Any) -> bool:
    return isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("type"), str) for p in content
    )


def _check_wire_calls(calls: Any, where: str) -> None:
    if not isinstance(calls, list):
        raise _invalid(f"{where} is a {type(calls).__name__}, not a list")
    for j, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if (
            not isinstance(fn, dict)
            or not isinstance(call.get("id"), str)
            or not isinstance(fn.get("name"), str)
            or not isinstance(fn.get("arguments"), str)
        ):
            raise _invalid(
                f"{where}[{j}] is not a tool call (id, function.name and function.arguments "
                "strings)"
            )


def check_tools(value: Any) -> list[dict[str, Any]]:
    """``value`` as tool specs (``{"type": "function", "function": {"name": ...}}``)."""
    if not isinstance(value, list):
        raise _invalid(f"tools rewritten to a {type(value).__name__}, not a list of tool specs")
    for i, spec in enumerate(value):
        fn = spec.get("function") if isinstance(spec, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _invalid(f"tools[{i}] is not a tool spec with function.name")
    return value


def check_params(value: Any, *, takes_params: bool, model: str) -> dict[str, Any]:
    """``value`` as request params: an object of JSON values, none of the agent loop's own keys."""
    if not isinstance(value, dict):
        raise _invalid(f"params rewritten to a {type(value).__name__}, not an object")
    reserved = sorted(NOT_PARAMS & set(value))
    if reserved:
        raise _invalid(
            f"params may not set {', '.join(reserved)} (rewrite that key of the data itself)"
        )
    if value and not takes_params:
        raise _invalid(f"model {model!r} takes no params")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise _invalid(f"params are not JSON ({exc})") from None
    return value


def check_model(value: Any, *, known: Callable[[str], bool], allowed: Callable[[], str]) -> str:
    """``value`` as the name of a model the process knows (see ``known``; ``allowed`` says
    which, for the error)."""
    if not isinstance(value, str) or not value or value != value.strip():
        raise _invalid(f"model rewritten to {value!r}, not a model name")
    if not known(value):
        raise _invalid(f"unknown model {value!r}; allowed: {allowed()}")
    return value


def check_response(value: Any) -> ModelReply:
    """A hook's ``response`` as a ModelReply: a string (the text) or an object with
    ``content`` and/or ``tool_calls`` (each ``name`` and ``arguments``, an object or JSON
    text, and an optional ``id``)."""
    if isinstance(value, str):
        return ModelReply(content=value)
    if not isinstance(value, dict):
        raise _invalid(
            f"response is a {type(value).__name__}; allowed: a string or an object with "
            "content and/or tool_calls"
        )
    content = value.get("content")
    if content is not None and not isinstance(content, str):
        raise _invalid(f"response.content is a {type(content).__name__}, not a string")
    wire = value.get("tool_calls") or []
    if not isinstance(wire, list):
        raise _invalid(f"response.tool_calls is a {type(wire).__name__}, not a list")
    calls = [_tool_call(i, call) for i, call in enumerate(wire)]
    if content is None and not calls:
        raise _invalid("response has neither content nor tool_calls")
    return ModelReply(content=content, tool_calls=calls)


def _tool_call(i: int, call: Any) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    name = call.get("name") if isinstance(call, dict) else None
    if not isinstance(name, str) or not name:
        raise _invalid(f"response.tool_calls[{i}] has no name")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments)
        except (TypeError, ValueError):
            raise _invalid(f"response.tool_calls[{i}].arguments are not JSON") from None
    call_id = call.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else f"hook_{i + 1}", name, arguments
    )


# -- the context ----------------------------------------------------------------------------


class ModelCallContext(HookContext):
    """The context of a model-call dispatch: a rewrite of a key the agent loop reads back is
    checked as it is made, and refused (raised inside the hook) if invalid."""

    __slots__ = ("_checks",)

    def __init__(
        self,
        event: HookEvent | str,
        process_id: str,
        data: dict[str, Any],
        metadata: dict[str, Any],
        *,
        checks: dict[str, Callable[[Any], Any]],
    ) -> None:
        super().__init__(event, process_id, data, metadata)
        self._checks = checks

    def set(self, key: str, value: Any) -> None:
        check = self._checks.get(key)
        if check is not None and value is not None:
            check(value)
        self.data[key] = value

    def replace(self, data: dict[str, Any]) -> None:
        if isinstance(data, dict):
            for key, check in self._checks.items():
                value = data.get(key)
                if value is not None and value != self.data.get(key):
                    check(value)
        self.data = data


def _factory(checks: dict[str, Callable[[Any], Any]]) -> Callable[..., HookContext]:
    def context(ev: Any, process_id: str, data: Any, metadata: Any) -> HookContext:
        return ModelCallContext(ev, process_id, data, metadata, checks=checks)

    return context


def _checked(event: str, key: str, check: Callable[[Any], Any], value: Any) -> Any:
    """``check(value)``, or None (with a warning) when a rewrite written around the context
    is invalid."""
    try:
        return check(value)
    except InvalidModelCallRewrite as exc:
        logger.warning("%s: %s", event, exc)
        return None


# -- pre_model_call ------------------------------------------------------------------------


@dataclass(slots=True)
class ModelRequest:
    """One model call as it will be made: the model's provider and name, and the body."""

    provider: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class PreModelCall:
    """What the pre_model_call hooks decided: the request to send, or an answer instead of
    the model's, or a block (``blocked``: the reason)."""

    request: ModelRequest
    answer: ModelReply | None = None
    blocked: str | None = None
    decided_by: str | None = None


async def pre_model_call(
    dispatch: Dispatch,
    shown: Shown,
    request: ModelRequest,
    *,
    turn: int,
    event_id: str | None,
    usage_so_far: dict[str, Any],
    known: Callable[[str], bool],
    allowed: Callable[[], str],
    takes_params: bool,
    listens: Listens | None = None,
) -> PreModelCall:
    """Dispatch ``pre_model_call`` for ``request``; what to do with the call. Not dispatched
    when ``listens`` says no hook would run (the data copies the whole request)."""
    event = HookEvent.PRE_MODEL_CALL
    if listens is not None and not listens(event):
        return PreModelCall(request)
    seen: dict[str, Any] = {
        "model": request.model,
        "messages": shown(request.messages),
        "tools": shown(request.tools or []),
        "params": shown(request.params),
    }
    checks: dict[str, Callable[[Any], Any]] = {
        "messages": check_messages,
        "tools": check_tools,
        "params": lambda v: check_params(v, takes_params=takes_params, model=request.model),
        "model": lambda v: check_model(v, known=known, allowed=allowed),
        "response": check_response,
    }
    gate = await dispatch(
        event,
        {
            **seen,
            "provider": request.provider,
            "turn": turn,
            "event_id": event_id,
            "usage_so_far": usage_so_far,
        },
        context_factory=_factory(checks),
    )
    if gate.blocked:
        reason = gate.reason or "refused by a pre_model_call hook"
        return PreModelCall(request, blocked=reason, decided_by=gate.blocked_by or "hook")
    data = gate.data
    decided = PreModelCall(request)
    answer = data.get("response")
    if answer is not None:
        decided.answer = _checked("pre_model_call", "response", check_response, answer)
        if decided.answer is not None:
            return decided
    new = replace(request)
    for key, shown_value in seen.items():
        value = data.get(key, shown_value)
        if value == shown_value or _checked("pre_model_call", key, checks[key], value) is None:
            continue  # not changed (what was shown goes with its real values), or invalid
        if key == "messages":
            new.messages = _with_secrets(value, shown_value, request.messages)
        elif key == "tools":
            new.tools = value or None
        elif key == "params":
            new.params = value
        else:
            new.model = value
    decided.request = new
    return decided


def _with_secrets(
    rewritten: list[dict[str, Any]], seen: list[dict[str, Any]], real: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The rewritten messages, each one that is a message as it was shown replaced by the
    real one (its secrets back); the others go as the hook wrote them."""
    if seen is real:  # nothing was redacted
        return rewritten
    originals = {
        json.dumps(s, sort_keys=True, default=str): r for s, r in zip(seen, real, strict=True)
    }
    return [originals.get(json.dumps(m, sort_keys=True, default=str), m) for m in rewritten]


# -- post_model_call -----------------------------------------------------------------------


def response_data(reply: ModelReply) -> dict[str, Any]:
    """A reply as hooks see it: text, tool calls (id, name, arguments text), finish reason."""
    finish = None
    raw = reply.raw
    if isinstance(raw, dict):
        choices = raw.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            finish = choices[0].get("finish_reason")
    if finish is None:
        finish = "tool_calls" if reply.tool_calls else "stop"
    return {
        "content": reply.content,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls
        ],
        "finish_reason": finish,
    }


@dataclass(slots=True)
class PostModelCall:
    """What the post_model_call hooks decided: the reply the agent loop reads, or a block
    (``blocked``: the reason)."""

    reply: ModelReply | None
    blocked: str | None = None
    decided_by: str | None = None


async def post_model_call(
    dispatch: Dispatch,
    shown: Shown,
    reply: ModelReply | None,
    *,
    data: Callable[[], dict[str, Any]],
    listens: Listens | None = None,
) -> PostModelCall:
    """Dispatch ``post_model_call`` with ``data()`` (the call's model, usage, cost, …) and
    the reply (None: the call failed, ``error`` says why); the reply the agent loop reads. Not
    dispatched when ``listens`` says no hook would run."""
    event = HookEvent.POST_MODEL_CALL
    if listens is not None and not listens(event):
        return PostModelCall(reply)
    real = response_data(reply) if reply is not None else None
    seen = shown(real)
    gate = await dispatch(
        event,
        {**data(), "response": seen},
        context_factory=_factory({"response": check_response}),
    )
    if gate.blocked:
        reason = gate.reason or "refused by a post_model_call hook"
        return PostModelCall(reply, reason, gate.blocked_by or "hook")
    changed = gate.data.get("response", seen)
    if reply is None or real is None or changed == seen:
        return PostModelCall(reply)
    new = _checked("post_model_call", "response", check_response, changed)
    if new is None:
        return PostModelCall(reply)
    content = new.content
    if content == seen["content"]:
        content = reply.content  # not changed: its real text
    calls = [_real_call(c, seen["tool_calls"], reply.tool_calls) for c in new.tool_calls]
    return PostModelCall(ModelReply(content=content, tool_calls=calls, raw=reply.raw))


def _real_call(call: ToolCall, seen: list[dict[str, Any]], real: list[ToolCall]) -> ToolCall:
    for shown_call, original in zip(seen, real, strict=True):
        if (call.id, call.name, call.arguments) == (
            shown_call["id"],
            shown_call["name"],
            shown_call["arguments"],
        ):
            return original
    return call
