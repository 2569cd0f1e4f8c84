"""The hooks around one tool call: ``pre_tool_use`` before it, ``post_tool_use`` after it, and
``permission_denied``, which every block of the agent loop and the process goes through.

Each of these events is dispatched here and nowhere else, so a reader (and a test) finds where
it comes from in one place.

A ``pre_tool_use`` hook may rewrite the arguments (``ctx.set("arguments", {...})`` or, for a
command hook, its ``data`` answer): the rewrite is validated against the tool's schema at
once, inside that hook, so an invalid one is that hook's error (recorded in the dispatch
result and the run history) and the arguments stay as they were.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..hooks import DispatchResult, HookContext, HookError, HookEvent
from ._schema import schema_problems
from ._tools import Tool, ToolArgumentsError

__all__ = [
    "Dispatch",
    "InvalidArgumentsRewrite",
    "PreToolUse",
    "ToolCallContext",
    "permission_denied",
    "post_tool_use",
    "pre_tool_use",
]

logger = logging.getLogger("tether.agent")

#: Dispatches a hook event for the agent loop: ``dispatch(event, data, **options)``, the options
#: (such as ``context_factory``) passed on to HookManager.dispatch.
Dispatch = Callable[..., Awaitable[DispatchResult]]

#: The key a pre_tool_use hook sets (to True) to send the call to the approval gate even when
#: the approval policy does not list the tool (a Claude Code hook's "ask").
REQUIRE_APPROVAL = "require_approval"
#: The key a pre_tool_use hook sets to text added to the result the model reads (a Claude
#: Code hook's "additionalContext").
ADDITIONAL_CONTEXT = "additional_context"
#: The key a pre_tool_use hook sets to the reason the approval handler is given with the call
#: (a Claude Code hook's "ask" reason, ApprovalRequest.reason).
APPROVAL_REASON = "approval_reason"
#: The key a tool hook sets to end the run (a Claude Code hook's "continue": false): its value
#: is the reason, for the operator.
STOP_RUN = "stop_run"


class InvalidArgumentsRewrite(HookError):
    """A pre_tool_use hook rewrote a call's arguments into ones the tool's schema refuses."""


class ToolCallContext(HookContext):
    """The context of a ``pre_tool_use`` dispatch: a rewrite of ``arguments`` is checked
    against the tool's schema as it is made, and refused (raised inside the hook) if invalid."""

    __slots__ = ("_tool",)

    def __init__(
        self,
        event: HookEvent | str,
        process_id: str,
        data: dict[str, Any],
        metadata: dict[str, Any],
        *,
        tool: Tool,
    ) -> None:
        super().__init__(event, process_id, data, metadata)
        self._tool = tool

    def set(self, key: str, value: Any) -> None:
        if key == "arguments":
            check_arguments(self._tool, value)
        self.data[key] = value

    def replace(self, data: dict[str, Any]) -> None:
        if (
            isinstance(data, dict)
            and "arguments" in data
            and data["arguments"] != self.data.get("arguments")
        ):
            check_arguments(self._tool, data["arguments"])
        self.data = data


def check_arguments(tool: Tool, value: Any) -> dict[str, Any]:
    """The parsed arguments ``value`` stands for; raise InvalidArgumentsRewrite if the tool's
    schema refuses them (or they are no JSON object)."""
    if not isinstance(value, dict):
        raise InvalidArgumentsRewrite(
            f"arguments of tool {tool.name!r} rewritten to a {type(value).__name__}, not an "
            "object; the original arguments stand"
        )
    try:
        parsed = tool.parse_arguments(value)
        if tool.validator is None:  # a tool described by its JSON schema alone (MCP)
            problems = schema_problems(parsed, tool.parameters)
            if problems:
                raise ToolArgumentsError("; ".join(problems))
    except ToolArgumentsError as exc:
        raise InvalidArgumentsRewrite(
            f"arguments of tool {tool.name!r} rewritten to ones its schema refuses ({exc}); "
            "the original arguments stand"
        ) from None
    return parsed


def permission_denied(
    dispatch: Dispatch,
    kind: str,
    tool_name: str | None,
    reason: str,
    decided_by: str | None,
    *,
    request_id: str | None = None,
    **extra: Any,
) -> Awaitable[DispatchResult]:
    """Dispatch ``permission_denied`` (to await): every block goes through here."""
    data: dict[str, Any] = {
        "kind": kind,
        "tool_name": tool_name,
        "request_id": request_id,
        "reason": reason,
        "decided_by": decided_by,
    }
    data.update(extra)
    return dispatch(HookEvent.PERMISSION_DENIED, data)


