"""The event table: every lifecycle event declared once, as an :class:`EventSpec`.

An event's spec says whether a hook may refuse it and what a refusal does, the keys of its
payload (as a JSON Schema), what the process reads back from a hook's changes, the data fields
a matcher may look at, its family, a sample payload and the keys a live view shows. The other
tables (BLOCKABLE_EVENTS, the matcher fields, the taxonomy, the CLI samples and live columns)
are derived from this one: adding an event is one ``HookEvent`` member and one spec here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final

__all__ = ["BLOCKABLE_EVENTS", "CHANGES", "EVENTS", "EventSpec", "HookEvent", "parse_event"]


class HookEvent(StrEnum):
    """A moment in an agent process's life that hooks can observe (values are lowercase)."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    USER_PROMPT_SUBMIT = "user_prompt_submit"
    PERMISSION_REQUEST = "permission_request"
    PERMISSION_DENIED = "permission_denied"
    SUBAGENT_START = "subagent_start"
    SUBAGENT_STOP = "subagent_stop"
    PRE_COMPACT = "pre_compact"
    POST_COMPACT = "post_compact"
    FILE_CHANGED = "file_changed"
    CONFIG_CHANGE = "config_change"
    TASK_CREATED = "task_created"
    TASK_COMPLETED = "task_completed"
    PRE_TOOL_USE = "pre_tool_use"
    POST_TOOL_USE = "post_tool_use"
    PRE_MODEL_CALL = "pre_model_call"
    POST_MODEL_CALL = "post_model_call"
    AGENT_STOP = "agent_stop"


HookEvent.__module__ = "tether"


#: The patch schema of an event whose changes the process does not read back.
_NOTHING: Final = {
    "type": "object",
    "properties": {},
    "additionalProperties": True,
    "description": "Changes to this event's data are not used by the process.",
}


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One lifecycle event, declared once.

    ``block`` says what a refusal does (None: the event cannot be refused); ``payload`` and
    ``patch`` are JSON Schemas of the data hooks get and of what the process reads back;
    ``matchable`` the data fields a matcher may test; ``shown`` the keys a live view prints.
    """

    event: HookEvent
    family: str
    block: str | None
    payload: dict[str, Any]
    sample: dict[str, Any]
    matchable: tuple[str, ...] = ()
    patch: dict[str, Any] = field(default_factory=lambda: dict(_NOTHING))
    shown: tuple[str, ...] = ()

    @property
    def blockable(self) -> bool:
        return self.block is not None


_S: Final = {"type": "string"}
_SN: Final = {"type": ["string", "null"]}
_I: Final = {"type": "integer"}
_B: Final = {"type": "boolean"}
_OBJECT: Final = {"type": "object"}
_TRIGGER: Final = {"event_id": _S, "trigger_id": _S, "trigger_type": _S}
_MATCH_TRIGGER: Final = ("trigger_type", "trigger_id")
_MATCH_TOOL: Final = ("tool_name", "server")
_MATCH_MODEL: Final = ("model", "provider")
_NUMBER: Final = {"type": "number"}
#: Running totals of model calls (a run's, a process's): see agent._usage.Usage.
_USAGE: Final = {
    "type": "object",
    "properties": {
        "input_tokens": _I,
        "output_tokens": _I,
        "cached_tokens": _I,
        "total_tokens": _I,
        "cost": _NUMBER,
        "model_calls": _I,
        "unpriced_calls": _I,
    },
    "additionalProperties": True,
}
_USAGE_OR_NULL: Final = {**_USAGE, "type": ["object", "null"]}
_USAGE_SAMPLE: Final = {
    "input_tokens": 1840,
    "output_tokens": 212,
    "cached_tokens": 0,
    "total_tokens": 2052,
    "cost": 0.00059,
    "model_calls": 3,
    "unpriced_calls": 0,
}
_TOTALS: Final = {"run_usage": _USAGE_OR_NULL, "process_usage": _USAGE_OR_NULL}
_TOTALS_SAMPLE: Final = {"run_usage": _USAGE_SAMPLE, "process_usage": _USAGE_SAMPLE}
_RESPONSE: Final = {
    "type": ["object", "null"],
    "properties": {
        "content": _SN,
        "tool_calls": {"type": "array", "items": _OBJECT},
        "finish_reason": _SN,
    },
    "additionalProperties": True,
}
_MESSAGES_SAMPLE: Final = [
    {"role": "system", "content": "You triage support tickets."},
    {"role": "user", "content": "ticket: Login page is down"},
]
_EVENT_ID: Final = "0f6c1a2b3c4d4e5f8a9b0c1d2e3f4a5b"
_REQUEST_ID: Final = "5d41402abc4b2a76b9719d911017c592"
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


def _patch(key: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    """A patch schema: the one key the process reads back from a hook's changes."""
    return {
        "type": "object",
        "properties": {key: schema},
        "additionalProperties": True,
        "description": description,
    }


