"""``tether hooks events|list|runs|enable|disable|dry-run`` against a real control API, and
``--plugin`` of ``tether run`` and ``tether serve``.

Commands run in this process through ``tether.cli.main`` (exit status included); ``runs
--follow`` runs in a real subprocess, stopped by SIGINT as a user would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _cli_support import CLI, running, serving
from _manifest_support import write_manifest
from tether import AgentRuntime, OrchestrationAPI
from tether.cli._hooks import parse_since
from tether.hooks import HookConfig, HookManager, Plugin, PluginContext

ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
TOKEN = "t0ken"

GATE = """\
import json, sys
event = json.load(sys.stdin)
prompt = event["data"]["prompt"]
if "refund" in prompt.lower():
    print(json.dumps({"block": True, "reason": "refunds need a human"}))
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    """A scripted agent from a manifest: a tagged gate that blocks refunds, an async notifier."""
    write(tmp_path / "gate.py", GATE)
    gate = {
        "event": "user_prompt_submit",
        "command": [sys.executable, "${TETHER_MANIFEST_DIR}/gate.py"],
        "name": "gate",
        "tag": "policy",
        "matcher": {"trigger_type": "manual"},
    }
    notify = {"event": "task_completed", "command": ["true"], "name": "notify", "mode": "async"}
    return write_manifest(
        tmp_path / "triage.agent", name="triage", model="scripted", hooks=[gate, notify]
    )


@pytest.fixture
async def api(agent: Path) -> AsyncIterator[OrchestrationAPI]:
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    await runtime.add_manifest(agent)
    await runtime.add_process("billing", {"model": "scripted"})
    api = OrchestrationAPI(runtime, port=0, token=TOKEN, webhooks=False)
    await api.start()
    yield api
    await api.stop()
    await runtime.stop_all()


def at(api: OrchestrationAPI) -> tuple[str, ...]:
    return ("--url", api.url, "--token", TOKEN)


