"""Claude Code hook programs run unchanged: protocol="claude-code" and claude_code_hooks()."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually, run_task
from tether import AgentProcess, ClaudeCodeHooksError, ProcessConfig, claude_code_hooks
from tether.approval import ApprovalDecision, ApprovalRequest
from tether.hooks import HookConfig, HookEvent
from tether.models import ScriptedModel


def write(path: Path, text: str, mode: int = 0o755) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    path.chmod(mode)
    return str(path)


def python_hook(path: Path, body: str) -> str:
    return write(path, f"#!{sys.executable}\n" + textwrap.dedent(body))


def settings(folder: Path, hooks: dict[str, Any]) -> Path:
    """A project's .claude/settings.json declaring ``hooks``."""
    file = folder / ".claude" / "settings.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"permissions": {"allow": []}, "hooks": hooks}))
    return file


def command(cmd: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": cmd, **extra}


def shop(
    calls: list[tuple[str, dict[str, Any] | str]],
    ran: list[Any],
    hooks: list[HookConfig],
    **kw: Any,
) -> tuple[AgentProcess, ScriptedModel]:
    async def lookup_order(order_id: int) -> str:
        """Look an order up."""
        ran.append(order_id)
        return json.dumps({"order": order_id, "status": "shipped"})

    async def charge_card(amount: int) -> str:
        """Charge a card."""
        raise RuntimeError("card declined")

    model = ScriptedModel(reply="Done.", tool_calls=calls)
    config = ProcessConfig(model=model, tools=[lookup_order, charge_card], hooks=hooks, **kw)
    return AgentProcess("shop", config), model


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m.get("role") == "tool"]


async def run(process: AgentProcess, *events: HookEvent) -> Recorder:
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, *events)
    async with process:
        await run_task(process, rec)
    return rec


# -- the two programs the issue names ----------------------------------------------------------


async def test_a_python_hook_from_settings_json_that_exits_2_refuses_the_call(
    tmp_path: Path,
) -> None:
    python_hook(
        tmp_path / ".claude" / "hooks" / "guard.py",
        """
        import json, sys
        event = json.load(sys.stdin)
        if event["tool_input"].get("order_id") == 13:
            print("order 13 is cursed", file=sys.stderr)
            sys.exit(2)
        """,
    )
    file = settings(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "lookup_order",
                    "hooks": [command("$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py")],
                }
            ]
        },
    )
    hooks = claude_code_hooks(file)
    guard = hooks[0].command
    assert guard == "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.py"  # sh -c resolves it
    ran: list[Any] = []
    process, model = shop([("lookup_order", {"order_id": 13})], ran, hooks)
    rec = await run(process, HookEvent.PERMISSION_DENIED)
    assert ran == []
    assert "order 13 is cursed" in tool_results(model)[0]
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["kind"] == "hook"
    assert denied["reason"] == "order 13 is cursed"
    assert denied["decided_by"] == guard


async def test_a_node_hook_from_a_plugin_answering_deny_refuses_the_call(tmp_path: Path) -> None:
    plugin = tmp_path / "order-guard"
    write(
        plugin / "scripts" / "guard.js",
        """
        let input = "";
        process.stdin.on("data", (chunk) => (input += chunk));
        process.stdin.on("end", () => {
          const event = JSON.parse(input);
          console.log(JSON.stringify({
            hookSpecificOutput: {
              hookEventName: event.hook_event_name,
              permissionDecision: "deny",
              permissionDecisionReason:
                `no ${event.tool_name} on order ${event.tool_input.order_id}`,
            },
          }));
        });
        """,
        0o644,
    )
    hooks_json = plugin / "hooks" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    hooks_json.write_text(
        json.dumps(
            {
                "description": "Refuses order look-ups",
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "lookup_.*",
                            "hooks": [command("node ${CLAUDE_PLUGIN_ROOT}/scripts/guard.js")],
                        }
                    ]
                },
            }
        )
    )
    hooks = claude_code_hooks(hooks_json)  # the plugin root is the folder above hooks/
    ran: list[Any] = []
    process, model = shop([("lookup_order", {"order_id": 8})], ran, hooks)
    rec = await run(process, HookEvent.PERMISSION_DENIED)
    assert ran == []
    assert "no lookup_order on order 8" in tool_results(model)[0]
    assert rec.of(HookEvent.PERMISSION_DENIED)[0]["reason"] == "no lookup_order on order 8"


