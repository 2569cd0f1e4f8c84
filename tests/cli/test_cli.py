"""The ``tether`` command.

Most commands run in this process through ``tether.cli.main`` (as the installed script does,
exit status included); signals, tracebacks and import costs are checked in real subprocesses.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from _cli_support import CLI, Done, run_cli, running, serving
from _imports_support import loaded_after
from _manifest_support import write_manifest
from _net_support import free_port
from tether import AgentRuntime, OrchestrationAPI
from tether.cli import main
from tether.manifest import render_json_schema

ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


def tether(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=ENV,
        check=False,
    )


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``tether ARGS...`` in this process; returns a Done."""
    return functools.partial(run_cli, capsys)


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


#: The words of the header of ``tether ps``'s table.
PS_HEADER = [
    "NAME",
    "STATE",
    "RUNS",
    "QUEUED",
    "DEAD",
    "LETTERS",
    "HOOKS",
    "TOKENS",
    "COST",
    "UPTIME",
]

GATE = """\
import json, sys
event = json.load(sys.stdin)
prompt = event["data"]["prompt"]
if "refund" in prompt.lower():
    print(json.dumps({"block": True, "reason": "refunds need a human"}))
elif "@" in prompt:
    data = dict(event["data"], prompt=prompt.replace("jane@example.com", "[email]"))
    print(json.dumps({"data": data}))
"""


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    """A scripted agent with a command hook that blocks refunds and masks an email address."""
    write(tmp_path / "gate.py", GATE)
    gate = [sys.executable, "${TETHER_MANIFEST_DIR}/gate.py"]
    return write_manifest(
        tmp_path / "triage.agent",
        name="triage",
        model="scripted",
        instructions="You triage support tickets.",
        hooks=[{"event": "user_prompt_submit", "command": gate, "fail_closed": True}],
    )


# -- validate ----------------------------------------------------------------------------------


def test_validate_accepts_good_manifests(cli: Any, agent: Path) -> None:
    done = cli("validate", str(agent))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok", str(agent), "(triage:", "0", "triggers,", "1", "hook)"]


def test_validate_prints_every_error_with_its_path_and_line(
    cli: Any, tmp_path: Path, agent: Path
) -> None:
    bad = write(
        tmp_path / "bad.agent",
        """\
        name: bad
        entrypoint: main.py
        triggers:
          - {type: webhook, webhook_path: /t}
          - type: cron
            cron: "* * * * *"
            cron_expression: nope
        hooks:
          - {event: task_created, callback: mod.fn}
        """,
    )
    done = cli("validate", str(agent), str(bad))
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith(f"ok     {agent}")
    assert done.stderr.splitlines() == [
        f"error: {bad}:6: triggers[1].cron: unknown key 'cron'; allowed keys: id, type, "
        "cron_expression, payload",
        f"error: {bad}:7: triggers[1].cron_expression: cron_expression 'nope' does not parse; "
        "expected five fields (minute hour day-of-month month day-of-week), e.g. '*/5 * * * *'",
        f"error: {bad}:9: hooks[0]: a manifest hook runs a 'command'; Python callbacks are "
        "registered in code (process.hooks)",
        f"warning: {bad}:2: the top-level 'entrypoint' key is not read by the runtime and will "
        "be an error in a future version; remove it",
        "1 of 2 manifests are valid",
    ]


def test_validate_reports_bad_yaml_and_missing_files(cli: Any, tmp_path: Path) -> None:
    broken = write(tmp_path / "broken.agent", "name: a\nhooks: [\n")
    done = cli("validate", str(broken), str(tmp_path / "missing.agent"))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"error: {broken}:3: not valid YAML: ")
    assert (
        lines[1] == f"error: {tmp_path / 'missing.agent'}: cannot read: No such file or directory"
    )