async def inject(api: OrchestrationAPI, text: str) -> str:
    process = api.runtime.get("triage")
    assert process is not None
    async with httpx.AsyncClient(
        base_url=f"{api.url}/api/v1", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as client:
        r = await client.post("/processes/triage/inject", json={"payload": {"ticket": text}})
    event_id: str = r.json()["event_id"]
    async with asyncio.timeout(10):
        while len(process.hook_runs(event="task_completed")) < len(
            process.hook_runs(event="user_prompt_submit")
        ) or not process.hook_runs(event="user_prompt_submit"):
            await asyncio.sleep(0.01)
    return event_id


def rows(stdout: str) -> list[list[str]]:
    """The table's rows, split on runs of two or more spaces (cells may hold one space)."""
    import re

    return [re.split(r"\s{2,}", line.strip()) for line in stdout.splitlines() if line.strip()]


# -- events and the catalog ------------------------------------------------------------------------


async def test_hooks_events_prints_the_taxonomy_as_a_table(cli: Any, api: OrchestrationAPI) -> None:
    done = await cli("hooks", "events", *at(api))
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table[0] == ["EVENT", "FAMILY", "BLOCKABLE", "MATCHERS", "WHAT A BLOCK DOES"]
    assert len(table) == 19
    assert table[1][:4] == ["session_start", "session", "no", "-"]
    task_created = next(r for r in table if r[0] == "task_created")
    assert task_created[:4] == ["task_created", "task", "yes", "trigger_type, trigger_id"]


async def test_hooks_events_filters_blockable_and_prints_schemas_as_json(
    cli: Any, api: OrchestrationAPI
) -> None:
    blockable = await cli("hooks", "events", "--blockable", *at(api))
    others = await cli("hooks", "events", "--not-blockable", "--json", *at(api))
    assert len(rows(blockable.stdout)) == 11
    assert all(r[2] == "yes" for r in rows(blockable.stdout)[1:])
    events = json.loads(others.stdout)
    assert len(events) == 8
    assert all("payload_schema" in e and "patch_schema" in e for e in events)


async def test_hooks_events_filters_by_family_and_reports_an_unknown_one(
    cli: Any, api: OrchestrationAPI
) -> None:
    tasks = await cli("hooks", "events", "--family", "task", *at(api))
    bad = await cli("hooks", "events", "--family", "tools", *at(api))
    assert [r[:2] for r in rows(tasks.stdout)[1:]] == [
        ["task_created", "task"],
        ["task_completed", "task"],
        ["agent_stop", "task"],
    ]
    assert bad.returncode == 2
    assert bad.stderr.startswith(
        "error: --family 'tools' is not a family; families: session, prompt, "
        "permission, subagent, context, trigger, config, task, tool"
    )


async def test_hooks_list_prints_the_catalog(
    cli: Any, api: OrchestrationAPI, tmp_path: Path
) -> None:
    done = await cli("hooks", "list", *at(api))
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert " ".join(table[0]) == (
        "PROCESS EVENT # ID NAME SOURCE MODE KIND PRIORITY TIMEOUT FLAGS MATCHER ENABLED COMMAND"
    )
    # Piped, a row keeps every column whole on one line: a long command is never cut short.
    gate, notify = (next(r for r in table if r[4:5] == [name]) for name in ("gate", "notify"))
    assert [gate[i] for i in (0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12)] == [
        "triage",
        "user_prompt_submit",
        "0",
        "gate",
        "manifest",
        "sync",
        "command",
        "0",
        "5s",
        "tag=policy",
        "trigger_type=manual",
        "yes",
    ]
    assert gate[13] == f"{sys.executable} {tmp_path / 'gate.py'}"
    assert (notify[1], notify[4], notify[6], notify[13]) == (
        "task_completed",
        "notify",
        "async",
        "true",
    )


async def test_hooks_list_filters_and_reports_a_bad_filter_in_one_line(
    cli: Any, api: OrchestrationAPI
) -> None:
    only_async = await cli("hooks", "list", "--mode", "async", "--json", *at(api))
    none = await cli("hooks", "list", "--process", "billing", *at(api))
    bad = await cli("hooks", "list", "--source", "yaml", *at(api))
    assert [h["name"] for h in json.loads(only_async.stdout)] == ["notify"]
    assert none.stdout == "no hooks\n"
    assert bad.returncode == 1
    assert bad.stderr == (
        "error: INVALID_QUERY: source: unknown value 'yaml'; allowed: code, config, manifest, "
        "plugin, inherited, shared\n"
    )


@pytest.mark.slow
async def test_the_url_and_token_can_come_from_the_environment(
    cli: Any, api: OrchestrationAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_URL", api.url)
    monkeypatch.setenv("TETHER_API_TOKEN", TOKEN)
    done = await cli("hooks", "list", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 2


# -- run history -----------------------------------------------------------------------------------


async def test_hooks_runs_prints_the_history_as_a_table(cli: Any, api: OrchestrationAPI) -> None:
    await inject(api, "Login is down")
    await inject(api, "Please refund order 1182")
    done = await cli("hooks", "runs", "triage", *at(api))
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table[0] == ["TIME", "EVENT", "HOOK", "ID", "SOURCE", "MODE", "OUTCOME", "MS", "ERROR"]
    outcomes = [(r[1], r[2], r[6]) for r in table[1:]]
    assert ("user_prompt_submit", "gate", "passed") in outcomes
    assert ("user_prompt_submit", "gate", "blocked") in outcomes
    assert ("task_completed", "notify", "passed") in outcomes
    blocked = next(r for r in table if r[6:7] == ["blocked"])
    assert blocked[-1] == "refunds need a human"


@pytest.mark.slow
async def test_hooks_runs_filters_by_event_outcome_hook_since_and_last(
    cli: Any, api: OrchestrationAPI
) -> None:
    await inject(api, "Login is down")
    await inject(api, "Refund order 7")

    async def runs(*args: str) -> list[dict[str, Any]]:
        done = await cli("hooks", "runs", "triage", "--json", *args, *at(api))
        assert done.returncode == 0, done.stderr
        found: list[dict[str, Any]] = json.loads(done.stdout)
        return found

    assert {r["hook_name"] for r in await runs("--event", "task_completed")} == {"notify"}
    assert [r["error"] for r in await runs("--outcome", "blocked")] == ["refunds need a human"]
    assert {r["hook_name"] for r in await runs("--hook", "gate")} == {"gate"}
    assert len(await runs("--last", "1")) == 1
    assert len(await runs("--since", "1h")) == len(await runs())
    assert await runs("--since", "2999-01-01T00:00:00Z") == []


async def test_hooks_runs_reports_bad_filters_and_an_empty_history(
    cli: Any, api: OrchestrationAPI
) -> None:
    empty = await cli("hooks", "runs", "billing", *at(api))
    bad = await cli("hooks", "runs", "triage", "--since", "last tuesday", *at(api))
    missing = await cli("hooks", "runs", "nope", *at(api))
    assert (empty.returncode, empty.stdout) == (0, "no hook runs recorded for billing\n")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: INVALID_QUERY: since: 'last tuesday' is not an ISO")
    assert missing.stderr == "error: PROCESS_NOT_FOUND: no process named 'nope'\n"


def test_since_takes_a_duration_ago_or_passes_a_time_through() -> None:
    from datetime import UTC, datetime, timedelta

    ten_minutes = datetime.fromisoformat(parse_since("10m") or "")
    assert abs(ten_minutes - (datetime.now(UTC) - timedelta(minutes=10))) < timedelta(seconds=5)
    assert parse_since("2025-01-31T09:30:00Z") == "2025-01-31T09:30:00Z"
    assert parse_since(None) is None


@pytest.mark.slow
async def test_hooks_runs_follow_prints_new_runs_until_ctrl_c(api: OrchestrationAPI) -> None:
    await inject(api, "Login is down")
    command = (*CLI, "hooks", "runs", "triage", "--follow", "--interval", "0.1", *at(api))
    async with running(*command, env=ENV) as tether:
        await tether.read_until("passed", what="follow")  # the runs recorded before it started
        await inject(api, "Refund order 9")
        # a run recorded while it follows
        await tether.read_until("refunds need a human", what="follow")
        out, err = await tether.stop(signal.SIGINT)
    assert tether.proc.returncode == 0, err
    lines = tether.seen + out.splitlines(keepends=True)
    assert lines[0].split()[:3] == ["TIME", "EVENT", "HOOK"]
    blocked = [line for line in lines if " blocked " in line]
    assert len(blocked) == 1  # each run once, though every poll looks back
    assert sum(" gate " in line for line in lines) == 2


@pytest.mark.slow
async def test_hooks_runs_follow_as_json_lines_ends_with_an_error_when_the_api_goes_away(
    cli: Any, api: OrchestrationAPI
) -> None:
    await inject(api, "Refund order 9")
    follow = asyncio.ensure_future(
        cli("hooks", "runs", "triage", "--follow", "--json", "--interval", "0.05", *at(api))
    )
    await asyncio.sleep(0.5)
    await api.stop()
    async with asyncio.timeout(30):
        done = await follow
    assert done.returncode == 1
    assert "cannot reach the tether API" in done.stderr
    runs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["hook_name"], r["outcome"]) for r in runs[:1]] == [("gate", "blocked")]
    assert len(runs) == len({(r["recorded_at"], r["hook_id"]) for r in runs})


# -- enable / disable / dry-run --------------------------------------------------------------------


async def test_hooks_disable_and_enable_by_tag(cli: Any, api: OrchestrationAPI) -> None:
    process = api.runtime.get("triage")
    assert process is not None
    [gate_id] = [i.hook_id for i in process.hooks.describe() if i.name == "gate"]

    disabled = await cli("hooks", "disable", "triage", "policy", *at(api))
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout == f"disabled {gate_id} (gate, user_prompt_submit) on triage\n"
    listed = await cli("hooks", "list", "--event", "user_prompt_submit", *at(api))
    assert rows(listed.stdout)[1][12] == "no"

    enabled = await cli("hooks", "enable", "triage", gate_id, *at(api))
    assert enabled.stdout == f"enabled {gate_id} (gate, user_prompt_submit) on triage\n"
    assert all(i.enabled for i in process.hooks.describe())


async def test_hooks_disable_and_enable_a_tag_containing_a_slash(
    cli: Any, api: OrchestrationAPI
) -> None:
    """Regression: the API's route did not match a tag with a '/', sent as %2F by the CLI."""
    process = api.runtime.get("billing")
    assert process is not None
    process.hooks.register_config(
        HookConfig(event="task_created", command=["true"], name="scan", tag="team/security")
    )
    [scan_id] = [i.hook_id for i in process.hooks.describe() if i.name == "scan"]

    disabled = await cli("hooks", "disable", "billing", "team/security", *at(api))
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout == f"disabled {scan_id} (scan, task_created) on billing\n"
    assert [i.enabled for i in process.hooks.describe()] == [False]

    enabled = await cli("hooks", "enable", "billing", "team/security", *at(api))
    assert enabled.stdout == f"enabled {scan_id} (scan, task_created) on billing\n"
    assert [i.enabled for i in process.hooks.describe()] == [True]


async def test_hooks_disable_of_an_unknown_selector_fails_in_one_line(
    cli: Any, api: OrchestrationAPI
) -> None:
    done = await cli("hooks", "disable", "triage", "nothing", *at(api))
    assert (done.returncode, done.stderr) == (
        1,
        "error: HOOK_NOT_FOUND: process 'triage' has no hook with the id or tag 'nothing'\n",
    )


async def test_hooks_dry_run_prints_the_trace_and_the_decision(
    cli: Any, api: OrchestrationAPI
) -> None:
    data = json.dumps({"prompt": "Refund order 1182", "trigger_type": "manual"})
    done = await cli("hooks", "dry-run", "triage", "user_prompt_submit", "--data", data, *at(api))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        "dry run of user_prompt_submit on triage: BLOCKED (refunds need a human); "
        "1 hook(s) ran, nothing was queued"
    )
    table = rows("\n".join(lines[1:3]))
    assert table[0] == ["#", "HOOK", "ID", "SOURCE", "MODE", "OUTCOME", "MS", "CHANGED", "ERROR"]
    assert [table[1][i] for i in (0, 1, 3, 5, 8)] == [
        "1",
        "gate",
        "manifest",
        "blocked",
        "refunds need a human",
    ]
    assert "data after the chain" in done.stdout
    process = api.runtime.get("triage")
    assert process is not None
    assert (process.invocation_count, len(process.dead_letters)) == (0, 0)


