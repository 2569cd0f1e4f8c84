"""Claude Code hook packs as they are written in the wild: real settings files, programs in
the styles public packs use (bash with jq inline or in a script, Python, node), run by a
process on FakeLLM; each behaves as Claude Code's hooks reference prescribes."""

from __future__ import annotations

import json
import logging
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _executor_support import PolicyServer
from _mcp_support import stdio_entry
from _process_support import completions, run_task
from tether import AgentProcess, HookEvent, ProcessConfig, claude_code_hooks
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookConfig
from tether.testing import FakeLLM

pytestmark = pytest.mark.llm(openai_env=True)


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def settings(project: Path, hooks: dict[str, Any], name: str = "settings.json") -> Path:
    file = project / ".claude" / name
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"hooks": hooks}))
    return file


def group(command: str, matcher: str | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        found["matcher"] = matcher
    return found


def shell_agent(hooks: list[HookConfig], **config: Any) -> tuple[AgentProcess, list[str]]:
    """An agent with a ``Bash`` tool (as Claude Code's), whose commands are kept in a list."""
    ran: list[str] = []

    async def Bash(command: str) -> str:  # Claude Code's tool name
        """Run a shell command."""
        ran.append(command)
        return f"ran: {command}"

    process = AgentProcess(
        "dev", ProcessConfig(model="openai:gpt-5-mini", tools=[Bash], hooks=hooks, **config)
    )
    return process, ran


async def one_run(process: AgentProcess, text: str = "Tidy the repo") -> str:
    rec = completions(process)
    async with process:
        await run_task(process, rec, text)
    [done] = rec.of(HookEvent.TASK_COMPLETED)
    assert done["outcome"] == "success", done
    return str(done["event_id"])


def tool_results(llm: FakeLLM) -> list[str]:
    return [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"]


# -- commands as Claude Code runs them ----------------------------------------------------------


async def test_an_inline_jq_pipeline_blocks_a_dangerous_command(
    llm: FakeLLM, tmp_path: Path
) -> None:
    guard = (
        "jq -r '.tool_input.command' | grep -qE 'rm -rf' "
        "&& { echo 'rm -rf is blocked by policy' >&2; exit 2; } || exit 0"
    )
    file = settings(tmp_path, {"PreToolUse": [group(guard, "Bash")]})
    llm.tool_calls = [("Bash", {"command": "rm -rf /"}), ("Bash", {"command": "ls"})]
    process, ran = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert ran == ["ls"]
    assert "refused: rm -rf is blocked by policy" in llm.requests[1]["messages"][-1]["content"]


async def test_the_input_is_compact_json_as_claude_code_writes_it(
    llm: FakeLLM, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    grep = f'grep -o \'"hook_event_name":"PreToolUse"\' > {seen}; exit 0'
    file = settings(tmp_path, {"PreToolUse": [group(grep)]})
    llm.tool_calls = [("Bash", {"command": "ls"})]
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert seen.read_text().strip() == '"hook_event_name":"PreToolUse"'


async def test_an_if_rule_spawns_the_program_only_for_the_commands_it_names(
    llm: FakeLLM, tmp_path: Path
) -> None:
    spawns = tmp_path / "spawns"
    counter = f"jq -r .tool_input.command >> {spawns}"
    file = settings(tmp_path, {"PreToolUse": [group(counter, "Bash", **{"if": "Bash(git push*)"})]})
    llm.tool_calls = [
        ("Bash", {"command": "git status"}),
        ("Bash", {"command": "git push origin main"}),
        ("Bash", {"command": "make test"}),
    ]
    [hook] = claude_code_hooks(file)
    assert hook.matcher == {"tool_name": ["Bash"], "arguments.command": "git push*"}
    process, ran = shell_agent([hook])
    await one_run(process)
    assert len(ran) == 3
    assert spawns.read_text().splitlines() == ["git push origin main"]


# -- the environment ----------------------------------------------------------------------------


def env_dump(tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "env.json"
    program = script(
        tmp_path / "hooks" / "env.py",
        f"""
        #!{sys.executable}
        import json, os, sys
        sys.stdin.read()
        json.dump(dict(os.environ), open({str(out)!r}, "w"))
        """,
    )
    return out, str(program)


async def test_hooks_get_the_host_environment_less_declared_secrets_and_withheld_names(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAFETY_PARANOID", "1")  # a pack configured by an exported variable
    monkeypatch.setenv("CRM_TOKEN", "tok-7a9c1e55")
    monkeypatch.setenv("DEPLOY_KEY", "dk-0042")
    out, program = env_dump(tmp_path)
    file = settings(tmp_path, {"PreToolUse": [group(program)]})
    llm.tool_calls = [("Bash", {"command": "ls"})]
    hooks = claude_code_hooks(file, withhold_env=["DEPLOY_KEY"])
    process, _ = shell_agent(hooks, secrets={"crm": "tok-7a9c1e55"})
    await one_run(process)
    env = json.loads(out.read_text())
    assert env["SAFETY_PARANOID"] == "1"
    assert "CRM_TOKEN" not in env  # its value is a declared secret
    assert "DEPLOY_KEY" not in env  # withheld by name
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)


async def test_inherit_env_false_gives_tethers_minimal_environment(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAFETY_PARANOID", "1")
    out, program = env_dump(tmp_path)
    file = settings(tmp_path, {"PreToolUse": [group(program)]})
    llm.tool_calls = [("Bash", {"command": "ls"})]
    process, _ = shell_agent(claude_code_hooks(file, inherit_env=False))
    await one_run(process)
    env = json.loads(out.read_text())
    assert "SAFETY_PARANOID" not in env
    assert "PATH" in env
    assert "CLAUDE_ENV_FILE" in env


async def test_exports_written_to_claude_env_file_reach_the_later_hooks(
    llm: FakeLLM, tmp_path: Path
) -> None:
    seen = tmp_path / "mode.txt"
    file = settings(
        tmp_path,
        {
            "SessionStart": [
                group('echo \'export PACK_MODE="strict mode"\' >> "$CLAUDE_ENV_FILE"')
            ],
            "PreToolUse": [group(f'cat > /dev/null; printf %s "$PACK_MODE" > {seen}')],
        },
    )
    llm.tool_calls = [("Bash", {"command": "ls"})]
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert seen.read_text() == "strict mode"


# -- answers ------------------------------------------------------------------------------------


async def test_session_start_stdout_and_additional_context_reach_the_model(
    llm: FakeLLM, tmp_path: Path
) -> None:
    context = script(
        tmp_path / "hooks" / "context.py",
        f"""
        #!{sys.executable}
        import json, sys
        event = json.load(sys.stdin)
        print(json.dumps({{"hookSpecificOutput": {{
            "hookEventName": "SessionStart",
            "additionalContext": f"Session started by {{event['source']}} on {{event['model']}}",
        }}}}))
        """,
    )
    file = settings(
        tmp_path,
        {
            "SessionStart": [
                group("echo 'This repo uses pnpm, never npm.'", "startup|resume"),
                group(str(context), "startup"),
                group("echo 'never shown'", "compact"),
            ]
        },
    )
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    system = llm.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert "This repo uses pnpm, never npm." in system["content"]
    assert "Session started by startup on openai:gpt-5-mini" in system["content"]
    assert "never shown" not in system["content"]


async def test_a_json_answer_decides_whatever_the_exit_code(llm: FakeLLM, tmp_path: Path) -> None:
    deny = script(
        tmp_path / "hooks" / "deny.py",
        f"""
        #!{sys.executable}
        import json, sys
        json.load(sys.stdin)
        print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "use the deploy tool"}}}}))
        sys.exit(1)
        """,
    )
    file = settings(tmp_path, {"PreToolUse": [group(str(deny), "Bash")]})
    llm.tool_calls = [("Bash", {"command": "kubectl apply"})]
    process, ran = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert ran == []
    assert tool_results(llm) == ["refused: use the deploy tool"]


async def test_exit_2_with_json_blocks_with_the_jsons_reason(llm: FakeLLM, tmp_path: Path) -> None:
    answer = json.dumps({"decision": "block", "reason": "tests must pass first"})
    file = settings(
        tmp_path,
        {"PreToolUse": [group(f"cat >/dev/null; echo '{answer}'; echo noise >&2; exit 2")]},
    )
    llm.tool_calls = [("Bash", {"command": "git push"})]
    process, ran = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert ran == []
    assert tool_results(llm) == ["refused: tests must pass first"]


async def test_an_ask_reason_reaches_the_approval_handler(llm: FakeLLM, tmp_path: Path) -> None:
    ask = script(
        tmp_path / "hooks" / "ask.js",
        """
        #!/usr/bin/env node
        let input = "";
        process.stdin.on("data", (chunk) => (input += chunk));
        process.stdin.on("end", () => {
          const event = JSON.parse(input);
          const command = event.tool_input.command;
          if (command.startsWith("npm ")) {
            console.log(JSON.stringify({hookSpecificOutput: {hookEventName: "PreToolUse",
              permissionDecision: "ask",
              permissionDecisionReason: `this project uses pnpm, not: ${command}`}}));
          }
        });
        """,
    )
    asked: list[ApprovalRequest] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, reviewer_id="alice")

    file = settings(tmp_path, {"PreToolUse": [group(f"node {ask}", "Bash")]})
    llm.tool_calls = [("Bash", {"command": "npm install"})]
    process, ran = shell_agent(claude_code_hooks(file), approval=ApprovalPolicy(handler=reviewer))
    await one_run(process)
    assert [r.reason for r in asked] == ["this project uses pnpm, not: npm install"]
    assert ran == ["npm install"]


async def test_permission_request_allow_with_updated_input_skips_the_handler(
    llm: FakeLLM, tmp_path: Path
) -> None:
    allow = script(
        tmp_path / "hooks" / "allow.py",
        f"""
        #!{sys.executable}
        import json, sys
        event = json.load(sys.stdin)
        command = event["tool_input"]["command"].replace("npm ", "pnpm ")
        print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PermissionRequest",
            "decision": {{"behavior": "allow", "updatedInput": {{"command": command}}}}}}}}))
        """,
    )
    asked: list[ApprovalRequest] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=False, reason="nobody is here")

    file = settings(tmp_path, {"PermissionRequest": [group(str(allow), "Bash")]})
    llm.tool_calls = [("Bash", {"command": "npm test"})]
    process, ran = shell_agent(
        claude_code_hooks(file), approval=ApprovalPolicy(tools=["Bash"], handler=reviewer)
    )
    await one_run(process)
    assert asked == []
    assert ran == ["pnpm test"]


async def test_permission_request_deny_refuses_with_its_message(
    llm: FakeLLM, tmp_path: Path
) -> None:
    deny = json.dumps(
        {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not on Fridays"}}}
    )
    file = settings(tmp_path, {"PermissionRequest": [group(f"cat >/dev/null; echo '{deny}'")]})
    llm.tool_calls = [("Bash", {"command": "deploy"})]
    process, ran = shell_agent(
        claude_code_hooks(file), approval=ApprovalPolicy(tools=["Bash"], handler=None)
    )
    await one_run(process)
    assert ran == []
    assert tool_results(llm) == ["refused: not on Fridays"]


def stop_hook(tmp_path: Path, *, respects_active: bool) -> Path:
    """A Stop hook in the style of the "keep working until the tests are named" packs."""
    guard = "if event.get('stop_hook_active'): sys.exit(0)" if respects_active else ""
    return script(
        tmp_path / "hooks" / "stop.py",
        f"""
        #!{sys.executable}
        import json, sys
        event = json.load(sys.stdin)
        {guard}
        if "tests" not in event["last_assistant_message"]:
            print(json.dumps({{"decision": "block",
                               "reason": "Run the tests and say which ones passed."}}))
        """,
    )


async def test_a_stop_hook_blocking_sends_its_reason_to_the_model_and_the_run_goes_on(
    llm: FakeLLM, tmp_path: Path
) -> None:
    llm.replies = ["Done.", "Done: tests in tests/unit passed."]
    file = settings(tmp_path, {"Stop": [group(str(stop_hook(tmp_path, respects_active=False)))]})
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert len(llm.requests) == 2
    assert llm.requests[1]["messages"][-1] == {
        "role": "user",
        "content": "Run the tests and say which ones passed.",
    }


async def test_a_stop_hook_that_never_lets_go_is_bounded_by_max_continuations(
    llm: FakeLLM, tmp_path: Path
) -> None:
    file = settings(tmp_path, {"Stop": [group(str(stop_hook(tmp_path, respects_active=False)))]})
    process, _ = shell_agent(claude_code_hooks(file), max_continuations=2)
    await one_run(process)
    assert len(llm.requests) == 3


async def test_stop_hook_active_tells_a_program_it_already_sent_the_run_back(
    llm: FakeLLM, tmp_path: Path
) -> None:
    file = settings(tmp_path, {"Stop": [group(str(stop_hook(tmp_path, respects_active=True)))]})
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert len(llm.requests) == 2  # it let go once stop_hook_active was true


async def test_a_system_message_is_shown_to_the_operator(
    llm: FakeLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answer = json.dumps({"systemMessage": "formatter changed 3 files"})
    file = settings(tmp_path, {"PostToolUse": [group(f"cat >/dev/null; echo '{answer}'")]})
    llm.tool_calls = [("Bash", {"command": "ls"})]
    process, _ = shell_agent(claude_code_hooks(file))
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        await one_run(process)
    assert "says: formatter changed 3 files" in caplog.text


async def test_a_notification_hook_runs_when_an_approval_waits(
    llm: FakeLLM, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    file = settings(
        tmp_path,
        {
            "Notification": [
                group(
                    f"jq -r '.notification_type + \": \" + .message' >> {notes}",
                    "permission_prompt",
                )
            ]
        },
    )

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True, reviewer_id="alice")

    llm.tool_calls = [("Bash", {"command": "deploy"})]
    process, ran = shell_agent(
        claude_code_hooks(file), approval=ApprovalPolicy(tools=["Bash"], handler=reviewer)
    )
    await one_run(process)
    assert notes.read_text().splitlines() == [
        "permission_prompt: Claude needs your permission to use Bash"
    ]
    assert ran == ["deploy"]


def test_a_command_without_a_timeout_gets_claude_codes_600_seconds(tmp_path: Path) -> None:
    from tether.hooks._claude_code import ClaudeCodeHook

    file = settings(tmp_path, {"PreToolUse": [group("true")], "Stop": [group("x", timeout=9)]})
    first, second = claude_code_hooks(file)
    assert ClaudeCodeHook.from_config(first).timeout == 600.0
    assert ClaudeCodeHook.from_config(second).timeout == 9.0
    by_hand = HookConfig(event="pre_tool_use", command=["guard"], protocol="claude-code")
    assert ClaudeCodeHook.from_config(by_hand).timeout == 600.0


async def test_transcript_path_names_a_jsonl_transcript_of_the_session(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """A Stop hook in the style of the transcript-reading packs: the last assistant text
    from the JSONL file, and the commands the session ran."""
    seen = tmp_path / "seen.txt"
    reader = script(
        tmp_path / "hooks" / "stop.sh",
        f"""
        #!/bin/bash
        transcript=$(jq -r '.transcript_path')
        tail -n 1 "$transcript" \
          | jq -r '.message.content[] | select(.type == "text") | .text' > {seen}
        jq -r 'select(.type == "assistant") | .message.content[]
               | select(.type == "tool_use") | .input.command' "$transcript" >> {seen}
        jq -r 'select(.message.content | type == "array") | .message.content[]
               | select(.type == "tool_result") | .content' "$transcript" >> {seen}
        """,
    )
    file = settings(tmp_path, {"Stop": [group(str(reader))]})
    llm.tool_calls = [("Bash", {"command": "make test"})]
    llm.reply = "All green."
    process, _ = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert seen.read_text().splitlines() == ["All green.", "make test", "ran: make test"]


# -- the handlers of one group run in parallel -----------------------------------------------------


def rendezvous(tmp_path: Path, me: str, other: str) -> str:
    """A handler that marks itself there and waits (bounded) for the other's mark: both end
    well only when they run at the same time."""
    marks = tmp_path / "marks"
    return (
        f"mkdir -p {marks}; touch {marks}/{me}; "
        f"for i in $(seq 1 200); do [ -f {marks}/{other} ] && echo {me} >> {marks}/met && exit 0;"
        " sleep 0.05; done; exit 1"
    )


async def test_the_handlers_of_one_group_run_at_the_same_time(llm: FakeLLM, tmp_path: Path) -> None:
    file = settings(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": rendezvous(tmp_path, "a", "b")},
                        {"type": "command", "command": rendezvous(tmp_path, "b", "a")},
                    ],
                }
            ]
        },
    )
    [hook] = claude_code_hooks(file)  # one tether hook for the group
    assert [p["command"] for p in hook.claude_origin["parallel"]] == [
        rendezvous(tmp_path, "b", "a")
    ]
    llm.tool_calls = [("Bash", {"command": "ls"})]
    process, ran = shell_agent([hook])
    await one_run(process)
    assert sorted((tmp_path / "marks" / "met").read_text().split()) == ["a", "b"]
    assert [r.outcome for r in process.hook_runs()].count("failed") == 0
    assert ran == ["ls"]


async def test_answers_of_a_group_combine_in_declaration_order_and_any_deny_wins(
    llm: FakeLLM, tmp_path: Path
) -> None:
    slow_context = script(
        tmp_path / "hooks" / "slow.py",
        f"""
        #!{sys.executable}
        import json, sys, time
        json.load(sys.stdin)
        time.sleep(0.3)  # finishes last, answers first
        print(json.dumps({{"hookSpecificOutput": {{"additionalContext": "first"}}}}))
        """,
    )
    quick = json.dumps({"hookSpecificOutput": {"additionalContext": "second"}})
    deny_force = (
        "jq -r .tool_input.command | grep -q -- --force "
        "&& { echo 'no force pushes' >&2; exit 2; } || exit 0"
    )
    file = settings(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": str(slow_context)},
                        {"type": "command", "command": f"cat >/dev/null; echo '{quick}'"},
                        {"type": "command", "command": deny_force},
                    ],
                }
            ]
        },
    )
    llm.tool_calls = [("Bash", {"command": "git push"}), ("Bash", {"command": "git push --force"})]
    process, ran = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert ran == ["git push"]
    assert tool_results(llm) == ["ran: git push\n\nfirst\n\nsecond", "refused: no force pushes"]


