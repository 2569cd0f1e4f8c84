"""The Claude Code mapping event by event, on real contexts: the input each tether event
becomes, and what each answer does to the dispatch's data."""

from __future__ import annotations

from typing import Any

import pytest

from tether import CommandHookError, HookBlocked, HookContext, HookEvent
from tether.agent._schema import schema_problems
from tether.hooks._claude_code import apply_answer, claude_input


def ctx(event: HookEvent, **data: Any) -> HookContext:
    return HookContext(event, "shop", data, {"process_name": "shop", "process_id": "p-1"})


@pytest.mark.parametrize(
    ("event", "data", "name", "expected"),
    [
        (
            HookEvent.PERMISSION_REQUEST,
            {"tool_name": "rm", "arguments": {"p": "/"}},
            "PermissionRequest",
            {"tool_name": "rm", "tool_input": {"p": "/"}},
        ),
        (
            HookEvent.PERMISSION_DENIED,
            {"tool_name": "rm", "reason": "no"},
            "PermissionDenied",
            {"tool_name": "rm", "tool_input": {}, "reason": "no"},
        ),
        (
            HookEvent.SESSION_START,
            {"restart": True, "recovered": None},
            "SessionStart",
            {"source": "resume"},
        ),
        (
            HookEvent.SESSION_START,
            {"restart": False, "recovered": None},
            "SessionStart",
            {"source": "startup"},
        ),
        (HookEvent.SESSION_END, {"reason": "stop"}, "SessionEnd", {"reason": "other"}),
        (
            HookEvent.SUBAGENT_START,
            {"process_name": "helper"},
            "SubagentStart",
            {"agent_id": "helper", "agent_type": "process"},
        ),
        (
            HookEvent.SUBAGENT_STOP,
            {"process_name": "helper"},
            "SubagentStop",
            {"agent_id": "helper", "agent_type": "process", "stop_hook_active": False},
        ),
        (HookEvent.PRE_COMPACT, {}, "PreCompact", {"trigger": "auto", "custom_instructions": ""}),
        (HookEvent.TASK_COMPLETED, {"event_id": "e-1"}, "TaskCompleted", {"task_id": "e-1"}),
        (
            HookEvent.AGENT_STOP,
            {"answer": "Fixed.", "continuations": 1},
            "Stop",
            {"stop_hook_active": True, "last_assistant_message": "Fixed."},
        ),
        (HookEvent.TASK_CREATED, {"event_id": "e-2"}, "TaskCreated", {"task_id": "e-2"}),
        (HookEvent.FILE_CHANGED, {"path": "/x/a.txt"}, "FileChanged", {"file_path": "/x/a.txt"}),
    ],
)
def test_each_event_becomes_claude_codes_input(
    event: HookEvent, data: dict[str, Any], name: str, expected: dict[str, Any]
) -> None:
    got = claude_input(ctx(event, **data), name, "/proj")
    assert got["hook_event_name"] == name
    assert got["session_id"] == "p-1"
    assert got["cwd"] == "/proj"
    assert got["tether"] == {"event": event.value, "data": data}
    assert {k: got[k] for k in expected} == expected


def test_a_tool_response_that_is_not_json_is_handed_over_as_text() -> None:
    got = claude_input(
        ctx(HookEvent.POST_TOOL_USE, tool_name="t", arguments={}, call_id="c", result="plain"),
        "PostToolUse",
        "/proj",
    )
    assert got["tool_response"] == "plain"


def test_a_permission_request_hook_denying_blocks_with_its_message() -> None:
    context = ctx(HookEvent.PERMISSION_REQUEST, tool_name="rm")
    answer = {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "never"}}}
    with pytest.raises(HookBlocked, match="never"):
        apply_answer(context, answer)


def test_an_unknown_permission_decision_is_the_hooks_error() -> None:
    with pytest.raises(CommandHookError, match="'maybe' is not one of"):
        apply_answer(
            ctx(HookEvent.PRE_TOOL_USE), {"hookSpecificOutput": {"permissionDecision": "maybe"}}
        )


def test_legacy_approve_is_allow() -> None:
    context = ctx(HookEvent.PRE_TOOL_USE, arguments={"a": 1})
    apply_answer(context, {"decision": "approve"})
    assert context.data == {"arguments": {"a": 1}}