async def test_hooks_dry_run_shows_a_matcher_skip_and_a_pass(
    cli: Any, api: OrchestrationAPI
) -> None:
    data = json.dumps({"prompt": "Refund order 1182", "trigger_type": "webhook"})
    done = await cli("hooks", "dry-run", "triage", "user_prompt_submit", "--data", data, *at(api))
    assert done.stdout.splitlines()[0].startswith(
        "dry run of user_prompt_submit on triage: passed; 0 hook(s) ran"
    )
    assert rows(done.stdout)[2][5] == "skipped"


class Noting(Plugin):
    name = "noting"

    async def on_task_completed(self, ctx: PluginContext) -> None:
        ctx.warn("would page the on-call engineer")


async def test_hooks_dry_run_lists_what_plugins_would_have_kept(
    cli: Any, api: OrchestrationAPI
) -> None:
    process = api.runtime.get("triage")
    assert process is not None
    process.plugins.add(Noting())
    data = json.dumps({"event_id": "sample-1", "outcome": "success"})
    done = await cli("hooks", "dry-run", "triage", "task_completed", "--data", data, *at(api))
    assert done.returncode == 0, done.stderr
    assert "withheld" in done.stdout
    [row] = [r for r in rows(done.stdout) if r and r[0] == "plugin:noting.on_task_completed"]
    assert row[1:3] == ["warn", "sample-1"]
    assert "would page the on-call engineer" in row[3]
    assert process.plugins.warnings == {}


