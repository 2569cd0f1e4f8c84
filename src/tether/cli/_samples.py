"""A sample ``ctx.data`` for each lifecycle event (for ``tether hooks test``)."""

from __future__ import annotations

import copy
from typing import Any, Final

__all__ = ["SAMPLES", "sample_data"]

_EVENT_ID: Final = "0f6c1a2b3c4d4e5f8a9b0c1d2e3f4a5b"

SAMPLES: Final[dict[str, dict[str, Any]]] = {
    "session_start": {"restart": False, "recovered": None},
    "session_end": {"reason": "stop", "invocation_count": 3},
    "user_prompt_submit": {
        "prompt": (
            "ticket: Login page is down\n\n"
            f"(event {_EVENT_ID} from trigger 'helpdesk', type webhook)"
        ),
        "event_id": _EVENT_ID,
        "trigger_id": "helpdesk",
        "trigger_type": "webhook",
    },
    "permission_request": {
        "tool_name": "update_state",
        "arguments": {"key": "priority", "value": "high"},
        "request_id": "5d41402abc4b2a76b9719d911017c592",
    },
    "permission_denied": {
        "kind": "approval",
        "tool_name": "update_state",
        "request_id": "5d41402abc4b2a76b9719d911017c592",
        "reason": "refund limits are set by finance, not by the agent",
        "decided_by": "hook",
    },
    "subagent_start": {
        "process_name": "triage-helper",
        "execution_mode": "strict",
        "trigger_count": 0,
    },
    "subagent_stop": {"process_name": "triage-helper", "state": "stopped"},
    "pre_compact": {
        "buffer_size": 51,
        "max_messages": 50,
        "dropping": [{"role": "user", "content": "ticket: Printer on floor 3 is jammed"}],
    },
    "post_compact": {"buffer_size": 50, "dropped": 1},
    "file_changed": {
        "path": "/srv/inbox/ticket-1182.txt",
        "event_type": "added",
        "trigger_id": "inbox",
        "event_id": _EVENT_ID,
    },
    "config_change": {
        "source": "operator",
        "change": "instructions",
        "instructions": "You triage support tickets. Answer in one sentence.",
    },
    "task_created": {"event_id": _EVENT_ID, "trigger_id": "helpdesk", "trigger_type": "webhook"},
    "task_completed": {
        "event_id": _EVENT_ID,
        "trigger_id": "helpdesk",
        "trigger_type": "webhook",
        "outcome": "success",
        "duration_ms": 412.5,
        "error": None,
    },
    "pre_tool_use": {
        "tool_name": "lookup_order",
        "arguments": {"order_id": "A-1182"},
        "call_id": "call_7f3a",
        "event_id": _EVENT_ID,
        "server": None,
    },
    "post_tool_use": {
        "tool_name": "lookup_order",
        "arguments": {"order_id": "A-1182"},
        "call_id": "call_7f3a",
        "event_id": _EVENT_ID,
        "server": None,
        "result": '{"status": "shipped"}',
        "error": None,
        "duration_ms": 3.2,
    },
}


def sample_data(event: str) -> dict[str, Any]:
    """A fresh copy of the sample data of ``event`` (a HookEvent value)."""
    return copy.deepcopy(SAMPLES[event])