def test_additional_context_is_added_to_the_prompt_of_user_prompt_submit() -> None:
    context = ctx(HookEvent.USER_PROMPT_SUBMIT, prompt="Ticket: login down")
    apply_answer(context, {"hookSpecificOutput": {"additionalContext": "VIP customer"}})
    assert context.data["prompt"] == "Ticket: login down\n\nVIP customer"


def test_additional_context_where_no_model_reads_it_changes_nothing() -> None:
    context = ctx(HookEvent.SESSION_END, reason="stop")
    apply_answer(context, {"hookSpecificOutput": {"additionalContext": "hello"}})
    assert context.data == {"reason": "stop"}


def test_additional_context_of_session_start_is_kept_for_the_model() -> None:
    context = ctx(HookEvent.SESSION_START, restart=False)
    apply_answer(context, {"hookSpecificOutput": {"additionalContext": "hello"}})
    assert context.data == {"restart": False, "additional_context": "hello"}


def test_a_non_string_mcp_tool_output_replaces_the_result_as_json() -> None:
    context = ctx(HookEvent.POST_TOOL_USE, result="x")
    apply_answer(context, {"hookSpecificOutput": {"updatedMCPToolOutput": {"rows": []}}})
    assert context.data["result"] == '{"rows": []}'


def test_continue_false_after_a_call_asks_to_end_the_run_and_leaves_the_result() -> None:
    context = ctx(HookEvent.POST_TOOL_USE, result="done")
    apply_answer(context, {"continue": False, "stopReason": "quota"})
    assert context.data == {"result": "done", "stop_run": "quota"}


def test_continue_false_on_stop_lets_the_run_end() -> None:
    context = ctx(HookEvent.AGENT_STOP, answer="x")
    apply_answer(context, {"continue": False, "decision": "block", "reason": "more"})
    assert context.data == {"answer": "x"}


def test_decision_block_on_stop_is_a_block_of_agent_stop() -> None:
    with pytest.raises(HookBlocked, match="keep going"):
        apply_answer(ctx(HookEvent.AGENT_STOP), {"decision": "block", "reason": "keep going"})


@pytest.mark.parametrize(
    ("value", "schema", "problems"),
    [
        (5.0, {"type": "integer"}, []),
        (True, {"type": "integer"}, ["arguments: expected integer, got bool"]),
        (1, {"type": ["string", "null"]}, ["arguments: expected string or null, got int"]),
        ("c", {"enum": ["a", "b"]}, ["arguments: 'c' is not one of ['a', 'b']"]),
        (2, {"const": 1}, ["arguments: expected 1"]),
        (
            [1, "x"],
            {"type": "array", "items": {"type": "number"}},
            ["arguments[1]: expected number, got str"],
        ),
        (
            {"a": 1},
            {"type": "object", "additionalProperties": {"type": "string"}},
            ["arguments.a: expected string, got int"],
        ),
        ({"a": 1}, {"type": "object", "x-unknown": True}, []),
        ({"a": 1}, "not a schema", []),
    ],
)
def test_the_json_schema_check_of_schema_only_tools(
    value: Any, schema: Any, problems: list[str]
) -> None:
    assert schema_problems(value, schema) == problems


def test_agent_stop_is_stop_in_a_process_and_subagent_stop_in_a_spawned_child() -> None:
    from tether.hooks._claude_code import ClaudeCodeHook, claude_event_name

    top = ctx(HookEvent.AGENT_STOP, answer="x", continuations=0)
    child = HookContext(
        HookEvent.AGENT_STOP,
        "helper",
        {"answer": "y", "continuations": 0},
        {"process_name": "helper", "process_id": "p-2", "parent": "shop"},
    )
    assert (claude_event_name(top, None), claude_event_name(child, None)) == (
        "Stop",
        "SubagentStop",
    )
    stop = ClaudeCodeHook("true", claude={"event": "Stop"})
    sub = ClaudeCodeHook("true", claude={"event": "SubagentStop"})
    assert (stop.applies(top), stop.applies(child)) == (True, False)
    assert (sub.applies(top), sub.applies(child)) == (False, True)
    got = claude_input(child, "SubagentStop", "/proj")
    assert (got["agent_id"], got["last_assistant_message"]) == ("helper", "y")
