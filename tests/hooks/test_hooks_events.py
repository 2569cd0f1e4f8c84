"""The lifecycle events (the reference's 13 and the two tool-call events), their values, and
which of them a hook may refuse."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tether import BLOCKABLE_EVENTS, HookBlocked, HookContext, HookEvent, HookManager

EXPECTED_VALUES = {
    "SESSION_START": "session_start",
    "SESSION_END": "session_end",
    "USER_PROMPT_SUBMIT": "user_prompt_submit",
    "PERMISSION_REQUEST": "permission_request",
    "PERMISSION_DENIED": "permission_denied",
    "SUBAGENT_START": "subagent_start",
    "SUBAGENT_STOP": "subagent_stop",
    "PRE_COMPACT": "pre_compact",
    "POST_COMPACT": "post_compact",
    "FILE_CHANGED": "file_changed",
    "CONFIG_CHANGE": "config_change",
    "TASK_CREATED": "task_created",
    "TASK_COMPLETED": "task_completed",
    "PRE_TOOL_USE": "pre_tool_use",
    "POST_TOOL_USE": "post_tool_use",
    "PRE_MODEL_CALL": "pre_model_call",
    "POST_MODEL_CALL": "post_model_call",
    "AGENT_STOP": "agent_stop",
}

BLOCKABLE = {
    HookEvent.USER_PROMPT_SUBMIT,
    HookEvent.PERMISSION_REQUEST,
    HookEvent.SUBAGENT_START,
    HookEvent.FILE_CHANGED,
    HookEvent.CONFIG_CHANGE,
    HookEvent.TASK_CREATED,
    HookEvent.PRE_TOOL_USE,
    HookEvent.PRE_MODEL_CALL,
    HookEvent.POST_MODEL_CALL,
    HookEvent.AGENT_STOP,
}


def test_there_are_exactly_eighteen_events_with_lowercase_values() -> None:
    assert {e.name: e.value for e in HookEvent} == EXPECTED_VALUES


@pytest.mark.parametrize(("name", "value"), sorted(EXPECTED_VALUES.items()))
def test_an_event_member_equals_its_value(name: str, value: str) -> None:
    assert HookEvent[name] == value
    assert HookEvent(value) is HookEvent[name]


def test_blockable_events_are_exactly_the_ten() -> None:
    assert isinstance(BLOCKABLE_EVENTS, frozenset)
    assert BLOCKABLE_EVENTS == BLOCKABLE


@pytest.mark.parametrize("event", sorted(BLOCKABLE))
async def test_a_block_of_a_blockable_event_refuses_it(event: HookEvent) -> None:
    manager = HookManager()

    @manager.on(event)
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("no")

    result = await manager.dispatch(event)

    assert result.blocked
    assert result.reason == "no"


@pytest.mark.parametrize("event", sorted(set(HookEvent) - BLOCKABLE))
async def test_a_block_of_a_non_blockable_event_is_logged_as_a_warning_and_ignored(
    event: HookEvent, caplog: pytest.LogCaptureFixture
) -> None:
    manager = HookManager()
    ran: list[str] = []

    @manager.on(event, priority=1)
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("no")

    @manager.on(event)
    async def later(ctx: HookContext) -> None:
        ran.append("later")

    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        result = await manager.dispatch(event)

    assert not result.blocked
    assert result.reason is None
    assert result.errors == []
    assert ran == ["later"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "cannot be blocked" in warnings[0].getMessage()
    assert event.value in warnings[0].getMessage()


async def test_the_ignored_block_warning_redacts_the_hooks_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the warning named the hook unredacted (a command hook's name is its
    command line, which may carry a declared secret)."""
    manager = HookManager()
    manager.redact = lambda text: text.replace("sk-name-canary", "[REDACTED:KEY]")

    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked("no")

    manager.register(HookEvent.SESSION_END, refuses, name="notify --key=sk-name-canary")
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        await manager.dispatch(HookEvent.SESSION_END)
    assert "notify --key=[REDACTED:KEY]" in caplog.text
    assert "sk-name-canary" not in caplog.text


async def test_an_error_listener_that_raises_is_logged_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: a failing error listener's traceback was logged as raised, secrets and all."""
    manager = HookManager()
    manager.redact = lambda text: text.replace("sk-listener-canary", "[REDACTED:KEY]")

    async def fails(ctx: HookContext) -> None:
        raise RuntimeError("hook failed with sk-listener-canary")

    def listener(info: Any) -> None:
        raise ValueError(f"listener saw {info.error}")

    manager.register(HookEvent.SESSION_END, fails)
    manager.on_error(listener)
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        await manager.dispatch(HookEvent.SESSION_END)
    assert "hook error listener" in caplog.text
    assert "listener saw hook failed with [REDACTED:KEY]" in caplog.text
    assert "sk-listener-canary" not in caplog.text
