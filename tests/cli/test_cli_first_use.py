"""The CLI as a new user first meets it: --version, shell completion, offline event table, FakeLLM
from the shell, --model/--base-url, whole tables when piped, --json answers, the program's
stderr in 'hooks test', hook counts, trigger checks, publishing, --until-idle's exit status,
live lines without None, did-you-mean for a manifest typo, and JSON logs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _cli_support import CLI, running
from _manifest_support import write_manifest
from _net_support import free_port
from _process_support import noop
from tether import AgentRuntime, EventTrigger, HookEvent, HookManager, ProcessConfig
from tether.api import OrchestrationAPI
from tether.hooks import HookBlocked, HookContext
from tether.models import ScriptedModel
from tether.testing import FakeLLM

pytestmark = pytest.mark.slow

ENV = {**os.environ, "NO_COLOR": "1"}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def tether(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=60, env=env or ENV, check=False
    )


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def failing_on_prompts(tmp_path: Path, name: str, *args: str, **fields: Any) -> Path:
    """A scripted agent ``name`` whose user_prompt_submit hook (given ``args``) exits 3."""
    hook = write(tmp_path / "hook.py", "import sys; sys.exit(3)\n")
    prompt_hook = {"event": "user_prompt_submit", "command": [sys.executable, str(hook), *args]}
    return write_manifest(
        tmp_path / "a.agent", name=name, model="scripted", hooks=[prompt_hook], **fields
    )


def at(api: OrchestrationAPI) -> tuple[str, str]:
    return ("--url", api.url)


@pytest.fixture
async def served() -> AsyncIterator[tuple[AgentRuntime, OrchestrationAPI]]:
    runtime = AgentRuntime(hooks=HookManager())
    async with runtime:
        trigger = EventTrigger(id="on-deploy", event_type="deployed")
        cfg = ProcessConfig(model=ScriptedModel(), triggers=[trigger])
        process = await runtime.add_process("ops", cfg)
        process.hooks.on(HookEvent.TASK_CREATED, name="own")(noop)
        runtime.hooks.on(HookEvent.TASK_COMPLETED, name="audit")(noop)
        async with OrchestrationAPI(runtime, port=0, webhooks=False) as api:
            yield runtime, api


# -- the command itself --------------------------------------------------------------------


def test_version_prints_the_package_version() -> None:
    from tether import __version__

    done = tether("--version")
    assert (done.returncode, done.stdout) == (0, f"tether {__version__}\n")


def test_show_completion_prints_a_bash_completion_script() -> None:
    done = tether("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "_TETHER_COMPLETE" in done.stdout
    assert "complete " in done.stdout


def test_install_completion_writes_the_script_for_the_shell(tmp_path: Path) -> None:
    done = tether("--install-completion", "bash", env={**ENV, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    installed = list(tmp_path.rglob("tether*"))
    assert installed, done.stdout
    assert "_TETHER_COMPLETE" in installed[0].read_text()


def test_hooks_events_works_without_a_server() -> None:
    done = tether("hooks", "events", "--url", f"http://127.0.0.1:{free_port()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split()[:2] == ["EVENT", "FAMILY"]
    assert any(line.startswith("task_created ") for line in done.stdout.splitlines())


def test_a_piped_table_keeps_every_column_whole_whatever_the_terminal_width() -> None:
    done = tether("hooks", "events", env={**ENV, "COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("task_created "))
    assert "…" not in done.stdout
    assert "trigger_type, trigger_id" in line
    assert len(done.stdout.splitlines()) == 1 + len(HookEvent)  # a line per event, none wrapped


# -- FakeLLM from the shell ------------------------------------------------------------------


@pytest.mark.parametrize("command", [["-m", "tether.testing"], ["-m", "tether.cli", "fake-llm"]])
async def test_fake_llm_serves_from_the_shell_until_sigint(command: list[str]) -> None:
    async with running(sys.executable, *command, "--port", "0", env=ENV, stderr=None) as llm:
        await llm.read_until(" at ", what="the fake LLM")
        url = llm.seen[-1].split(" at ")[1].strip()
        async with httpx.AsyncClient() as client:
            r = await client.post(
                f"{url}/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
        assert r.status_code == 200
        await llm.stop(signal.SIGINT)
    assert llm.proc.returncode == 0


async def chat(url: str, tools: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    if tools:
        function = {"name": "lookup_order", "parameters": {"type": "object"}}
        body["tools"] = [{"type": "function", "function": function}]
    async with httpx.AsyncClient() as client:
        r = await client.post(f"{url}/chat/completions", json=body)
    assert r.status_code == 200, r.text
    message: dict[str, Any] = r.json()["choices"][0]["message"]
    return message


async def answers(*options: str) -> list[dict[str, Any]]:
    """What `tether fake-llm OPTIONS` answers to: a request offering tools, one that does not,
    and then two more offering tools."""
    async with running(*CLI, "fake-llm", "--port", "0", *options, env=ENV) as llm:
        await llm.read_until(" at ", what="the fake LLM")
        url = next(line for line in llm.seen if " at " in line).split(" at ")[1].strip()
        got = [await chat(url, tools) for tools in (True, False, True, True)]
        await llm.stop(signal.SIGINT)
    return got


async def test_fake_llm_scripts_replies_and_tool_calls_with_flags() -> None:
    """Regression: `tether fake-llm` could only set one reply; tool calls were not scriptable
    from the shell."""
    call = 'lookup_order={"order_id": 7}'
    got = await answers("--tool-call", call, "--reply", "Looking.", "--reply", "Shipped.")
    assert got[0]["tool_calls"][0]["function"] == {
        "name": "lookup_order",
        "arguments": '{"order_id": 7}',
    }
    assert [m["content"] for m in got[1:]] == ["Looking.", "Shipped.", "Shipped."]


async def test_fake_llm_scripts_replies_and_tool_calls_from_a_file(tmp_path: Path) -> None:
    script = write(
        tmp_path / "script.yaml",
        """\
        reply: Done.
        replies: [First.]
        tool_calls:
          - name: lookup_order
            arguments: {order_id: 1182}
          - name: cancel_order
        """,
    )
    got = await answers("--script", str(script))
    calls = [m["tool_calls"][0]["function"] for m in (got[0], got[2])]
    assert calls == [
        {"name": "lookup_order", "arguments": '{"order_id": 1182}'},
        {"name": "cancel_order", "arguments": "{}"},
    ]
    assert (got[1]["content"], got[3]["content"]) == ("First.", "Done.")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("tool_calls: [{arguments: {}}]\n", "tool_calls[0] must be a mapping with a 'name'"),
        ("replys: [x]\n", "unknown key 'replys'; allowed: reply, replies, tool_calls"),
    ],
)
def test_a_bad_fake_llm_script_is_an_error_naming_the_field(
    tmp_path: Path, text: str, error: str
) -> None:
    script = write(tmp_path / "script.yaml", text)
    done = tether("fake-llm", "--port", "0", "--script", str(script))
    assert done.returncode == 1
    assert error in done.stderr


async def test_the_try_line_fake_llm_prints_works_as_printed_without_an_api_key(
    tmp_path: Path,
) -> None:
    """Regression: the printed `tether run ... --base-url` failed with "no API key" unless
    OPENAI_API_KEY was set, though FakeLLM takes none."""
    env = {k: v for k, v in ENV.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    agent = write(tmp_path / "a.agent", "name: a\nmodel: scripted\n")
    async with running(
        *CLI, "fake-llm", "--port", "0", "--reply", "hello from fake", env=env
    ) as llm:
        await llm.read_until("try:", what="the fake LLM")
        printed = llm.seen[-1].split("try:")[1].split()
        assert printed[:2] == ["tether", "run"]
        argv = [*CLI, *printed[1:], "--inject", "{}", "--until-idle"]
        argv[argv.index("AGENT.agent")] = str(agent)
        done = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, timeout=60, env=env
        )
        await llm.stop(signal.SIGINT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hello from fake" in done.stdout


async def test_a_tool_call_scripted_from_the_shell_runs_the_examples_mcp_tool_through_its_hook(
    tmp_path: Path,
) -> None:
    """`tether fake-llm --tool-call` drives a real `tether run` of the shipped example: the call
    passes the example's pre_tool_use guard, the MCP server's tool answers it (docs/cli.md's
    command; its arguments once did not fit the example's tool), then the scripted reply."""
    env = {**ENV, "TRIAGE_WEBHOOK_SECRET": "s3cret-for-the-test", "TRIAGE_AUDIT_LOG": "/dev/null"}
    env["TRIAGE_WEBHOOK_PORT"] = str(free_port())
    call = 'mcp__orders__lookup_order={"order_id": "1182"}'
    fake = (*CLI, "fake-llm", "--port", "0", "--tool-call", call, "--reply", "Delivered.")
    async with running(*fake, env=env) as llm:
        await llm.read_until("try:", what="the fake LLM")
        url = next(line for line in llm.seen if " at " in line).split(" at ")[1].strip()
        argv = [*CLI, "run", str(EXAMPLES / "triage.agent"), "--model", "openai:fake"]
        argv += ["--base-url", url, "--inject", '{"ticket": "Where is 1182?"}', "--until-idle"]
        done = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, timeout=60, env=env
        )
        await llm.stop(signal.SIGINT)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if " pre_tool_use " in line)
    assert (
        'tool_name=mcp__orders__lookup_order server=orders arguments={"order_id": "1182"}'
        in (lines[at])
    )
    assert lines[at + 1].strip().endswith("guard_tools.py: passed")
    assert " post_tool_use " in lines[at + 2]
    assert "error=" not in lines[at + 2], lines[at + 2 :]
    assert any(line.split()[-2:] == ["answer", "Delivered."] for line in lines), lines