async def test_hooks_dry_run_refuses_bad_data_and_unknown_events(
    cli: Any, api: OrchestrationAPI
) -> None:
    not_object = await cli("hooks", "dry-run", "triage", "task_created", "--data", "[1]", *at(api))
    not_json = await cli("hooks", "dry-run", "triage", "task_created", "--data", "{", *at(api))
    unknown = await cli("hooks", "dry-run", "triage", "prompt_submitted", *at(api))
    assert not_object.returncode == 2
    assert "--data must be a JSON object" in not_object.stderr
    assert not_json.returncode == 2
    assert unknown.returncode == 1
    assert unknown.stderr.startswith(
        "error: VALIDATION_ERROR: event: unknown hook event 'prompt_submitted'"
    )


# -- --plugin --------------------------------------------------------------------------------------


async def test_run_with_a_plugin_activates_it(
    cli: Any, agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    done = await cli(
        "run",
        str(agent),
        "--plugin",
        "debrief",
        "--plugin",
        "debrief",
        "--inject",
        '{"ticket": "Login is down"}',
        "--until-idle",
    )
    assert done.returncode == 0, done.stderr
    assert "2 hook(s), 0 trigger(s), 0 MCP server(s), plugins: debrief\n" in done.stdout
    assert "hook plugin:debrief.on_task_completed [plugin]: passed" in done.stdout


async def test_run_with_an_unknown_plugin_fails_in_one_line_before_starting(
    cli: Any, agent: Path
) -> None:
    done = await cli("run", str(agent), "--plugin", "debreif")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: unknown plugin 'debreif'; available: debrief\n"


async def test_serve_with_an_unknown_plugin_fails_in_one_line(cli: Any, agent: Path) -> None:
    done = await cli("serve", str(agent), "--port", "0", "--plugin", "nope")
    assert (done.returncode, done.stderr) == (
        1,
        "error: unknown plugin 'nope'; available: debrief\n",
    )


async def test_serve_with_a_plugin_activates_it_on_the_manifest_processes(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = {"token": None, "allow_command_deploys": False, "quiet": True}
    served = serving([agent], plugins=["debrief"], **options)
    async with served as url, httpx.AsyncClient(base_url=f"{url}/api/v1") as client:
        r = await client.get("/hooks/catalog", params={"source": "plugin"})
    assert [(h["process"], h["owner"]) for h in r.json()["hooks"]] == [("triage", "debrief")]
    assert "  plugins  triage: debrief" in capsys.readouterr().out
