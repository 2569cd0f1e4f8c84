"""The lifecycle events (the reference's 13 and the two tool-call events) and which of them a
hook may refuse."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["BLOCKABLE_EVENTS", "HookEvent", "parse_event"]


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


HookEvent.__module__ = "tether"

BLOCKABLE_EVENTS: Final[frozenset[HookEvent]] = frozenset(
    {
        HookEvent.USER_PROMPT_SUBMIT,
        HookEvent.PERMISSION_REQUEST,
        HookEvent.SUBAGENT_START,
        HookEvent.FILE_CHANGED,
        HookEvent.CONFIG_CHANGE,
        HookEvent.TASK_CREATED,
        HookEvent.PRE_TOOL_USE,
    }
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