# -- an MCP tool ----------------------------------------------------------------------------------


async def test_updated_input_and_updated_mcp_tool_output_on_a_real_mcp_servers_tool(
    llm: FakeLLM, tmp_path: Path
) -> None:
    upper = script(
        tmp_path / "hooks" / "upper.js",
        """
        #!/usr/bin/env node
        const chunks = [];
        process.stdin.on("data", (c) => chunks.push(c));
        process.stdin.on("end", () => {
          const event = JSON.parse(Buffer.concat(chunks).toString());
          const id = event.tool_input.order_id.toUpperCase();
          console.log(JSON.stringify({hookSpecificOutput: {hookEventName: "PreToolUse",
            permissionDecision: "allow", updatedInput: {order_id: id}}}));
        });
        """,
    )
    trim = script(
        tmp_path / "hooks" / "trim.py",
        f"""
        #!{sys.executable}
        import json, sys
        event = json.load(sys.stdin)
        response = event["tool_response"]
        kept = {{"order_id": response["order_id"], "status": response["status"]}}
        print(json.dumps({{"hookSpecificOutput": {{"hookEventName": "PostToolUse",
            "updatedMCPToolOutput": kept}}}}))
        """,
    )
    file = settings(
        tmp_path,
        {
            "PreToolUse": [group(f"node {upper}", "mcp__shop__order")],
            "PostToolUse": [group(str(trim), "mcp__shop__.*")],
        },
    )
    llm.tool_calls = [("mcp__shop__order", {"order_id": "a-1182"})]
    process = AgentProcess(
        "desk",
        ProcessConfig(
            model="openai:gpt-5-mini",
            mcp_servers=[stdio_entry("shop")],
            hooks=list(claude_code_hooks(file)),
            stop_timeout=2.0,
        ),
    )
    await one_run(process)
    [result] = tool_results(llm)
    assert json.loads(result) == {"order_id": "A-1182", "status": "shipped"}  # the server's