# -- what a program reads ----------------------------------------------------------------------


async def test_the_program_reads_claude_codes_input_shape(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    script = python_hook(
        tmp_path / "dump.py",
        f"""
        import sys
        with open({str(seen)!r}, "a") as f:
            f.write(sys.stdin.read().strip() + "\\n")
        """,
    )
    hooks = [
        HookConfig(event=e, command=[script], protocol="claude-code", cwd=str(tmp_path))
        for e in ("pre_tool_use", "post_tool_use", "user_prompt_submit")
    ]
    ran: list[Any] = []
    process, _ = shop(
        [("lookup_order", {"order_id": 1}), ("charge_card", {"amount": 2})], ran, hooks
    )
    await run(process)
    events = [json.loads(line) for line in seen.read_text().splitlines()]
    by_name = {e["hook_event_name"]: e for e in events}
    assert set(by_name) == {"UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure"}
    for event in events:
        assert event["session_id"] == process.process_id
        assert event["cwd"] == str(tmp_path)
        assert event["tether"]["data"] is not None
    assert "Login is down" in by_name["UserPromptSubmit"]["prompt"]
    pre = next(e for e in events if e["hook_event_name"] == "PreToolUse")
    assert pre["tool_name"] == "lookup_order"
    assert pre["tool_input"] == {"order_id": 1}
    assert pre["tool_use_id"] == "call_1"
    post = by_name["PostToolUse"]
    assert post["tool_response"] == {"order": 1, "status": "shipped"}
    failure = by_name["PostToolUseFailure"]
    assert failure["tool_name"] == "charge_card"
    assert failure["error"] == "RuntimeError: card declined"


async def test_the_program_gets_claude_project_dir_in_its_environment(tmp_path: Path) -> None:
    seen = tmp_path / "env.txt"
    script = python_hook(
        tmp_path / "env.py",
        f"""
        import os
        open({str(seen)!r}, "w").write(os.environ["CLAUDE_PROJECT_DIR"])
        """,
    )
    hook = HookConfig(
        event="pre_tool_use", command=[script], protocol="claude-code", cwd=str(tmp_path)
    )
    process, _ = shop([("lookup_order", {"order_id": 1})], [], [hook])
    await run(process)
    assert seen.read_text() == str(tmp_path)


async def test_a_plugins_program_gets_claude_plugin_root_in_its_environment(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "root.txt"
    plugin = tmp_path / "audit-plugin"
    python_hook(
        plugin / "scripts" / "root.py",
        f"""
        import os
        open({str(seen)!r}, "w").write(os.environ["CLAUDE_PLUGIN_ROOT"])
        """,
    )
    hooks_json = plugin / "hooks" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    entry = command("${CLAUDE_PLUGIN_ROOT}/scripts/root.py")
    hooks_json.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [entry]}]}}))
    [hook] = claude_code_hooks(hooks_json)
    process, _ = shop([("lookup_order", {"order_id": 1})], [], [hook])
    await run(process)
    assert seen.read_text() == str(plugin.resolve())


# -- what a program's answer does ----------------------------------------------------------------


def answering(tmp_path: Path, answer: dict[str, Any], event: str = "pre_tool_use") -> HookConfig:
    script = python_hook(
        tmp_path / f"answer-{event}.py",
        f"""
        import sys
        sys.stdin.read()
        print({json.dumps(json.dumps(answer))})
        """,
    )
    return HookConfig(event=event, command=[script], protocol="claude-code")


async def test_updated_input_rewrites_the_arguments(tmp_path: Path) -> None:
    hook = answering(
        tmp_path,
        {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"order_id": 77}}},
    )
    ran: list[Any] = []
    process, _ = shop([("lookup_order", {"order_id": 1})], ran, [hook])
    await run(process)
    assert ran == [77]


