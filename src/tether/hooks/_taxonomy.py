"""The event taxonomy: each lifecycle event's family, blocking, payload and patch schemas."""

from __future__ import annotations

import copy
from typing import Any, Final

from ._events import BLOCKABLE_EVENTS, HookEvent
from ._matcher import MATCHER_FIELDS

__all__ = ["CHANGES", "FAMILIES", "TAXONOMY", "describe_events"]

_S: Final = {"type": "string"}
_SN: Final = {"type": ["string", "null"]}
_I: Final = {"type": "integer"}
_B: Final = {"type": "boolean"}
_TRIGGER: Final = {"event_id": _S, "trigger_id": _S, "trigger_type": _S}
#: What config_change names in ``change``, as the reference lists them.
CHANGES: Final = (
    "instructions",
    "tool",
    "mcp_server",
    "trigger_added",
    "trigger_removed",
    "budget",
    "health",
    "mission",
    "rollback",
    "rewind",
)


def _obj(
    props: dict[str, Any], *, extra: bool = False, optional: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An object schema: every key of ``props`` required, those of ``optional`` not."""
    return {
        "type": "object",
        "properties": {**props, **(optional or {})},
        "required": sorted(props),
        "additionalProperties": extra,
    }


_NOTHING: Final = {
    "type": "object",
    "properties": {},
    "additionalProperties": True,
    "description": "Changes to this event's data are not used by the process.",
}

#: event -> (family, what a block does (None: not blockable), payload schema, patch schema)
TAXONOMY: Final[dict[HookEvent, tuple[str, str | None, dict[str, Any], dict[str, Any]]]] = {
    HookEvent.SESSION_START: (
        "session",
        None,
        _obj({"restart": _B, "recovered": {"type": ["object", "null"]}}),
        _NOTHING,
    ),
    HookEvent.SESSION_END: (
        "session",
        None,
        _obj({"reason": {"enum": ["stop", "restart"]}, "invocation_count": _I}, extra=True),
        _NOTHING,
    ),
    HookEvent.USER_PROMPT_SUBMIT: (
        "prompt",
        "The run is skipped and the event dead-lettered ('blocked by hook'), "
        "before any budget is counted.",
        _obj({"prompt": _S, **_TRIGGER}),
        {
            "type": "object",
            "properties": {"prompt": _S},
            "additionalProperties": True,
            "description": "A changed prompt replaces the original; nothing else is used.",
        },
    ),
    HookEvent.PERMISSION_REQUEST: (
        "permission",
        "The tool call is denied without asking the approval handler.",
        _obj({"tool_name": _S, "arguments": {"type": "object"}, "request_id": _S}),
        _NOTHING,
    ),
    HookEvent.PERMISSION_DENIED: (
        "permission",
        None,
        _obj(
            {
                "kind": {"enum": ["approval", "budget", "guardrail", "hook"]},
                "tool_name": _SN,
                "request_id": _SN,
                "reason": _S,
                "decided_by": _SN,
            },
            extra=True,
            # Per kind: budget (limit_*, current_value; event_id for a run), guardrail
            # (event_id, trigger_type).
            optional={
                "event_id": _S,
                "trigger_type": _S,
                "limit_name": _S,
                "limit_value": {"type": "number"},
                "current_value": {"type": "number"},
            },
        ),
        _NOTHING,
    ),
    HookEvent.SUBAGENT_START: (
        "subagent",
        "The spawn is refused.",
        _obj({"process_name": _S, "execution_mode": _S, "trigger_count": _I}),
        _NOTHING,
    ),
    HookEvent.SUBAGENT_STOP: ("subagent", None, _obj({"process_name": _S, "state": _S}), _NOTHING),
    HookEvent.PRE_COMPACT: (
        "context",
        None,
        _obj({"buffer_size": _I, "max_messages": _I, "dropping": {"type": "array"}}),
        _NOTHING,
    ),
    HookEvent.POST_COMPACT: ("context", None, _obj({"buffer_size": _I, "dropped": _I}), _NOTHING),
    HookEvent.FILE_CHANGED: (
        "trigger",
        "The event is dropped and counted as filtered.",
        _obj({"path": _S, "event_type": _S, "trigger_id": _S, "event_id": _S}, extra=True),
        _NOTHING,
    ),
    HookEvent.CONFIG_CHANGE: (
        "config",
        "Only for source 'agent': the agent's change is not applied. Operator changes always "
        "apply.",
        _obj(
            {"source": {"enum": ["agent", "operator"]}, "change": {"enum": list(CHANGES)}},
            extra=True,
        ),
        _NOTHING,
    ),
    HookEvent.TASK_CREATED: (
        "task",
        "The event is dead-lettered ('blocked by hook') instead of queued.",
        _obj(dict(_TRIGGER)),
        _NOTHING,
    ),
    HookEvent.TASK_COMPLETED: (
        "task",
        None,
        _obj(
            {
                **_TRIGGER,
                "outcome": {"enum": ["success", "retrying", "failed", "blocked", "dead_lettered"]},
                "duration_ms": {"type": "number"},
                "error": _SN,
            }
        ),
        _NOTHING,
    ),
    HookEvent.PRE_TOOL_USE: (
        "tool",
        "The tool is not run: the model gets a result saying it was refused and why, and "
        "permission_denied fires with kind 'hook'.",
        _obj(
            {
                "tool_name": _S,
                "arguments": {"type": "object"},
                "call_id": _S,
                "event_id": _SN,
                "server": _SN,
            }
        ),
        {
            "type": "object",
            "properties": {
                "arguments": {"type": "object"},
                "require_approval": {"type": "boolean"},
                "additional_context": _S,
            },
            "additionalProperties": True,
            "description": "Changed arguments replace the call's, validated again against the "
            "tool's schema (an invalid rewrite is the hook's error; the original arguments "
            "stand); require_approval true sends the call to the approval gate even when the "
            "policy does not list the tool (denied when no handler is configured); "
            "additional_context is added after the result the model reads.",
        },
    ),
    HookEvent.POST_TOOL_USE: (
        "tool",
        None,
        _obj(
            {
                "tool_name": _S,
                "arguments": {"type": "object"},
                "call_id": _S,
                "event_id": _SN,
                "server": _SN,
                "result": _S,
                "error": _SN,
                "duration_ms": {"type": "number"},
            }
        ),
        {
            "type": "object",
            "properties": {"result": _S},
            "additionalProperties": True,
            "description": "A changed result replaces what the model sees; nothing else is used.",
        },
    ),
}


#: Every event family, in taxonomy order.
FAMILIES: Final = tuple(dict.fromkeys(family for family, *_ in TAXONOMY.values()))


def describe_events(
    blockable: bool | None = None, family: str | None = None
) -> list[dict[str, Any]]:
    """The taxonomy as JSON-ready records (optionally only blockable or non-blockable events,
    only those of one family)."""
    if family is not None and family not in FAMILIES:
        raise ValueError(f"unknown event family {family!r}; families: {', '.join(FAMILIES)}")
    out = []
    # Copies: a caller (an API view) may change what it gets without changing the taxonomy.
    for event, (event_family, block, payload, patch) in copy.deepcopy(TAXONOMY).items():
        is_blockable = event in BLOCKABLE_EVENTS
        if blockable is not None and is_blockable != blockable:
            continue
        if family is not None and event_family != family:
            continue
        out.append(
            {
                "event": event.value,
                "family": event_family,
                "blockable": is_blockable,
                # Every event runs a synchronous chain the caller waits for (async hooks are
                # the opt-in exception), so a sync hook may be declared for each one.
                "sync_eligible": True,
                "block_effect": block,
                "matcher_fields": list(MATCHER_FIELDS[event]),
                "payload_schema": payload,
                "patch_schema": patch,
            }
        )
    return out