def test_schema_prints_the_shipped_json_schema(cli: Any) -> None:
    done = cli("schema")
    assert done.returncode == 0
    assert done.stdout == render_json_schema()


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_errors_are_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    done = tether("run", str(tmp_path / "missing.agent"))
    assert done.returncode == 1
    assert (
        done.stderr
        == f"error: {tmp_path / 'missing.agent'}: cannot read: No such file or directory\n"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    done = tether("--debug", "run", str(tmp_path / "missing.agent"))
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr


def test_serve_refuses_a_public_host_without_a_token(cli: Any) -> None:
    done = cli("serve", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "error: refusing to serve the control API on 0.0.0.0 without a token"
    )
    assert len(done.stderr.splitlines()) == 1


def test_usage_errors_exit_2(cli: Any) -> None:
    done = cli("inject", "triage", "--payload", "{nope")
    assert done.returncode == 2
    assert "--payload is not valid JSON" in done.stderr


def test_the_cli_package_imports_only_typer() -> None:
    heavy = ["starlette", "uvicorn", "pydantic", "httpx", "openai", "yaml"]
    assert loaded_after("import tether.cli", heavy) == []


def test_help_lists_the_commands() -> None:
    done = tether("--help")
    assert done.returncode == 0
    for command in ("run", "serve", "validate", "inject", "ps", "hooks", "schema"):
        assert f"  {command} " in done.stdout


# -- run ---------------------------------------------------------------------------------------


def test_run_shows_events_and_hook_outcomes_as_they_happen(cli: Any, agent: Path) -> None:
    done = cli(
        "run",
        str(agent),
        "--inject",
        '{"ticket": "Login page is down"}',
        "--inject",
        '{"ticket": "Please refund order 1182"}',
        "--inject",
        '{"ticket": "jane@example.com cannot log in"}',
        "--until-idle",
    )
    assert done.returncode == 1, done.stderr  # --until-idle: one event was dead-lettered
    lines = [line[13:] for line in done.stdout.splitlines() if line[:2].isdigit()]
    events = [line.split()[0] for line in lines]
    assert events[0] == "session_start"
    assert events[-1] == "session_end"
    assert events.count("task_completed") == 3
    out = done.stdout
    assert "user_prompt_submit  refused" in out
    assert "gate.py: blocked" in out
    assert "outcome=blocked" in out
    assert "dead letter         " in out
    assert "blocked by hook: refunds need a human" in out
    assert "gate.py: applied (prompt rewritten)" in out
    assert "[email] cannot log in" in out
    assert "triage stopped: 2 run(s), 1 dead letter(s)" in out


@pytest.mark.slow
async def test_run_stops_cleanly_on_sigint_firing_session_end(tmp_path: Path) -> None:
    port = free_port()
    agent = write(
        tmp_path / "hooked.agent",
        f"""\
        name: hooked
        model: scripted
        triggers:
          - {{type: webhook, webhook_path: /tickets, webhook_port: {port}}}
          - {{type: cron, cron_expression: "0 0 1 1 *"}}
        """,
    )
    async with running(*CLI, "run", str(agent), env=ENV) as tether:
        await tether.read_until("Ctrl-C stops", what="tether run")
        import httpx

        async with httpx.AsyncClient() as client:
            r = await client.post(f"http://127.0.0.1:{port}/tickets", json={"ticket": "hi"})
        assert r.status_code == 202
        await asyncio.sleep(0.3)
        out, err = await tether.stop(signal.SIGINT)
    proc, seen = tether.proc, tether.seen
    text = "".join(seen) + out
    assert proc.returncode == 0, err
    assert f"webhook  http://127.0.0.1:{port}/tickets -> hooked/webhook-0" in text
    assert "trigger  cron-1 (cron) 0 0 1 1 *" in text
    assert "task_completed      event_id=" in text
    assert "session_end         reason=stop invocation_count=1" in text
    assert "hooked stopped: 1 run(s), 0 dead letter(s)" in text


@pytest.mark.slow
@pytest.mark.parametrize("command", [["serve"], ["runtime", "start"]])
async def test_serve_loads_manifests_and_stops_on_sigterm(agent: Path, command: list[str]) -> None:
    """``tether runtime start`` (the reference's name) is ``tether serve``."""
    port = free_port()
    async with running(*CLI, *command, str(agent), "--port", str(port), env=ENV) as tether:
        await tether.read_until("Ctrl-C stops")
        url = f"http://127.0.0.1:{port}"
        ps = await asyncio.create_subprocess_exec(
            *CLI, "ps", "--url", url, stdout=asyncio.subprocess.PIPE, env=ENV
        )
        ps_out, _ = await ps.communicate()
        out, err = await tether.stop(signal.SIGTERM)
    proc, seen = tether.proc, tether.seen
    assert proc.returncode == 0, err
    assert f"control API on http://127.0.0.1:{port}/api/v1" in "".join(seen)
    assert ps.returncode == 0
    assert ps_out.decode().split()[:11] == [*PS_HEADER, "triage"]
    assert "session_end" in out


# -- inject and ps against a running API ------------------------------------------------------


@pytest.fixture
async def api() -> AsyncIterator[OrchestrationAPI]:
    runtime = AgentRuntime()
    await runtime.start_all()
    await runtime.add_process("triage", {"model": "scripted"})
    api = OrchestrationAPI(runtime, port=0, token="t0ken", webhooks=False)
    await api.start()
    yield api
    await api.stop()
    await runtime.stop_all()


async def test_inject_sends_an_event_to_a_running_api(cli: Any, api: OrchestrationAPI) -> None:
    done = await asyncio.to_thread(
        cli,
        "inject",
        "triage",
        "--payload",
        '{"ticket": "hi"}',
        "--url",
        api.url,
        "--token",
        "t0ken",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("event ")
    assert done.stdout.endswith(" done by triage: success\n")
    process = api.runtime.get("triage")
    assert process is not None
    event_id = done.stdout.split()[1]
    async with asyncio.timeout(10):
        while event_id not in process.transcripts:
            await asyncio.sleep(0.01)


async def test_inject_reports_a_dead_lettered_event(cli: Any, api: OrchestrationAPI) -> None:
    process = api.runtime.get("triage")
    assert process is not None
    await process.stop()
    done = await asyncio.to_thread(cli, "inject", "triage", "--url", api.url, "--token", "t0ken")
    assert done.returncode == 1
    assert "dead-lettered by triage: process stopped" in done.stdout


async def test_inject_and_ps_report_api_errors_in_one_line(cli: Any, api: OrchestrationAPI) -> None:
    missing = await asyncio.to_thread(cli, "inject", "nope", "--url", api.url, "--token", "t0ken")
    unauthorized = await asyncio.to_thread(cli, "ps", "--url", api.url)
    unreachable = await asyncio.to_thread(cli, "ps", "--url", f"http://127.0.0.1:{free_port()}")
    assert (missing.returncode, missing.stderr) == (
        1,
        "error: PROCESS_NOT_FOUND: no process named 'nope'\n",
    )
    assert unauthorized.returncode == 1
    assert unauthorized.stderr.startswith("error: UNAUTHORIZED: ")
    assert unreachable.returncode == 1
    assert "cannot reach the tether API" in unreachable.stderr
    assert "is `tether serve` running?" in unreachable.stderr


async def test_ps_lists_processes_as_a_table_or_json(cli: Any, api: OrchestrationAPI) -> None:
    table = await asyncio.to_thread(cli, "ps", "--url", api.url, "--token", "t0ken")
    raw = await asyncio.to_thread(cli, "ps", "--url", api.url, "--token", "t0ken", "--json")
    assert table.returncode == 0
    assert table.stdout.split()[:12] == [*PS_HEADER, "triage", "running"]
    [process] = json.loads(raw.stdout)
    assert (process["name"], process["state"]) == ("triage", "running")


async def test_ps_says_when_there_are_no_processes(cli: Any, api: OrchestrationAPI) -> None:
    await api.runtime.remove_process("triage")
    done = await asyncio.to_thread(cli, "ps", "--url", api.url, "--token", "t0ken")
    assert done.stdout == "no processes\n"


async def test_serve_runs_the_api_with_the_manifests_until_stopped(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = {"token": None, "allow_command_deploys": True, "quiet": False}
    async with serving([agent], **options) as url:
        import httpx

        async with httpx.AsyncClient(base_url=f"{url}/api/v1") as client:
            r = await client.post(
                "/processes/triage/inject", json={"payload": {"ticket": "jane@example.com"}}
            )
            event_id = r.json()["event_id"]
            async with asyncio.timeout(10):
                while "task_completed" not in capsys.readouterr().out:
                    await asyncio.sleep(0.01)
    out = capsys.readouterr().out
    assert "session_end" in out
    assert "triage stopped: 1 run(s), 0 dead letter(s)" in out
    assert event_id


async def test_serve_reports_every_bad_manifest(
    tmp_path: Path, agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path / "bad.agent", "name: bad\nmax_turns: many\n")
    worse = write(tmp_path / "worse.agent", "name: [\n")
    with pytest.raises(SystemExit) as exited:
        await asyncio.to_thread(main, ["serve", str(agent), str(bad), str(worse)])
    assert exited.value.code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: {bad}:2: max_turns: ")
    assert err[1].startswith(f"error: {worse}:2: not valid YAML")


# -- hooks test --------------------------------------------------------------------------------


@pytest.fixture
def hooks_test(cli: Any, tmp_path: Path) -> Any:
    def run(event: str, program: str, *args: str) -> Done:
        script = write(tmp_path / "hook.py", program)
        return cli("hooks", "test", event, "--command", f"{sys.executable} {script}", *args)

    return run


@pytest.mark.parametrize(
    ("event", "program", "data", "code", "explained"),
    [
        pytest.param(
            "user_prompt_submit",
            GATE,
            '{"prompt": "Please refund order 1182"}',
            0,
            [
                '"prompt": "Please refund order 1182"',  # what went to stdin
                'answer   {"block": true, "reason": "refunds need a human"}',
                "meaning  BLOCKED (refunds need a human): the run is skipped and the event "
                "dead-lettered ('blocked by hook'), before any budget is counted",
            ],
            id="a_block",
        ),
        pytest.param(
            "user_prompt_submit",
            GATE,
            '{"prompt": "jane@example.com is locked out"}',
            0,
            [
                "meaning  data replaced; changed: prompt",
                "the model receives the rewritten prompt",
                "[email] is locked out",
            ],
            id="a_rewritten_prompt",
        ),
        pytest.param(
            "task_created",
            "import sys; sys.stdin.read()\n",
            None,
            0,
            ["answer   (no output)", "meaning  passed: nothing changed"],
            id="silence_as_passing",
        ),
        pytest.param(
            "user_prompt_submit",
            "import sys; sys.stderr.write('boom'); sys.exit(2)\n",
            None,
            1,
            [
                "answer   hook error: hook command",
                "exited 2: boom",
                "with fail_closed: true it blocks the action",
            ],
            id="an_error_and_exits_1",
        ),
        pytest.param(
            "session_end",
            'print(\'{"block": true, "reason": "no"}\')\n',
            None,
            0,
            ["session_end cannot be blocked: the block is ignored"],
            id="that_some_events_cannot_be_blocked",
        ),
        pytest.param(
            "task_completed",
            'print(\'{"data": {"outcome": "failed"}, "log": "hi"}\')\n',
            None,
            0,
            ["log      hi", "a process reads back only the prompt of user_prompt_submit"],
            id="changes_that_are_not_read_back",
        ),
    ],
)
def test_hooks_test_explains(
    hooks_test: Any, event: str, program: str, data: str | None, code: int, explained: list[str]
) -> None:
    result = hooks_test(event, program, *(("--data", data) if data else ()))
    assert result.returncode == code, result.stdout
    for line in explained:
        assert line in result.stdout


def test_hooks_test_refuses_an_unknown_event() -> None:
    done = tether("hooks", "test", "on_fire", "--command", "true")
    assert done.returncode == 1
    assert done.stderr.startswith("error: unknown hook event 'on_fire'; valid events are: ")


# -- the example agent -------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.slow
def test_the_example_agent_validates_and_runs_with_its_hook_programs(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRIAGE_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    monkeypatch.setenv("TRIAGE_MODEL", "scripted")
    monkeypatch.setenv("TRIAGE_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("TRIAGE_WEBHOOK_PORT", str(free_port()))
    manifest = str(EXAMPLES / "triage.agent")
    checked = cli("validate", manifest)
    assert checked.returncode == 0, checked.stderr
    done = cli(
        "run",
        manifest,
        "--inject",
        '{"ticket": "Please reset my password"}',
        "--inject",
        '{"ticket": "jane@example.com cannot check out"}',
        "--until-idle",
    )
    assert done.returncode == 1, done.stderr  # --until-idle: the password reset dead-lettered
    assert "policy_server.py: blocked" in done.stdout
    assert "blocked by hook: password resets go to the identity team" in done.stdout
    assert "redact_pii.py: applied (prompt rewritten)" in done.stdout
    assert 'prompt="ticket: [email] cannot check out' in done.stdout  # whole when piped
    assert len((tmp_path / "audit.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
def test_the_example_agent_runs_its_hooks_with_tether_s_python_whatever_python3_is_on_path(
    tmp_path: Path,
) -> None:
    """Regression: without an activated venv (`.venv/bin/tether run examples/triage.agent`),
    the example's hooks ran the first `python3` on PATH, which has no tether: every ticket was
    refused (its policy hook fails closed) and the MCP tools were dropped."""
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / "python3"
    shim.write_text("#!/bin/sh\necho 'not the python you want' >&2\nexit 1\n")
    shim.chmod(0o755)
    env = {k: v for k, v in ENV.items() if k not in ("TETHER_PYTHON", "VIRTUAL_ENV")}
    env.update(
        PATH=f"{shims}{os.pathsep}{env.get('PATH', '')}",
        TRIAGE_AUDIT_LOG=str(tmp_path / "audit.jsonl"),
        TRIAGE_MODEL="scripted",
        TRIAGE_WEBHOOK_SECRET="s3cret",
        TRIAGE_WEBHOOK_PORT=str(free_port()),
    )
    ticket = '{"ticket": "jane@example.com cannot check out"}'
    argv = [*CLI, "run", str(EXAMPLES / "triage.agent"), "--inject", ticket, "--until-idle"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "redact_pii.py: applied (prompt rewritten)" in done.stdout
    assert "policy_server.py: applied" in done.stdout
    assert len((tmp_path / "audit.jsonl").read_text().splitlines()) == 1


@pytest.mark.slow
async def test_history_md_s_disable_and_enable_commands_work_on_the_example_agent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `tether hooks disable triage policy` (docs/history.md) answered
    HOOK_NOT_FOUND: no hook of the example had the tag."""
    monkeypatch.setenv("TRIAGE_MODEL", "scripted")
    monkeypatch.setenv("TRIAGE_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("TRIAGE_WEBHOOK_PORT", str(free_port()))
    options = {"token": None, "allow_command_deploys": False, "quiet": True}
    async with serving([EXAMPLES / "triage.agent"], **options) as url:
        off = await asyncio.to_thread(
            run_cli, capsys, "hooks", "disable", "triage", "policy", "--url", url
        )
        on = await asyncio.to_thread(
            run_cli, capsys, "hooks", "enable", "triage", "policy", "--url", url
        )
    assert (off.returncode, on.returncode) == (0, 0), off.stderr + on.stderr
    assert "policy_server.py" in off.stdout


POLICY_SERVER = f"{sys.executable} {EXAMPLES / 'hooks' / 'policy_server.py'}"
PASSWORD = '{"prompt": "Please reset my password"}'


def test_hooks_test_persistent_sends_one_json_line_with_an_id_and_explains_the_answer(
    cli: Any,
) -> None:
    """Regression: a persistent hook's program was tested as a one-shot one: it skipped the
    line without an id, and the test answered `passed: nothing changed`."""
    done = cli(
        "hooks", "test", "user_prompt_submit", "--persistent",
        "--command", POLICY_SERVER, "--data", PASSWORD,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "stdin (one JSON line)" in done.stdout
    assert '"id": "1"' in done.stdout
    assert 'answer   {"id": "1", "block": true, "reason": "password resets go to the' in done.stdout
    assert "meaning  BLOCKED (password resets go to the identity team)" in done.stdout


def test_hooks_test_of_a_program_that_writes_nothing_hints_at_persistent(cli: Any) -> None:
    done = cli(
        "hooks", "test", "user_prompt_submit", "--command", POLICY_SERVER, "--data", PASSWORD
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "answer   (no output)" in done.stdout
    assert "test it with --persistent" in done.stdout


def test_hooks_test_persistent_refuses_the_claude_code_protocol(cli: Any) -> None:
    done = cli(
        "hooks", "test", "user_prompt_submit", "--persistent", "--protocol", "claude-code",
        "--command", POLICY_SERVER,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--persistent speaks tether's JSON lines" in done.stderr


async def test_the_live_view_registers_no_hook_of_its_own(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `tether serve`/`run` printed events through 15 shared `tether-cli` callback
    hooks, which showed in ps, hooks list, dry runs, runs history and metrics."""
    import httpx

    options = {"token": None, "allow_command_deploys": True, "quiet": False}
    async with (
        serving([agent], **options) as url,
        httpx.AsyncClient(base_url=f"{url}/api/v1") as client,
    ):
        catalog = (await client.get("/hooks/catalog")).json()["hooks"]
        r = await client.post(
            "/processes/triage/inject", json={"payload": {"ticket": "hi"}, "wait": 10}
        )
        assert r.json()["status"] == "done", r.text
        runs = (await client.get("/processes/triage/hooks/runs")).json()["runs"]
    assert [h for h in catalog if h["source"] == "shared"] == []
    assert all(h["name"] != "tether-cli" for h in catalog)
    assert all(run["hook_name"] != "tether-cli" for run in runs)
    out = capsys.readouterr().out
    assert "task_created " in out  # the events, still printed
    assert "task_completed " in out


def test_hooks_test_explains_a_refused_tool_call(hooks_test: Any) -> None:
    result = hooks_test("pre_tool_use", 'print(\'{"block": true, "reason": "not rm"}\')\n')
    assert result.returncode == 0
    assert "BLOCKED (not rm): the tool is not run" in result.stdout


def test_hooks_test_explains_rewritten_tool_arguments(hooks_test: Any) -> None:
    program = (
        "import json, sys\n"
        "data = json.load(sys.stdin)['data']\n"
        "data['arguments'] = {'order_id': 2}\n"
        "print(json.dumps({'data': data}))\n"
    )
    result = hooks_test("pre_tool_use", program)
    assert result.returncode == 0
    assert "data replaced; changed: arguments" in result.stdout
    assert "the tool runs with the rewritten arguments" in result.stdout


def test_hooks_test_runs_a_claude_code_hook_with_its_input_and_rules(hooks_test: Any) -> None:
    program = (
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "print(event['hook_event_name'] + ' ' + event['tool_name'], file=sys.stderr)\n"
        "sys.exit(2)\n"
    )
    result = hooks_test("pre_tool_use", program, "--protocol", "claude-code")
    assert result.returncode == 0, result.stderr
    assert "protocol claude-code (PreToolUse)" in result.stdout
    assert '"hook_event_name": "PreToolUse"' in result.stdout
    assert "BLOCKED (PreToolUse " in result.stdout
    assert "the tool is not run" in result.stdout


def test_hooks_test_refuses_an_unknown_protocol(hooks_test: Any) -> None:
    result = hooks_test("pre_tool_use", "pass\n", "--protocol", "cursor")
    assert result.returncode == 2
    assert "--protocol must be 'tether' or 'claude-code'" in result.stderr