async def test_an_updated_input_the_schema_refuses_is_an_error_and_changes_nothing(
    tmp_path: Path,
) -> None:
    hook = answering(tmp_path, {"hookSpecificOutput": {"updatedInput": {"order_id": "many"}}})
    ran: list[Any] = []
    process, _ = shop([("lookup_order", {"order_id": 1})], ran, [hook])
    await run(process)
    assert ran == [1]
    [record] = process.history.runs(event="pre_tool_use")
    assert record.outcome == "failed"
    assert "schema refuses" in (record.error or "")


async def test_ask_routes_the_call_to_the_approval_handler(tmp_path: Path) -> None:
    from tether import ApprovalPolicy

    asked: list[ApprovalRequest] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, reviewer_id="alice")

    hook = answering(tmp_path, {"hookSpecificOutput": {"permissionDecision": "ask"}})
    ran: list[Any] = []
    process, _ = shop(
        [("lookup_order", {"order_id": 5})],
        ran,
        [hook],
        approval=ApprovalPolicy(tools=[], handler=reviewer),
    )
    await run(process)
    assert [r.tool_name for r in asked] == ["lookup_order"]
    assert ran == [5]


async def test_ask_without_an_approval_handler_denies_the_call(tmp_path: Path) -> None:
    hook = answering(tmp_path, {"hookSpecificOutput": {"permissionDecision": "ask"}})
    ran: list[Any] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran, [hook])
    rec = await run(process, HookEvent.PERMISSION_DENIED)
    assert ran == []
    assert rec.of(HookEvent.PERMISSION_DENIED)[0]["reason"] == "no approval handler configured"


def asks_when_someone_can_answer(tmp_path: Path) -> HookConfig:
    """A guard that asks for approval when someone is asked (permission_mode "default"), and
    denies when nobody is ("dontAsk")."""
    script = python_hook(
        tmp_path / "ask-or-deny.py",
        """
        import json, sys
        event = json.load(sys.stdin)
        mode = event["permission_mode"]
        if mode == "dontAsk":
            out = {"permissionDecision": "deny", "permissionDecisionReason": "nobody to ask"}
        else:
            out = {"permissionDecision": "ask", "permissionDecisionReason": mode}
        print(json.dumps({"hookSpecificOutput": out}))
        """,
    )
    file = settings(tmp_path, {"PreToolUse": [{"hooks": [command(script)]}]})
    [hook] = claude_code_hooks(file)
    return hook


async def test_permission_mode_is_default_when_an_approval_handler_decides(
    tmp_path: Path,
) -> None:
    from tether import ApprovalPolicy

    asked: list[ApprovalRequest] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, reviewer_id="alice")

    ran: list[Any] = []
    process, _ = shop(
        [("lookup_order", {"order_id": 5})],
        ran,
        [asks_when_someone_can_answer(tmp_path)],
        approval=ApprovalPolicy(tools=[], handler=reviewer),
    )
    await run(process)
    assert [r.reason for r in asked] == ["default"]
    assert ran == [5]


async def test_permission_mode_is_dont_ask_without_an_approval_handler(tmp_path: Path) -> None:
    from tether import ApprovalPolicy

    for approval in (None, ApprovalPolicy(tools=["lookup_order"])):
        ran: list[Any] = []
        process, model = shop(
            [("lookup_order", {"order_id": 5})],
            ran,
            [asks_when_someone_can_answer(tmp_path)],
            approval=approval,
        )
        await run(process)
        assert ran == []
        assert "nobody to ask" in tool_results(model)[0]


async def test_a_legacy_decision_block_refuses_the_call(tmp_path: Path) -> None:
    hook = answering(tmp_path, {"decision": "block", "reason": "legacy says no"})
    ran: list[Any] = []
    process, model = shop([("lookup_order", {"order_id": 5})], ran, [hook])
    await run(process)
    assert ran == []
    assert "legacy says no" in tool_results(model)[0]