# -- run: model, base URL, exit status, live lines, logs -------------------------------------


async def test_run_takes_the_model_and_base_url_from_the_command_line(
    cli: Any, tmp_path: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = write(tmp_path / "a.agent", "name: a\nmodel: scripted\n")
    llm.reply = "from the fake"
    done = await cli(
        "run", str(agent), "--model", "openai:fake", "--base-url", llm.base_url,
        "--inject", "{}", "--until-idle",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(llm.requests) == 1
    assert "from the fake" in done.stdout


async def test_a_manifest_s_base_url_points_its_model_at_that_endpoint(
    cli: Any, tmp_path: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    agent = write(tmp_path / "a.agent", f"name: a\nmodel: openai:fake\nbase_url: {llm.base_url}\n")
    done = await cli("run", str(agent), "--inject", "{}", "--until-idle")
    assert done.returncode == 0, done.stderr
    assert len(llm.requests) == 1


def test_a_bad_base_url_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    agent = write(tmp_path / "a.agent", "name: a\nmodel: scripted\n")
    done = tether("run", str(agent), "--base-url", "ftp://x", "--until-idle")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --base-url: base_url 'ftp://x' is not an http(s) URL")


async def test_the_api_deploys_a_base_url_only_when_command_deploys_are_allowed() -> None:
    spec = {"name": "a", "config": {"model": "openai:x", "base_url": "http://10.0.0.9/v1"}}
    async with AgentRuntime() as runtime:
        async with (
            OrchestrationAPI(runtime, port=0, webhooks=False) as api,
            httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client,
        ):
            refused = await client.post("/processes", json=spec)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "BASE_URL_NOT_ALLOWED"


def test_until_idle_says_in_its_help_that_dead_letters_exit_1() -> None:
    done = tether("run", "--help", env={**ENV, "COLUMNS": "200"})
    assert "exit 1 if any event was dead-lettered" in " ".join(done.stdout.split())


async def test_until_idle_exits_1_when_an_event_was_dead_lettered_and_lines_omit_none(
    cli: Any, tmp_path: Path
) -> None:
    gate = write(tmp_path / "gate.py", 'print(\'{"block": true, "reason": "no"}\')\n')
    hooks = [{"event": "task_created", "command": [sys.executable, str(gate)]}]
    agent = write_manifest(tmp_path / "a.agent", name="a", model="scripted", hooks=hooks)
    blocked = await cli("run", str(agent), "--inject", "{}", "--until-idle")
    fine = await cli("run", str(write(tmp_path / "b.agent", "name: b\nmodel: scripted\n")),
                     "--inject", "{}", "--until-idle")  # fmt: skip
    assert blocked.returncode == 1, blocked.stdout
    assert "blocked by hook" in blocked.stdout
    assert fine.returncode == 0, fine.stderr
    assert "=None" not in fine.stdout  # task_completed's error is None: not shown
    assert "outcome=success" in fine.stdout


async def test_json_logs_name_process_event_and_hook_with_secrets_redacted(
    cli: Any, tmp_path: Path
) -> None:
    secrets = {"TOKEN": "sk-secret-value-123"}
    agent = failing_on_prompts(tmp_path, "logged", "sk-secret-value-123", secrets=secrets)
    done = await cli("run", str(agent), "--inject", "{}", "--until-idle", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    failed = [line for line in lines if "failed on user_prompt_submit" in line["message"]]
    assert failed, done.stderr
    line = failed[0]
    assert line["process"] == "logged"
    assert line["hook"].startswith("hook-")
    assert len(line["event_id"]) == 32
    assert line["level"] == "warning"
    assert {"time", "logger", "trace_id"} <= set(line)
    assert "sk-secret-value-123" not in done.stderr


def test_a_json_log_line_carries_the_trace_id_of_the_task_it_was_written_in(
    tmp_path: Path,
) -> None:
    """With tracing on (an OTLP endpoint set: here a closed loopback port, so the export
    fails quietly), a hook failure's log line names the trace its task runs in."""
    agent = failing_on_prompts(tmp_path, "traced")
    env = {**ENV, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    done = tether(
        "run", str(agent), "--inject", "{}", "--until-idle", "--log-format", "json", env=env
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [failed] = [line for line in lines if "failed on user_prompt_submit" in line["message"]]
    assert re.fullmatch(r"[0-9a-f]{32}", failed["trace_id"]), failed
    assert failed["trace_id"] != "0" * 32


def test_log_level_decides_which_lines_are_written(tmp_path: Path) -> None:
    """A failing hook logs a warning: shown at --log-level warning (and by default), not at
    error."""
    agent = failing_on_prompts(tmp_path, "levels")
    run = ["run", str(agent), "--inject", "{}", "--until-idle", "--log-format", "json"]
    warned = tether(*run, "--log-level", "warning")
    quiet = tether(*run, "--log-level", "error")
    assert warned.returncode == quiet.returncode == 0, (warned.stderr, quiet.stderr)
    assert "failed on user_prompt_submit" in warned.stderr
    assert "failed on user_prompt_submit" not in quiet.stderr
    assert "exited 3" in quiet.stdout  # the run's own output still tells


# -- validate, inject, publish, ps, hooks test -----------------------------------------------


async def test_validate_json_reports_each_file_and_a_typo_gets_a_did_you_mean(
    cli: Any, tmp_path: Path
) -> None:
    good = write(tmp_path / "good.agent", "name: good\nmodel: scripted\n")
    bad = write(tmp_path / "bad.agent", "name: bad\nmodel: scripted\ninstructons: hi\n")
    done = await cli("validate", str(good), str(bad), "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["valid"] is False
    first, second = report["files"]
    assert (first["ok"], first["name"], first["errors"]) == (True, "good", [])
    assert second["ok"] is False
    [error] = second["errors"]
    assert error["line"] == 3
    assert "unknown key 'instructons' (did you mean 'instructions'?)" in error["message"]


async def test_inject_json_prints_the_api_s_answer(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    _, api = served
    done = await cli("inject", "ops", "--payload", '{"x": 1}', "--json", "--wait", "0", *at(api))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["process"], answer["status"]) == ("ops", "queued")


async def test_inject_waits_for_the_outcome_and_exits_1_when_user_prompt_submit_refuses(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    """Regression: `tether inject` exited 0 for an event a user_prompt_submit hook refused
    after it was queued, though cli.md says it exits 1 for a dead-lettered event."""
    runtime, api = served
    process = runtime.get("ops")
    assert process is not None

    async def refuses(ctx: HookContext) -> None:
        if ctx.data.get("prompt", "").find("refund") >= 0:
            raise HookBlocked("refunds need a human")

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, refuses, name="gate")
    done = await cli("inject", "ops", "--payload", '{"ask": "refund me"}', *at(api))
    assert done.returncode == 1, done.stdout
    assert "dead-lettered by ops: blocked by hook" in done.stdout
    assert "refunds need a human" in done.stdout
    done = await cli("inject", "ops", "--payload", '{"ask": "hello"}', "--json", *at(api))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["status"], answer["outcome"]) == ("done", "success")


async def test_inject_trigger_id_must_name_a_trigger_of_the_process(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    runtime, api = served
    missing = await cli("inject", "ops", "--trigger-id", "nope", *at(api))
    known = await cli("inject", "ops", "--trigger-id", "on-deploy", "--json", *at(api))
    assert missing.returncode == 1
    assert "has no trigger 'nope' (its triggers: on-deploy)" in missing.stderr
    assert known.returncode == 0, known.stderr
    process = runtime.get("ops")
    assert process is not None
    event_id = json.loads(known.stdout)["event_id"]
    await asyncio.sleep(0.2)
    [run] = [r for r in process.hook_runs(event="task_created")][-1:]
    assert run.outcome == "passed"
    assert event_id in process.transcripts


async def test_publish_delivers_a_runtime_event_from_the_shell(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    _, api = served
    done = await cli("publish", "deployed", "--payload", '{"v": 3}', *at(api))
    assert done.returncode == 0, done.stderr
    assert "queued (deployed)" in done.stdout
    nobody = await cli("publish", "nobody", *at(api))
    assert "no event trigger listens for 'nobody'" in nobody.stdout


async def test_ps_and_hooks_list_count_the_same_hooks_shared_ones_marked(
    cli: Any, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    _, api = served
    ps = await cli("ps", *at(api))
    listed = await cli("hooks", "list", "--process", "ops", "--json", *at(api))
    hooks = json.loads(listed.stdout)
    row = next(line for line in ps.stdout.splitlines() if line.startswith("ops "))
    assert f"{len(hooks)} (1 shared)" in row
    assert sorted(h["source"] for h in hooks) == ["code", "shared"]


async def test_hooks_test_shows_what_the_program_wrote_to_stderr(cli: Any, tmp_path: Path) -> None:
    script = write(tmp_path / "h.py", "import sys\nprint('checking the prompt', file=sys.stderr)\n")
    done = await cli(
        "hooks", "test", "user_prompt_submit", "--command", f"{sys.executable} {script}"
    )
    assert done.returncode == 0, done.stderr
    assert "stderr" in done.stdout
    assert "checking the prompt" in done.stdout


def test_run_shows_a_failing_mcp_server_by_default_and_counts_mcp_servers(
    tmp_path: Path,
) -> None:
    """Regression: an MCP server that could not start showed nothing in `tether run` (its
    tools silently missing; the reconnect warnings only at --log-level warning), and the
    header counted hooks and triggers, not MCP servers."""
    crash = [sys.executable, "-c", "import sys; sys.stderr.write('no orders db'); sys.exit(3)"]
    agent = write_manifest(
        tmp_path / "a.agent",
        name="a",
        model="scripted",
        mcp_servers=[{"name": "orders", "command": crash}],
    )
    done = tether("run", str(agent), "--inject", "{}", "--until-idle")
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0]
    assert header.endswith("0 hook(s), 0 trigger(s), 1 MCP server(s)")
    [state] = [line for line in done.stdout.splitlines() if line.startswith("  mcp ")]
    assert "a/orders: reconnecting" in state
    assert "its tools are not offered until it connects" in state
    assert "no orders db" in done.stdout
    live = [line for line in done.stdout.splitlines() if " mcp  " in line[:20]]
    assert live, done.stdout
    assert "MCP server 'orders': " in live[0]
    assert "reconnecting in" in live[0]


def test_piped_live_lines_keep_each_value_whole(tmp_path: Path) -> None:
    """Regression: `tether run ... | cat` cut the prompt and the answer at 70 and 110
    characters, though piped output is whole (docs/cli.md)."""
    agent = write_manifest(tmp_path / "a.agent", name="a", model="scripted")
    ticket = "the printer on floor three jams on every second page " * 3 + "END-OF-TICKET"
    done = tether("run", str(agent), "--inject", json.dumps({"ticket": ticket}), "--until-idle")
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if "user_prompt_submit" in line]
    assert "END-OF-TICKET" in line
    assert "..." not in line


def test_the_live_view_prints_what_a_claude_code_hook_tells_the_operator(tmp_path: Path) -> None:
    """A Claude Code hook's systemMessage is shown under its run in `tether run`'s live view."""
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    answer = '{"systemMessage": "routed to the night shift"}'
    hook = {"type": "command", "command": f"cat >/dev/null; echo '{answer}'"}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}))
    agent = write_manifest(
        tmp_path / "a.agent",
        name="a",
        model="scripted",
        claude_code_hooks=[".claude/settings.json"],
    )
    done = tether("run", str(agent), "--inject", '{"ticket": "printer"}', "--until-idle")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.strip().startswith("notice")]
    assert lines[at].split(None, 1)[1] == "routed to the night shift"
    assert "hook cat >/dev/null; echo" in lines[at - 1]  # under its run