_TOOL_CALL: Final = {
    "tool_name": _S,
    "arguments": _OBJECT,
    "call_id": _S,
    "event_id": _SN,
    "server": _SN,
    # The same on every attempt of the call, before and after a crash (see current_tool_call).
    "idempotency_key": _S,
}
_TOOL_SAMPLE: Final = {
    "tool_name": "lookup_order",
    "arguments": {"order_id": "A-1182"},
    "call_id": "call_7f3a",
    "event_id": _EVENT_ID,
    "server": None,
    "idempotency_key": "9b2f6c1e0a7d4e3b8c5a2f1e0d9c8b7a",
}
_TRIGGER_SAMPLE: Final = {
    "event_id": _EVENT_ID,
    "trigger_id": "helpdesk",
    "trigger_type": "webhook",
}

_SPECS: Final = (
    EventSpec(
        HookEvent.SESSION_START,
        "session",
        None,
        _obj({"restart": _B, "recovered": {"type": ["object", "null"]}}),
        {"restart": False, "recovered": None},
        patch=_patch(
            "additional_context",
            _S,
            "Text added after the instructions the model reads, for every run of the session.",
        ),
        shown=("restart", "recovered"),
    ),
    EventSpec(
        HookEvent.SESSION_END,
        "session",
        None,
        _obj(
            {
                "reason": {"enum": ["stop", "restart"]},
                "invocation_count": _I,
                "process_usage": _USAGE_OR_NULL,
            },
            extra=True,
        ),
        {"reason": "stop", "invocation_count": 3, "process_usage": _USAGE_SAMPLE},
        shown=("reason", "invocation_count", "error"),
    ),
    EventSpec(
        HookEvent.USER_PROMPT_SUBMIT,
        "prompt",
        "The run is skipped and the event dead-lettered ('blocked by hook'), "
        "before any budget is counted.",
        _obj({"prompt": _S, **_TRIGGER}),
        {
            "prompt": (
                "ticket: Login page is down\n\n"
                f"(event {_EVENT_ID} from trigger 'helpdesk', type webhook)"
            ),
            **_TRIGGER_SAMPLE,
        },
        matchable=_MATCH_TRIGGER,
        patch=_patch("prompt", _S, "A changed prompt replaces the original; nothing else is used."),
        shown=("trigger_type", "prompt"),
    ),
    EventSpec(
        HookEvent.PERMISSION_REQUEST,
        "permission",
        "The tool call is denied without asking the approval handler.",
        _obj(
            {"tool_name": _S, "arguments": _OBJECT, "request_id": _S},
            # A call cut off by a crash: reason "outcome unknown after a crash", and its key.
            optional={"reason": _S, "idempotency_key": _S},
        ),
        {
            "tool_name": "update_state",
            "arguments": {"key": "priority", "value": "high"},
            "request_id": _REQUEST_ID,
        },
        matchable=("tool_name",),
        patch={
            "type": "object",
            "properties": {"approved": _B, "updated_arguments": _OBJECT},
            "additionalProperties": True,
            "description": "approved true approves the call without asking the approval "
            "handler, with updated_arguments (validated against the tool's schema, else the "
            "original arguments stand) when given; nothing else is used.",
        },
        shown=("tool_name", "arguments"),
    ),
    EventSpec(
        HookEvent.PERMISSION_DENIED,
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
        {
            "kind": "approval",
            "tool_name": "update_state",
            "request_id": _REQUEST_ID,
            "reason": "refund limits are set by finance, not by the agent",
            "decided_by": "hook",
        },
        matchable=("tool_name", "kind", "trigger_type"),
        shown=("kind", "tool_name", "decided_by", "reason"),
    ),
    EventSpec(
        HookEvent.SUBAGENT_START,
        "subagent",
        "The spawn is refused.",
        _obj({"process_name": _S, "execution_mode": _S, "trigger_count": _I}),
        {"process_name": "triage-helper", "execution_mode": "strict", "trigger_count": 0},
        shown=("process_name", "execution_mode"),
    ),
    EventSpec(
        HookEvent.SUBAGENT_STOP,
        "subagent",
        None,
        _obj({"process_name": _S, "state": _S}),
        {"process_name": "triage-helper", "state": "stopped"},
        shown=("process_name", "state"),
    ),
    EventSpec(
        HookEvent.PRE_COMPACT,
        "context",
        None,
        _obj({"buffer_size": _I, "max_messages": _I, "dropping": {"type": "array"}}),
        {
            "buffer_size": 51,
            "max_messages": 50,
            "dropping": [{"role": "user", "content": "ticket: Printer on floor 3 is jammed"}],
        },
        shown=("buffer_size", "max_messages"),
    ),
    EventSpec(
        HookEvent.POST_COMPACT,
        "context",
        None,
        _obj({"buffer_size": _I, "dropped": _I}),
        {"buffer_size": 50, "dropped": 1},
        shown=("buffer_size", "dropped"),
    ),
    EventSpec(
        HookEvent.FILE_CHANGED,
        "trigger",
        "The event is dropped and counted as filtered.",
        _obj({"path": _S, "event_type": _S, "trigger_id": _S, "event_id": _S}, extra=True),
        {
            "path": "/srv/inbox/ticket-1182.txt",
            "event_type": "added",
            "trigger_id": "inbox",
            "event_id": _EVENT_ID,
        },
        matchable=("path", "trigger_id"),
        shown=("path", "event_type", "trigger_id"),
    ),
    EventSpec(
        HookEvent.CONFIG_CHANGE,
        "config",
        "Only for source 'agent': the agent's change is not applied. Operator changes always "
        "apply.",
        _obj(
            {"source": {"enum": ["agent", "operator"]}, "change": {"enum": list(CHANGES)}},
            extra=True,
        ),
        {
            "source": "operator",
            "change": "instructions",
            "instructions": "You triage support tickets. Answer in one sentence.",
        },
        shown=("source", "change"),
    ),
    EventSpec(
        HookEvent.TASK_CREATED,
        "task",
        "The event is dead-lettered ('blocked by hook') instead of queued.",
        _obj(dict(_TRIGGER)),
        dict(_TRIGGER_SAMPLE),
        matchable=_MATCH_TRIGGER,
        shown=("event_id", "trigger_id", "trigger_type"),
    ),
    EventSpec(
        HookEvent.TASK_COMPLETED,
        "task",
        None,
        _obj(
            {
                **_TRIGGER,
                "outcome": {"enum": ["success", "retrying", "failed", "blocked", "dead_lettered"]},
                "duration_ms": {"type": "number"},
                "error": _SN,
                **_TOTALS,
            }
        ),
        {
            **_TRIGGER_SAMPLE,
            "outcome": "success",
            "duration_ms": 412.5,
            "error": None,
            **_TOTALS_SAMPLE,
        },
        matchable=_MATCH_TRIGGER,
        shown=("event_id", "outcome", "duration_ms", "error"),
    ),
    EventSpec(
        HookEvent.PRE_TOOL_USE,
        "tool",
        "The tool is not run: the model gets a result saying it was refused and why, and "
        "permission_denied is dispatched with kind 'hook'.",
        _obj(dict(_TOOL_CALL)),
        dict(_TOOL_SAMPLE),
        matchable=_MATCH_TOOL,
        patch={
            "type": "object",
            "properties": {
                "arguments": _OBJECT,
                "require_approval": {"type": "boolean"},
                "additional_context": _S,
                "approval_reason": _S,
                "stop_run": _S,
            },
            "additionalProperties": True,
            "description": "Changed arguments replace the call's, validated again against the "
            "tool's schema (an invalid rewrite is the hook's error; the original arguments "
            "stand); require_approval true sends the call to the approval gate even when the "
            "policy does not list the tool (denied when no handler is configured), with "
            "approval_reason for the handler; additional_context is added after the result "
            "the model reads; stop_run ends the run after this call (its reason is logged).",
        },
        shown=("tool_name", "server", "arguments"),
    ),
    EventSpec(
        HookEvent.POST_TOOL_USE,
        "tool",
        None,
        _obj(
            {
                **_TOOL_CALL,
                "result": _S,
                "error": _SN,
                "duration_ms": {"type": "number"},
                **_TOTALS,
            }
        ),
        {
            **_TOOL_SAMPLE,
            "result": '{"status": "shipped"}',
            "error": None,
            "duration_ms": 3.2,
            **_TOTALS_SAMPLE,
        },
        matchable=_MATCH_TOOL,
        patch={
            "type": "object",
            "properties": {"result": _S, "stop_run": _S},
            "additionalProperties": True,
            "description": "A changed result replaces what the model sees; stop_run ends the "
            "run after this call (its reason is logged); nothing else is used.",
        },
        shown=("tool_name", "server", "duration_ms", "error"),
    ),
    EventSpec(
        HookEvent.PRE_MODEL_CALL,
        "model",
        "The model is not called and the run fails with the hook's reason (the event is "
        "dead-lettered, 'blocked by hook', as for a blocked prompt).",
        _obj(
            {
                "model": _S,
                "provider": _S,
                "messages": {"type": "array", "items": _OBJECT},
                "tools": {"type": "array", "items": _OBJECT},
                "params": _OBJECT,
                "turn": _I,
                "event_id": _SN,
                "usage_so_far": _USAGE,
            }
        ),
        {
            "model": "gpt-4o-mini",
            "provider": "openai",
            "messages": _MESSAGES_SAMPLE,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "lookup_order",
                        "description": "Look an order up.",
                        "parameters": {
                            "type": "object",
                            "properties": {"order_id": {"type": "string"}},
                            "required": ["order_id"],
                        },
                    },
                }
            ],
            "params": {},
            "turn": 1,
            "event_id": _EVENT_ID,
            "usage_so_far": {
                "input_tokens": 1210,
                "output_tokens": 31,
                "cached_tokens": 0,
                "total_tokens": 1241,
                "cost": 0.0002,
                "model_calls": 1,
                "unpriced_calls": 0,
            },
        },
        matchable=_MATCH_MODEL,
        patch={
            "type": "object",
            "properties": {
                "messages": {"type": "array", "items": _OBJECT},
                "tools": {"type": "array", "items": _OBJECT},
                "params": _OBJECT,
                "model": _S,
                "response": {"type": ["string", "object"]},
            },
            "additionalProperties": True,
            "description": "Rewritten messages, tools, params (temperature, max_tokens, ...) "
            "and model are sent instead, each checked as it is made (a malformed message or "
            "a model neither the run's nor named in the pricing is the hook's error; the "
            "original stands); a response (text, or content and tool_calls) answers instead "
            "of the model, which is not called.",
        },
        shown=("model", "turn"),
    ),
    EventSpec(
        HookEvent.POST_MODEL_CALL,
        "model",
        "The run fails with the hook's reason (the event is dead-lettered, 'blocked by "
        "hook'): the loop does not read the answer.",
        _obj(
            {
                "model": _S,
                "provider": _S,
                "response": _RESPONSE,
                "source": {"enum": ["model", "hook"]},
                "usage": _OBJECT,
                "cost": {"type": ["number", "null"]},
                "duration_ms": _NUMBER,
                "error": _SN,
                "turn": _I,
                "event_id": _SN,
                **_TOTALS,
            }
        ),
        {
            "model": "gpt-4o-mini",
            "provider": "openai",
            "response": {
                "content": "P2: the login page is down for some users; routed to the web team.",
                "tool_calls": [],
                "finish_reason": "stop",
            },
            "source": "model",
            "usage": {"input_tokens": 640, "output_tokens": 18, "cached_tokens": 0},
            "cost": 0.000107,
            "duration_ms": 812.4,
            "error": None,
            "turn": 2,
            "event_id": _EVENT_ID,
            **_TOTALS_SAMPLE,
        },
        matchable=_MATCH_MODEL,
        patch=_patch(
            "response",
            _RESPONSE,
            "A changed response's content and tool_calls are what the loop reads (checked "
            "as they are made; an invalid one is the hook's error); nothing else is used.",
        ),
        shown=("model", "source", "duration_ms", "cost", "error"),
    ),
    EventSpec(
        HookEvent.AGENT_STOP,
        "task",
        "The run goes on: the reason is sent to the model as the next user message, at most "
        "max_continuations times a run (a further block is recorded and ignored).",
        _obj(
            {
                "answer": _S,
                "turns": _I,
                "continuations": _I,
                "usage": _USAGE,
                "event_id": _SN,
            }
        ),
        {
            "answer": "The printer on floor 3 is fixed.",
            "turns": 2,
            "continuations": 0,
            "usage": _USAGE_SAMPLE,
            "event_id": _EVENT_ID,
        },
        shown=("turns", "continuations", "answer"),
    ),
)

#: Every event's spec, in HookEvent order (a test checks each member has exactly one).
EVENTS: Final[MappingProxyType[HookEvent, EventSpec]] = MappingProxyType(
    {spec.event: spec for spec in sorted(_SPECS, key=lambda s: list(HookEvent).index(s.event))}
)

BLOCKABLE_EVENTS: Final[frozenset[HookEvent]] = frozenset(
    spec.event for spec in _SPECS if spec.blockable
)

_BY_VALUE: Final[dict[str, HookEvent]] = {e.value: e for e in HookEvent}
VALID_EVENT_VALUES: Final[str] = ", ".join(sorted(_BY_VALUE))


def parse_event(event: HookEvent | str) -> HookEvent:
    """Return the HookEvent for a member or its value; raise ValueError listing the valid ones."""
    if isinstance(event, HookEvent):
        return event
    found = _BY_VALUE.get(event) if isinstance(event, str) else None
    if found is None:
        raise ValueError(f"unknown hook event {event!r}; valid events are: {VALID_EVENT_VALUES}")
    return found