async def test_continue_false_refuses_the_call_and_ends_the_run_telling_the_operator(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = answering(tmp_path, {"continue": False, "stopReason": "maintenance window"})
    ran: list[Any] = []
    process, model = shop([("lookup_order", {"order_id": 5}), ("lookup_order", {})], ran, [hook])
    with caplog.at_level("WARNING", logger="tether.hooks"):
        await run(process)
    assert ran == []
    assert len(model.requests) == 1  # the model is not asked again
    assert "stopped the run: maintenance window" in caplog.text


async def test_a_stop_reason_after_a_call_is_the_hook_run_s_notice_for_the_operator(
    tmp_path: Path,
) -> None:
    hook = answering(tmp_path, {"continue": False, "stopReason": "quota"}, event="post_tool_use")
    ran: list[Any] = []
    process, model = shop([("lookup_order", {"order_id": 5}), ("lookup_order", {})], ran, [hook])
    await run(process)
    assert ran == [5]  # the call had run; the next one is not made
    assert len(model.requests) == 1
    [after] = process.hook_runs(event="post_tool_use")
    assert after.notice == "stopped the run: quota"


async def test_a_system_message_is_the_hook_run_s_notice_and_no_data(tmp_path: Path) -> None:
    hook = answering(tmp_path, {"systemMessage": "lookups are slow today, bear with them"})
    ran: list[Any] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran, [hook])
    await run(process)
    assert ran == [5]
    [before] = process.hook_runs(event="pre_tool_use")
    assert before.notice == "lookups are slow today, bear with them"
    assert (before.outcome, before.changes) == ("passed", None)
    assert before.as_dict()["notice"] == before.notice


async def test_additional_context_after_a_call_is_added_to_what_the_model_reads(
    tmp_path: Path,
) -> None:
    hook = answering(
        tmp_path,
        {"hookSpecificOutput": {"additionalContext": "Note: the warehouse is closed."}},
        event="post_tool_use",
    )
    process, model = shop([("lookup_order", {"order_id": 5})], [], [hook])
    await run(process)
    [text] = tool_results(model)
    assert text.startswith('{"order": 5')
    assert text.endswith("Note: the warehouse is closed.")


async def test_exit_2_after_a_call_is_feedback_for_the_model(tmp_path: Path) -> None:
    script = python_hook(
        tmp_path / "feedback.py",
        """
        import sys
        sys.stdin.read()
        print("the status field is stale", file=sys.stderr)
        sys.exit(2)
        """,
    )
    hook = HookConfig(event="post_tool_use", command=[script], protocol="claude-code")
    process, model = shop([("lookup_order", {"order_id": 5})], [], [hook])
    await run(process)
    assert tool_results(model)[0].endswith("the status field is stale")


async def test_updated_mcp_tool_output_replaces_the_result(tmp_path: Path) -> None:
    hook = answering(
        tmp_path, {"hookSpecificOutput": {"updatedMCPToolOutput": "[redacted]"}}, "post_tool_use"
    )
    process, model = shop([("lookup_order", {"order_id": 5})], [], [hook])
    await run(process)
    assert tool_results(model) == ["[redacted]"]


async def test_another_non_zero_exit_is_a_non_blocking_error(tmp_path: Path) -> None:
    script = python_hook(
        tmp_path / "broken.py",
        """
        import sys
        print("oops", file=sys.stderr)
        sys.exit(1)
        """,
    )
    hook = HookConfig(event="pre_tool_use", command=[script], protocol="claude-code")
    ran: list[Any] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran, [hook])
    await run(process)
    assert ran == [5]
    [record] = process.history.runs(event="pre_tool_use")
    assert record.outcome == "failed"
    assert "exited 1: oops" in (record.error or "")


async def test_exit_2_on_user_prompt_submit_blocks_the_prompt(tmp_path: Path) -> None:
    script = python_hook(
        tmp_path / "prompt.py",
        """
        import sys
        sys.stdin.read()
        print("no tickets on Sundays", file=sys.stderr)
        sys.exit(2)
        """,
    )
    hook = HookConfig(event="user_prompt_submit", command=[script], protocol="claude-code")
    process, _ = shop([], [], [hook])
    rec = await run(process)
    assert rec.outcomes() == ["blocked"]
    assert process.dead_letters[0]["error"] == "no tickets on Sundays"


async def test_plain_stdout_of_a_user_prompt_submit_hook_is_added_to_the_prompt(
    tmp_path: Path,
) -> None:
    script = python_hook(
        tmp_path / "context.py",
        """
        import sys
        sys.stdin.read()
        print("Today is a holiday.")
        """,
    )
    hook = HookConfig(event="user_prompt_submit", command=[script], protocol="claude-code")
    process, model = shop([], [], [hook])
    await run(process)
    assert model.prompts[0].endswith("Today is a holiday.")