# -- http and prompt handlers ----------------------------------------------------------------------


async def test_an_http_handler_posts_claude_codes_input_with_its_allowed_variables(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICY_TOKEN", "tok-5a0c")
    monkeypatch.setenv("OTHER_TOKEN", "never-sent")
    async with PolicyServer() as service:
        handler = {
            "type": "http",
            "url": f"{service.url}/claude",
            "headers": {"Authorization": "Bearer $POLICY_TOKEN", "X-Other": "$OTHER_TOKEN"},
            "allowedEnvVars": ["POLICY_TOKEN"],
        }
        file = settings(tmp_path, {"UserPromptSubmit": [{"hooks": [handler]}]})
        [hook] = claude_code_hooks(file)
        assert hook.timeout == 600.0
        process, _ = shell_agent([hook])
        await one_run(process, "Summarise the ticket")
        [got] = service.requests
    assert got.json()["hook_event_name"] == "UserPromptSubmit"
    assert got.headers["authorization"] == "Bearer tok-5a0c"
    assert got.headers["x-other"] == "$OTHER_TOKEN"  # not allowed: left as written
    assert llm.prompts[0].endswith("Remember: answer briefly.")


async def test_a_prompt_handler_is_answered_by_the_process_model(
    llm: FakeLLM, tmp_path: Path
) -> None:
    llm.replies = [json.dumps({"decision": "deny", "reason": "destructive command"}), "Done."]
    handler = {"type": "prompt", "prompt": "Deny destructive commands: $ARGUMENTS", "timeout": 20}
    file = settings(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]})
    [hook] = claude_code_hooks(file)
    assert (hook.event, hook.timeout) == ("pre_tool_use", 20.0)
    llm.tool_calls = [("Bash", {"command": "rm -rf build"})]
    process, ran = shell_agent([hook])
    await one_run(process)
    assert ran == []
    assert "destructive command" in tool_results(llm)[0]