def permission_request(
    dispatch: Dispatch, tool_name: str, arguments: dict[str, Any], request_id: str, **extra: Any
) -> Awaitable[DispatchResult]:
    """Dispatch ``permission_request`` (to await): every request for approval goes through
    here (``extra``: a crash's ``reason`` and ``idempotency_key``)."""
    data = {"tool_name": tool_name, "arguments": arguments, "request_id": request_id}
    data.update(extra)
    return dispatch(HookEvent.PERMISSION_REQUEST, data)


@dataclass(slots=True)
class PreToolUse:
    """What the pre_tool_use hooks decided about one call."""

    arguments: dict[str, Any]
    blocked: str | None = None
    decided_by: str | None = None
    require_approval: bool = False
    additional_context: str | None = None
    approval_reason: str | None = None
    #: A hook asked to end the run, for this reason (the operator's to read).
    stop_run: str | None = None


async def pre_tool_use(
    dispatch: Dispatch,
    shown: Callable[[Any], Any],
    tool: Tool,
    arguments: dict[str, Any],
    call_id: str,
    event_id: str | None,
    idempotency_key: str,
) -> PreToolUse:
    """Dispatch ``pre_tool_use`` for a call whose arguments are parsed.

    ``shown`` is what the hooks are shown of the arguments (declared secrets redacted): when
    the data comes back holding that, nothing was rewritten and the original arguments (with
    their secrets) run.
    """

    def context(ev: Any, process_id: str, data: Any, metadata: Any) -> HookContext:
        return ToolCallContext(ev, process_id, data, metadata, tool=tool)

    seen = shown(arguments)
    gate = await dispatch(
        HookEvent.PRE_TOOL_USE,
        {
            "tool_name": tool.name,
            "arguments": seen,
            "call_id": call_id,
            "event_id": event_id,
            "server": tool.server,
            "idempotency_key": idempotency_key,
        },
        context_factory=context,
    )
    stop = _text_at(gate.data, STOP_RUN)
    if gate.blocked:
        reason = gate.reason or "refused by a pre_tool_use hook"
        return PreToolUse(arguments, reason, gate.blocked_by or "hook", stop_run=stop)
    decided = PreToolUse(arguments, stop_run=stop)
    rewritten = gate.data.get("arguments", seen)
    if rewritten != seen:
        try:  # checked by the context already, unless written around it (ctx.data[...] = ...)
            decided.arguments = check_arguments(tool, rewritten)
        except InvalidArgumentsRewrite as exc:
            logger.warning("pre_tool_use of %s: %s", tool.name, exc)
    decided.require_approval = gate.data.get(REQUIRE_APPROVAL) is True
    decided.additional_context = _text_at(gate.data, ADDITIONAL_CONTEXT)
    decided.approval_reason = _text_at(gate.data, APPROVAL_REASON)
    return decided


def _text_at(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


async def post_tool_use(
    dispatch: Dispatch,
    shown: Callable[[Any], Any],
    tool: Tool,
    arguments: dict[str, Any],
    call_id: str,
    event_id: str | None,
    result: str,
    error: str | None,
    duration_ms: float,
    totals: dict[str, Any],
    idempotency_key: str,
) -> tuple[str, str | None]:
    """Dispatch ``post_tool_use`` for a call that ran; return the text the model reads (the
    result, unless a hook replaced it: the hooks see it with declared secrets redacted), and
    the reason a hook asked to end the run with, if one did. ``totals``: the run's and the
    process's usage so far (``run_usage``, ``process_usage``)."""
    seen = shown(result)
    gate = await dispatch(
        HookEvent.POST_TOOL_USE,
        {
            "tool_name": tool.name,
            "arguments": shown(arguments),
            "call_id": call_id,
            "event_id": event_id,
            "server": tool.server,
            "result": seen,
            "error": None if error is None else shown(error),
            "duration_ms": round(duration_ms, 3),
            **totals,
            "idempotency_key": idempotency_key,
        },
    )
    stop = _text_at(gate.data, STOP_RUN)
    changed = gate.data.get("result", seen)
    if changed == seen:
        return result, stop
    if changed is None:
        return "ok", stop
    return (changed if isinstance(changed, str) else _text(changed)), stop


def _text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