async def test_a_loaded_post_tool_use_hook_runs_after_successful_calls_only(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen.txt"
    script = python_hook(
        tmp_path / "log.py",
        f"""
        import json, sys
        event = json.load(sys.stdin)
        with open({str(seen)!r}, "a") as f:
            f.write(event["hook_event_name"] + " " + event["tool_name"] + "\\n")
        """,
    )
    file = settings(
        tmp_path,
        {
            "PostToolUse": [{"hooks": [command(script)]}],
            "PostToolUseFailure": [{"matcher": "*", "hooks": [command(script)]}],
        },
    )
    process, _ = shop(
        [("lookup_order", {"order_id": 1}), ("charge_card", {"amount": 3})],
        [],
        claude_code_hooks(file),
    )
    await run(process)
    await eventually(lambda: seen.exists() and len(seen.read_text().splitlines()) == 2)
    assert seen.read_text().splitlines() == [
        "PostToolUse lookup_order",
        "PostToolUseFailure charge_card",
    ]


# -- reading settings files ----------------------------------------------------------------------


def test_events_matchers_timeouts_and_variables_are_mapped(tmp_path: Path) -> None:
    file = settings(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Edit|Write", "hooks": [command("check $CLAUDE_PROJECT_DIR/x")]},
                {"matcher": "mcp__.*", "hooks": [command("audit", timeout=7)]},
            ],
            "UserPromptSubmit": [{"hooks": [command("prompt-guard", **{"async": True})]}],
            "Stop": [{"matcher": "", "hooks": [command("notify", onFailure="block")]}],
        },
    )
    edit, mcp, prompt, stop = claude_code_hooks(file)
    project = str(tmp_path.resolve())
    assert (edit.event, edit.matcher, edit.command) == (
        "pre_tool_use",
        {"tool_name": ["Edit", "Write"]},
        "check $CLAUDE_PROJECT_DIR/x",  # kept as written: sh -c expands it
    )
    assert edit.protocol == "claude-code"
    assert edit.cwd == project
    assert edit.timeout == 600.0  # Claude Code's default
    assert (mcp.matcher, mcp.timeout) == ({"tool_name": "re:mcp__.*"}, 7.0)
    assert (prompt.event, prompt.mode, prompt.matcher) == ("user_prompt_submit", "async", None)
    assert (stop.event, stop.fail_closed) == ("agent_stop", True)


async def test_a_quoted_project_folder_holding_a_space_runs_as_one_path(tmp_path: Path) -> None:
    """As Claude Code's reference advises: "$CLAUDE_PROJECT_DIR" quoted in the command."""
    project = tmp_path / "My Projects" / "shop"
    seen = tmp_path / "ran.txt"
    python_hook(
        project / ".claude" / "g.py",
        f"""
        import sys
        open({str(seen)!r}, "w").write(" ".join(sys.argv[1:]))
        """,
    )
    file = settings(
        project,
        {"PreToolUse": [{"hooks": [command('"$CLAUDE_PROJECT_DIR"/.claude/g.py --strict')]}]},
    )
    process, _ = shop([("lookup_order", {"order_id": 1})], [], claude_code_hooks(file))
    await run(process)
    assert seen.read_text() == "--strict"