async def test_the_transcript_exists_from_the_start_of_the_session(
    llm: FakeLLM, tmp_path: Path
) -> None:
    backup = tmp_path / "backup.jsonl"
    file = settings(tmp_path, {"SessionStart": [group(f'cp "$(jq -r .transcript_path)" {backup}')]})
    process, _ = shell_agent(claude_code_hooks(file))
    async with process:
        pass
    assert backup.read_text() == ""


async def test_an_export_overrides_the_host_value_but_never_brings_back_what_is_withheld(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PACK_LEVEL", "low")
    seen = tmp_path / "seen.txt"
    exports = "export PACK_LEVEL=high; export DEPLOY_KEY=dk-1; export CRM=tok-7a9c1e55"
    file = settings(
        tmp_path,
        {
            "SessionStart": [group(f"echo '{exports}' >> \"$CLAUDE_ENV_FILE\"")],
            "PreToolUse": [
                group(f'cat >/dev/null; echo "$PACK_LEVEL ${{DEPLOY_KEY:--}} ${{CRM:--}}" > {seen}')
            ],
        },
    )
    llm.tool_calls = [("Bash", {"command": "ls"})]
    hooks = claude_code_hooks(file, withhold_env=["DEPLOY_KEY"])
    process, _ = shell_agent(hooks, secrets={"crm": "tok-7a9c1e55"})
    await one_run(process)
    assert seen.read_text().split() == ["high", "-", "-"]


async def test_a_strict_bash_program_reading_one_line_gets_the_whole_input(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """The style of many public guards: set -euo pipefail, read -r input, jq -n answer."""
    guard = script(
        tmp_path / "hooks" / "guard.sh",
        """
        #!/bin/bash
        set -euo pipefail
        read -r input
        command=$(echo "$input" | jq -r '.tool_input.command // ""')
        if echo "$command" | grep -qE '(--no-verify|--force|--hard)'; then
          jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny",
                  permissionDecisionReason: "Blocked: this command bypasses safety checks"}}'
          exit 0
        fi
        jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow"}}'
        """,
    )
    file = settings(tmp_path, {"PreToolUse": [group(str(guard), "Bash")]})
    llm.tool_calls = [
        ("Bash", {"command": "git reset --hard"}),
        ("Bash", {"command": "git status"}),
    ]
    process, ran = shell_agent(claude_code_hooks(file))
    await one_run(process)
    assert ran == ["git status"]
    assert "refused: Blocked: this command bypasses safety checks" in str(llm.requests[1])