def test_a_regex_matcher_selects_tools_as_claude_code_does() -> None:
    from tether.hooks._matcher import Matcher

    matcher = Matcher.build(HookEvent.PRE_TOOL_USE, {"tool_name": "re:mcp__.*__write"})
    assert matcher.matches({"tool_name": "mcp__fs__write"})
    assert not matcher.matches({"tool_name": "mcp__fs__read"})
    with pytest.raises(ValueError, match="not a valid regular expression"):
        Matcher.build(HookEvent.PRE_TOOL_USE, {"tool_name": "re:("})


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        (
            {"Setup": [{"hooks": [command("x")]}]},
            "hooks.Setup: Claude Code event 'Setup' has no tether counterpart (skipped)",
        ),
        (
            {"PreToolUse": [{"hooks": [{"type": "agent", "prompt": "Is it safe?"}]}]},
            "hooks.PreToolUse[0].hooks[0].type: 'agent' is not supported by tether (skipped)",
        ),
        (
            {"PreToolUse": [{"hooks": [{"type": "mcp_tool", "server": "x", "tool": "y"}]}]},
            "hooks.PreToolUse[0].hooks[0].type: 'mcp_tool' is not supported by tether",
        ),
        (
            {"PreToolUse": [{}, {"hooks": [command("x", timeout=0)]}]},
            "hooks.PreToolUse[0].hooks: expected a list of hooks",
        ),
        (
            {"PostToolUse": [{"hooks": [command("x", timeout=7200)]}]},
            "hooks.PostToolUse[0].hooks[0].timeout: 7200 is not a number of seconds",
        ),
        ({"PreToolUse": {"matcher": "x"}}, "hooks.PreToolUse: expected a list of matcher groups"),
        ({"PreToolUse": ["Bash"]}, "hooks.PreToolUse[0]: expected an object with 'matcher'"),
        ({"PreToolUse": [{"matcher": 3, "hooks": []}]}, "hooks.PreToolUse[0].matcher: expected"),
        (
            {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]},
            "hooks.PreToolUse[0].matcher: 'Bash(' is not a valid regular expression",
        ),
        ({"PreToolUse": [{"hooks": ["x"]}]}, "hooks.PreToolUse[0].hooks[0]: expected an object"),
        (
            {"PreToolUse": [{"hooks": [command("  ")]}]},
            "hooks.PreToolUse[0].hooks[0].command: expected a non-empty string",
        ),
        (
            {"PreToolUse": [{"hooks": [command("x", **{"async": "yes"})]}]},
            "hooks.PreToolUse[0].hooks[0].async: expected true or false",
        ),
        (
            {"PreToolUse": [{"hooks": [command("x 'unclosed")]}]},
            'hooks.PreToolUse[0].hooks[0].command: "x \'unclosed" cannot be split',
        ),
        (
            {"PreToolUse": [{"hooks": [command("x", **{"if": "Bash(git *)"})]}]},
            "",  # a rule on a tool event maps (no warning): the next case is the one refused
        ),
        (
            {"SessionStart": [{"hooks": [command("x", **{"if": "Bash(git *)"})]}]},
            "hooks.SessionStart[0].hooks[0].if: 'Bash(git *)' cannot be mapped",
        ),
    ],
)
def test_what_cannot_be_mapped_is_skipped_with_a_warning_and_refused_when_strict(
    tmp_path: Path, hooks: dict[str, Any], message: str
) -> None:
    file = settings(tmp_path, hooks)
    loaded = claude_code_hooks(file)
    if not message:
        assert loaded.warnings == []
        return
    assert [w for w in loaded.warnings if message in w], loaded.warnings
    assert all(w.startswith(f"{file}: hooks.") for w in loaded.warnings)
    with pytest.raises(ClaudeCodeHooksError) as caught:
        claude_code_hooks(file, strict=True)
    assert str(caught.value).startswith(f"{file}: hooks.")


@pytest.mark.parametrize(
    ("hooks", "message"),
    [
        ({"PreToolUse": [{"matcher": "x", "hooks": [], "when": 1}]}, "[0]: key 'when' ignored"),
        ({"PreToolUse": [{"hooks": [command("x", shell="bash")]}]}, "key 'shell' ignored"),
    ],
)
def test_an_unknown_key_is_a_warning_and_the_rest_loads(
    tmp_path: Path, hooks: dict[str, Any], message: str
) -> None:
    loaded = claude_code_hooks(settings(tmp_path, hooks))
    assert [w for w in loaded.warnings if message in w], loaded.warnings


def test_a_file_mixing_what_maps_and_what_does_not_loads_what_maps(tmp_path: Path) -> None:
    file = settings(
        tmp_path,
        {
            "Setup": [{"hooks": [command("init.sh")]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "agent", "prompt": "check"}]},
                {"matcher": "Bash", "hooks": [command("jq -r .tool_input.command | grep -q rm")]},
            ],
            "Notification": [{"matcher": "permission_prompt", "hooks": [command("notify")]}],
        },
    )
    loaded = claude_code_hooks(file)
    assert [(h.claude_event, h.command) for h in loaded] == [
        ("PreToolUse", "jq -r .tool_input.command | grep -q rm"),
        ("Notification", "notify"),
    ]
    assert len(loaded.warnings) == 2


def test_an_unreadable_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ClaudeCodeHooksError, match="cannot read"):
        claude_code_hooks(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ClaudeCodeHooksError, match="not a JSON document"):
        claude_code_hooks(bad)


def test_a_file_that_is_not_a_hooks_object_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "settings.json"
    file.write_text("[1, 2]")
    with pytest.raises(ClaudeCodeHooksError, match="expected a JSON object with a 'hooks'"):
        claude_code_hooks(file)
    file.write_text('{"hooks": ["PreToolUse"]}')
    with pytest.raises(ClaudeCodeHooksError, match="hooks: expected an object of event names"):
        claude_code_hooks(file)


def test_the_plugin_root_and_project_dir_may_be_given(tmp_path: Path) -> None:
    file = tmp_path / "anywhere.json"
    hooks = {
        "SessionStart": [{"hooks": [command("${CLAUDE_PLUGIN_ROOT}/start $CLAUDE_PROJECT_DIR")]}]
    }
    file.write_text(json.dumps({"hooks": hooks}))
    [hook] = claude_code_hooks(
        file, tmp_path / "plugin", project_dir=tmp_path / "project", plugin_data=tmp_path / "d"
    )
    assert hook.cwd == f"{tmp_path}/project"
    assert hook.claude_origin["CLAUDE_PLUGIN_ROOT"] == f"{tmp_path}/plugin"
    assert hook.claude_origin["CLAUDE_PLUGIN_DATA"] == f"{tmp_path}/d"
    assert (tmp_path / "d").is_dir()  # made when loaded, as Claude Code does


def test_a_settings_file_without_hooks_declares_none(tmp_path: Path) -> None:
    file = tmp_path / "settings.json"
    file.write_text('{"permissions": {}}')
    assert claude_code_hooks(file) == []


def test_protocol_claude_code_needs_a_command() -> None:
    async def hook(ctx: Any) -> None:
        pass

    with pytest.raises(ValueError, match=r"protocol\n  Extra inputs are not permitted"):
        HookConfig(event="pre_tool_use", callback=hook, protocol="claude-code")  # a command's
    with pytest.raises(ValueError, match="protocol"):
        HookConfig(event="pre_tool_use", command="x", protocol="cursor")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("group", "rule", "expected"),
    [
        ("Bash", "Bash(npm run test:*)", {"arguments.command": "npm run test*"}),
        ("Edit|Write", "Edit(*.ts)", {"arguments.file_path": "*.ts"}),
        ("", "Write(secrets.env)", {"arguments.file_path": "*/secrets.env"}),
        ("", "Edit(/src/**)", {"arguments.file_path": "{project}/src/**"}),
        ("", "Edit(docs/*.md)", {"arguments.file_path": "{project}/docs/*.md"}),
        ("", "Read(//etc/*)", {"arguments.file_path": "/etc/*"}),
        ("mcp__.*", "mcp__fs__write", {}),
    ],
)
def test_an_if_rule_becomes_the_tool_name_and_an_argument_matcher(
    tmp_path: Path, group: str, rule: str, expected: dict[str, str]
) -> None:
    entry = command("guard", **{"if": rule})
    file = settings(tmp_path, {"PreToolUse": [{"matcher": group, "hooks": [entry]}]})
    [hook] = claude_code_hooks(file, strict=True)
    project = str(tmp_path.resolve())
    tool = rule.split("(")[0]
    wanted = {k: v.replace("{project}", project) for k, v in expected.items()}
    assert hook.matcher == {"tool_name": [tool], **wanted}


def test_an_if_rule_naming_a_tool_its_group_does_not_is_skipped(tmp_path: Path) -> None:
    entry = command("guard", **{"if": "Read(*.env)"})
    file = settings(tmp_path, {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [entry]}]})
    loaded = claude_code_hooks(file)
    assert list(loaded) == []
    assert "'Read(*.env)' names a tool the group's matcher" in loaded.warnings[0]
