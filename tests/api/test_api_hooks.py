"""The hook endpoints of the control API over real HTTP: the event taxonomy, the catalog, run
history, enable/disable, dry runs, plugins named in a deployed config and their artifacts."""

from __future__ import annotations

import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from _api_support import runs_of, wait_for_runs
from _process_support import eventually
from conftest import HOOK_RUN_FIELDS, Install
from tether import AgentRuntime, HookBlocked, HookContext, HookEvent, OrchestrationAPI

TOKEN = "t0ken-for-hook-tests"
SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}

GATE = """\
import json, sys
event = json.load(sys.stdin)
prompt = event["data"]["prompt"]
if "refund" in prompt.lower():
    print(json.dumps({"block": True, "reason": "refunds need a human"}))
"""

MARKER = """\
import json, pathlib, sys
event = json.load(sys.stdin)
pathlib.Path({path!r}).write_text(event["event"] + "\\n")
data = dict(event["data"], prompt="[tagged] " + event["data"]["prompt"])
print(json.dumps({{"data": data}}))
"""

ACME = """\
from tether import Plugin

class AcmePlugin(Plugin):
    name = "acme"

    async def on_task_completed(self, ctx):
        ctx.emit_artifact({"outcome": ctx.data["outcome"]}, label="summary")
        ctx.warn("the ticket named no priority")
"""


def script(tmp_path: Path, body: str, name: str = "hook.py") -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> httpx.Response:
    r = await client.post("/processes", json={"name": name, "config": {**SCRIPTED, **config}})
    return r


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


async def inject(client: httpx.AsyncClient, name: str, ticket: str) -> str:
    r = await client.post(f"/processes/{name}/inject", json={"payload": {"ticket": ticket}})
    assert r.status_code == 202, r.text
    event_id: str = r.json()["event_id"]
    return event_id


# -- the event taxonomy ----------------------------------------------------------------------------


async def test_the_events_endpoint_describes_all_13_events_with_their_schemas(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/hooks/events")
    assert r.status_code == 200
    events = {e["event"]: e for e in r.json()["events"]}
    assert set(events) == {e.value for e in HookEvent}
    prompt = events["user_prompt_submit"]
    assert (prompt["family"], prompt["blockable"]) == ("prompt", True)
    assert "dead-lettered" in prompt["block_effect"]
    assert prompt["matcher_fields"] == ["trigger_type", "trigger_id"]
    assert prompt["payload_schema"]["required"] == sorted(
        ["prompt", "event_id", "trigger_id", "trigger_type"]
    )
    assert prompt["patch_schema"]["properties"] == {"prompt": {"type": "string"}}
    assert events["session_end"]["block_effect"] is None


async def test_the_events_endpoint_filters_by_blockable(client: httpx.AsyncClient) -> None:
    blockable = (await client.get("/hooks/events", params={"blockable": "true"})).json()
    others = (await client.get("/hooks/events", params={"blockable": "false"})).json()
    assert {e["event"] for e in blockable["events"]} == {
        "user_prompt_submit",
        "permission_request",
        "pre_tool_use",
        "subagent_start",
        "file_changed",
        "config_change",
        "task_created",
        "pre_model_call",
        "post_model_call",
        "agent_stop",
    }
    assert all(not e["blockable"] for e in others["events"])
    assert len(blockable["events"]) + len(others["events"]) == 18


@pytest.mark.parametrize(
    ("path", "params", "name", "allowed"),
    [
        ("/hooks/events", {"blockable": "maybe"}, "blockable", "allowed: true, 1, yes, on, false"),
        ("/hooks/events", {"family": "tasks"}, "family", "allowed: session, prompt"),
        ("/hooks/events", {"sync_only": "maybe"}, "sync_only", "allowed: true, 1, yes, on, false"),
        ("/hooks/events", {"sync": "true"}, "sync", "allowed: blockable, family, sync_only"),
        ("/hooks/catalog", {"source": "yaml"}, "source", "allowed: code, config, manifest"),
        ("/hooks/catalog", {"mode": "later"}, "mode", "allowed: sync, async"),
        ("/hooks/catalog", {"event": "prompt_submit"}, "event", "allowed: session_start"),
        ("/hooks/catalog", {"process": "no pe"}, "process", "processes: triage"),
        ("/processes/triage/hooks/runs", {"outcome": "ok"}, "outcome", "allowed: applied"),
        ("/processes/triage/hooks/runs", {"event": "a.b"}, "event", "allowed: session_start"),
        ("/processes/triage/hooks/runs", {"since": "yesterday"}, "since", "ISO 8601"),
        ("/processes/triage/hooks/runs", {"last": "-1"}, "last", "a whole number >= 0"),
        ("/processes/triage/hooks/runs", {"last": "ten"}, "last", "a whole number >= 0"),
        ("/processes/triage/hooks/runs", {"hooks": "x"}, "hooks", "allowed: event, outcome"),
    ],
)
async def test_a_bad_filter_answers_400_naming_the_parameter_and_its_values(
    client: httpx.AsyncClient, path: str, params: dict[str, str], name: str, allowed: str
) -> None:
    await create(client, "triage")
    r = await client.get(path, params=params)
    status, code, message = error_of(r)
    assert (status, code) == (400, "INVALID_QUERY")
    assert message.startswith(f"{name}: ")
    assert allowed in message
    assert r.json()["error"]["details"][0]["path"] == f"query.{name}"


async def test_a_filter_given_twice_answers_400(client: httpx.AsyncClient) -> None:
    r = await client.get("/hooks/catalog?mode=sync&mode=async")
    assert error_of(r)[:3] == (400, "INVALID_QUERY", "mode: given more than once")


# -- the catalog -----------------------------------------------------------------------------------


async def test_the_catalog_lists_every_resolved_hook_of_every_process(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Path
) -> None:
    gate = script(tmp_path, GATE)
    hooks = [
        {
            "event": "user_prompt_submit",
            "command": gate,
            "name": "gate",
            "priority": 5,
            "fail_closed": True,
            "tag": "policy",
            "matcher": {"trigger_type": "webhook"},
            "env": {"CRM_TOKEN": "env-canary-value"},
        },
        {"event": "task_completed", "command": ["true"], "mode": "async", "once": True},
    ]
    assert (await create(client, "triage", hooks=hooks)).status_code == 201
    assert (await create(client, "billing")).status_code == 201

    async def audit(ctx: HookContext) -> None:
        pass

    runtime.hooks.register(HookEvent.TASK_CREATED, audit, name="audit", priority=-5)
    process = runtime.get("triage")
    assert process is not None
    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, audit, name="in-code", timeout=2)

    r = await client.get("/hooks/catalog")
    assert r.status_code == 200
    assert "env-canary-value" not in r.text
    hooks_of = [(h["process"], h["event"], h["name"], h["source"]) for h in r.json()["hooks"]]
    assert hooks_of == [
        ("triage", "user_prompt_submit", "gate", "config"),
        ("triage", "user_prompt_submit", "in-code", "code"),
        ("triage", "task_created", "audit", "shared"),
        ("triage", "task_completed", "true", "config"),
        ("billing", "task_created", "audit", "shared"),
    ]
    gate_entry = r.json()["hooks"][0]
    assert gate_entry == {
        "process": "triage",
        "hook_id": gate_entry["hook_id"],
        "event": "user_prompt_submit",
        "name": "gate",
        "source": "config",
        "mode": "sync",
        "executor_kind": "command",
        "protocol": "tether",
        "priority": 5,
        "order": 0,
        "timeout": 5.0,  # the command's default, as declared: the engine's backstop is not shown
        "timeout_ms": 5000,
        "fail_closed": True,
        "required": True,
        "once": False,
        "tag": "policy",
        "matcher": {"trigger_type": ["webhook"]},
        "enabled": True,
        "command": gate,
        "owner": None,
        "metadata": {"tag": "policy"},
    }
    in_code, background = r.json()["hooks"][1], r.json()["hooks"][3]
    assert (in_code["order"], in_code["timeout"], in_code["command"]) == (1, 2, None)
    assert in_code["executor_kind"] == "callback"
    assert (background["mode"], background["once"]) == ("async", True)


async def test_the_catalog_filters_by_process_event_source_and_mode(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    hooks = [
        {"event": "task_created", "command": ["true"], "name": "sync-one"},
        {"event": "task_completed", "command": ["true"], "name": "bg", "mode": "async"},
    ]
    await create(client, "triage", hooks=hooks)
    await create(client, "billing", hooks=hooks[:1])

    async def shared(ctx: HookContext) -> None:
        pass

    runtime.hooks.register(HookEvent.TASK_COMPLETED, shared, name="shared-one")

    async def names(**params: str) -> list[tuple[str, str]]:
        r = await client.get("/hooks/catalog", params=params)
        assert r.status_code == 200, r.text
        return [(h["process"], h["name"]) for h in r.json()["hooks"]]

    assert await names(process="billing") == [("billing", "sync-one"), ("billing", "shared-one")]
    assert await names(event="task_completed", process="triage") == [
        ("triage", "bg"),
        ("triage", "shared-one"),
    ]
    assert await names(source="shared") == [("triage", "shared-one"), ("billing", "shared-one")]
    assert await names(mode="async") == [("triage", "bg")]
    assert await names(event="ticket.classify") == []  # an extension point with no handlers

    # The process list counts what the catalog lists (hook_count: the own hooks, as the
    # reference has it).
    listed = {p["name"]: p for p in (await client.get("/processes")).json()["processes"]}
    assert listed["triage"]["hook_count"] == 2
    assert listed["triage"]["hooks_in_chain"] == {"total": 3, "shared": 1, "inherited": 0}
    assert listed["billing"]["hooks_in_chain"]["total"] == len(await names(process="billing"))
    detail = (await client.get("/processes/billing")).json()
    assert detail["hooks_in_chain"] == {"total": 2, "shared": 1, "inherited": 0}


async def test_a_manifest_hook_and_a_plugin_are_catalogued_with_their_source(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Path
) -> None:
    manifest = tmp_path / "triage.agent"
    manifest.write_text(
        "name: triage\nmodel: scripted\nplugins: [debrief]\n"
        "hooks:\n  - {event: task_created, command: ['true'], name: from-file}\n"
    )
    await runtime.add_manifest(manifest)

    r = await client.get("/hooks/catalog", params={"process": "triage"})
    found = {h["name"]: (h["source"], h["owner"]) for h in r.json()["hooks"]}
    assert found == {
        "from-file": ("manifest", None),
        "plugin:debrief.on_task_completed": ("plugin", "debrief"),
    }
    manifest_only = await client.get("/hooks/catalog", params={"source": "manifest"})
    assert [h["name"] for h in manifest_only.json()["hooks"]] == ["from-file"]


async def test_the_catalog_redacts_secrets_in_commands(client: httpx.AsyncClient) -> None:
    secret = "sk-catalog-canary"
    hooks = [{"event": "task_created", "command": ["notify", f"--key={secret}"]}]
    r = await create(client, "triage", hooks=hooks, secrets={"KEY": secret})
    assert r.status_code == 201
    catalog = await client.get("/hooks/catalog")
    assert secret not in catalog.text
    assert catalog.json()["hooks"][0]["command"][1].startswith("--key=[REDACTED")


# -- run history -----------------------------------------------------------------------------------


async def test_runs_come_back_with_every_field_of_the_record(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    gate = script(tmp_path, GATE)
    hooks = [{"event": "user_prompt_submit", "command": gate, "name": "gate"}]
    await create(client, "triage", hooks=hooks)
    await inject(client, "triage", "Login is down")
    await inject(client, "triage", "Please refund order 1182")

    runs = await wait_for_runs(client, "triage", 2)
    assert [r["outcome"] for r in runs] == ["passed", "blocked"]
    blocked = runs[1]
    assert set(blocked) == HOOK_RUN_FIELDS | {"process"}
    assert (blocked["hook_name"], blocked["event"], blocked["process"]) == (
        "gate",
        "user_prompt_submit",
        "triage",
    )
    assert blocked["process_id"] == "triage"
    assert (blocked["source"], blocked["mode"], blocked["error"]) == (
        "config",
        "sync",
        "refunds need a human",
    )
    assert blocked["duration_ms"] > 0
    assert datetime.fromisoformat(blocked["recorded_at"]).tzinfo is not None


async def test_runs_filter_by_event_outcome_hook_since_and_last(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    gate = script(tmp_path, GATE)
    hooks = [
        {"event": "user_prompt_submit", "command": gate, "name": "gate"},
        {"event": "task_completed", "command": ["true"], "name": "notify"},
    ]
    await create(client, "triage", hooks=hooks)
    for text in ("Login is down", "Refund please", "Printer jam"):
        await inject(client, "triage", text)
    everything = await wait_for_runs(client, "triage", 6)

    assert [r["hook_name"] for r in await runs_of(client, "triage", event="task_completed")] == [
        "notify"
    ] * 3
    [blocked] = await runs_of(client, "triage", outcome="blocked")
    assert blocked["hook_name"] == "gate"
    assert len(await runs_of(client, "triage", hook="gate")) == 3
    gate_id = blocked["hook_id"]
    assert len(await runs_of(client, "triage", hook=gate_id)) == 3
    assert await runs_of(client, "triage", last=2) == everything[-2:]
    assert await runs_of(client, "triage", last=0) == []
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert await runs_of(client, "triage", since=later) == []
    earlier = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert len(await runs_of(client, "triage", since=earlier)) == 6
    naive = (datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert len(await runs_of(client, "triage", since=naive)) == 6  # no offset: UTC


async def test_runs_of_an_unknown_process_answer_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/processes/nope/hooks/runs")
    assert error_of(r)[:2] == (404, "PROCESS_NOT_FOUND")


async def test_run_errors_are_redacted(client: httpx.AsyncClient, tmp_path: Path) -> None:
    secret = "sk-history-canary"
    failing = script(tmp_path, f"import sys\nsys.stderr.write('rejected {secret}')\nsys.exit(3)\n")
    hooks = [{"event": "task_created", "command": failing}]
    await create(client, "triage", hooks=hooks, secrets={"KEY": secret})
    await inject(client, "triage", "hello")
    [run] = await wait_for_runs(client, "triage", 1)
    assert run["outcome"] == "failed"
    assert "[REDACTED" in run["error"]
    r = await client.get("/processes/triage/hooks/runs")
    assert secret not in r.text


# -- enable / disable ------------------------------------------------------------------------------


async def test_a_disabled_hook_is_listed_as_disabled_and_does_not_run(
    client: httpx.AsyncClient,
) -> None:
    hooks = [{"event": "task_created", "command": ["true"], "name": "notify"}]
    await create(client, "triage", hooks=hooks)
    [hook] = (await client.get("/hooks/catalog")).json()["hooks"]

    r = await client.post(f"/processes/triage/hooks/{hook['hook_id']}/disable")
    assert r.status_code == 200
    body = r.json()
    assert (body["name"], body["selector"], body["enabled"]) == ("triage", hook["hook_id"], False)
    assert [h["enabled"] for h in body["hooks"]] == [False]
    [listed] = (await client.get("/hooks/catalog")).json()["hooks"]
    assert listed["enabled"] is False

    await inject(client, "triage", "first")
    await client.post(f"/processes/triage/hooks/{hook['hook_id']}/enable")
    await inject(client, "triage", "second")
    [run] = await wait_for_runs(client, "triage", 1)
    assert run["hook_id"] == hook["hook_id"]
    [listed] = (await client.get("/hooks/catalog")).json()["hooks"]
    assert listed["enabled"] is True


async def test_disabling_by_tag_disables_every_hook_with_that_tag(
    client: httpx.AsyncClient,
) -> None:
    hooks = [
        {"event": "task_created", "command": ["true"], "name": "a", "tag": "audit"},
        {"event": "task_completed", "command": ["true"], "name": "b", "tag": "audit"},
        {"event": "task_completed", "command": ["true"], "name": "c"},
    ]
    await create(client, "triage", hooks=hooks)
    r = await client.post("/processes/triage/hooks/audit/disable")
    assert sorted(h["name"] for h in r.json()["hooks"]) == ["a", "b"]
    catalog = (await client.get("/hooks/catalog")).json()["hooks"]
    assert {h["name"]: h["enabled"] for h in catalog} == {"a": False, "b": False, "c": True}


async def test_a_shared_hook_can_be_disabled_through_a_process(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage")

    async def audit(ctx: HookContext) -> None:
        pass

    hook_id = runtime.hooks.register(HookEvent.TASK_CREATED, audit, name="audit")
    r = await client.post(f"/processes/triage/hooks/{hook_id}/disable")
    assert r.status_code == 200
    assert [(h["source"], h["enabled"]) for h in r.json()["hooks"]] == [("shared", False)]


async def test_disabling_an_unknown_id_or_tag_answers_404(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.post("/processes/triage/hooks/hook-nope/disable")
    assert error_of(r) == (
        404,
        "HOOK_NOT_FOUND",
        "process 'triage' has no hook with the id or tag 'hook-nope'",
    )
    r = await client.post("/processes/nope/hooks/x/enable")
    assert error_of(r)[:2] == (404, "PROCESS_NOT_FOUND")


# -- dry runs --------------------------------------------------------------------------------------


async def test_a_dry_run_runs_the_command_hooks_and_answers_the_trace_and_decision(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    tagger = script(tmp_path, MARKER.format(path=str(marker)), "tagger.py")
    hooks = [{"event": "user_prompt_submit", "command": tagger, "name": "tagger", "priority": 9}]
    await create(client, "triage", hooks=hooks)
    process = runtime.get("triage")
    assert process is not None

    async def no_printers(ctx: HookContext) -> None:
        if "printer" in ctx.data["prompt"]:
            raise HookBlocked("printer tickets go to facilities")

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, no_printers, name="no-printers")
    sample = {"prompt": "The printer is jammed", "event_id": "e1", "trigger_id": "desk"}
    r = await client.post(
        "/processes/triage/hooks/dry-run", json={"event": "user_prompt_submit", "data": sample}
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert marker.read_text() == "user_prompt_submit\n"  # the command really ran
    assert (answer["name"], answer["event"], answer["blocked"], answer["fired"]) == (
        "triage",
        "user_prompt_submit",
        True,
        2,
    )
    assert answer["reason"] == "printer tickets go to facilities"
    tagged, blocker = answer["trace"]
    assert (tagged["hook_name"], tagged["outcome"]) == ("tagger", "applied")
    assert tagged["data_before"]["prompt"] == "The printer is jammed"
    assert tagged["data_after"]["prompt"] == "[tagged] The printer is jammed"
    assert (blocker["hook_name"], blocker["outcome"]) == ("no-printers", "blocked")
    assert answer["data"]["prompt"] == "[tagged] The printer is jammed"
    status = (await client.get("/processes/triage")).json()
    assert (status["invocation_count"], status["queue_size"], status["dead_letter_count"]) == (
        0,
        0,
        0,
    )
    assert await runs_of(client, "triage") == []  # a dry run is not history


async def test_a_dry_run_that_passes_reports_no_block(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.post("/processes/triage/hooks/dry-run", json={"event": "task_created"})
    answer = r.json()
    assert (answer["blocked"], answer["fired"], answer["trace"], answer["data"]) == (
        False,
        0,
        [],
        {},
    )


@pytest.mark.parametrize(
    ("body", "status", "start"),
    [
        ({"event": "prompt_submitted"}, 422, "event: unknown hook event 'prompt_submitted'"),
        ({"event": "ticket.classify"}, 422, "event: unknown hook event"),
        ({"event": "task_created", "data": [1]}, 422, "data: "),
        ({"data": {}}, 422, "event: missing"),
        ({"event": "task_created", "extra": 1}, 422, "extra: "),
    ],
)
async def test_a_bad_dry_run_request_answers_4xx(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, start: str
) -> None:
    await create(client, "triage")
    r = await client.post("/processes/triage/hooks/dry-run", json=body)
    assert error_of(r)[0] == status
    assert error_of(r)[2].startswith(start), error_of(r)


async def test_a_dry_run_without_a_json_body_answers_400(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.post(
        "/processes/triage/hooks/dry-run",
        content=b"event=task_created",
        headers={"Content-Type": "application/json"},
    )
    assert error_of(r)[:2] == (400, "INVALID_JSON")


# -- plugins and artifacts -------------------------------------------------------------------------


async def test_a_plugin_named_in_a_deployed_config_is_active_and_its_artifact_is_served(
    client: httpx.AsyncClient, runtime: AgentRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    r = await create(client, "triage", plugins=["debrief"])
    assert r.status_code == 201, r.text
    process = runtime.get("triage")
    assert process is not None
    assert process.plugins.names == ["debrief"]

    event_id = await inject(client, "triage", "Login is down")
    name = f"{event_id}.debrief.json"
    await eventually(
        lambda: any(a["name"] == name for a in process.plugins.artifacts.list(event_id))
    )
    r = await client.get(f"/processes/triage/tasks/{event_id}/artifacts")
    assert r.status_code == 200
    body = r.json()
    assert (body["name"], body["task_id"], body["warnings"]) == ("triage", event_id, [])
    [artifact] = body["artifacts"]
    assert artifact["name"] == name
    assert artifact["payload"]["schema_version"] == 1
    assert (artifact["payload"]["task_id"], artifact["payload"]["outcome"]) == (
        event_id,
        "success",
    )
    assert datetime.fromisoformat(artifact["created_at"]).tzinfo is not None


async def test_a_third_party_plugin_is_activated_by_name_and_its_warnings_are_served(
    client: httpx.AsyncClient, runtime: AgentRuntime, install_plugin: Install
) -> None:
    install_plugin(ACME)
    r = await create(client, "triage", plugins=["acme"])
    assert r.status_code == 201, r.text
    process = runtime.get("triage")
    assert process is not None

    event_id = await inject(client, "triage", "Printer jam")
    await eventually(lambda: event_id in process.plugins.warnings)
    body = (await client.get(f"/processes/triage/tasks/{event_id}/artifacts")).json()
    assert [(a["name"], a["payload"]) for a in body["artifacts"]] == [
        (f"{event_id}.acme.summary.json", {"outcome": "success"})
    ]
    assert body["warnings"] == ["plugin:acme: the ticket named no priority"]


async def test_a_trigger_event_s_artifacts_are_served_under_its_event_id(
    client: httpx.AsyncClient, runtime: AgentRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    r = await create(client, "triage", plugins=["debrief"])
    assert r.status_code == 201, r.text
    process = runtime.get("triage")
    assert process is not None

    event_id = await inject(client, "triage", "Login is down")
    await eventually(lambda: process.plugins.artifacts.list(event_id) != [])
    body = (await client.get(f"/processes/triage/events/{event_id}/artifacts")).json()
    assert (body["name"], body["event_id"], body["warnings"]) == ("triage", event_id, [])
    assert [a["name"] for a in body["artifacts"]] == [f"{event_id}.debrief.json"]
    bad = await client.get("/processes/triage/events/a%20b*/artifacts")
    assert error_of(bad)[:2] == (400, "BAD_REQUEST")
    assert "event id 'a b*' is not valid" in error_of(bad)[2]


async def test_a_task_without_artifacts_answers_empty_lists(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.get("/processes/triage/tasks/no-such-task/artifacts")
    assert r.status_code == 200
    assert (r.json()["artifacts"], r.json()["warnings"]) == ([], [])


async def test_an_unsafe_task_id_answers_400(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.get("/processes/triage/tasks/a%20b*/artifacts")
    assert error_of(r)[:2] == (400, "BAD_REQUEST")


async def test_an_unknown_plugin_name_answers_422_listing_the_available_ones(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, "triage", plugins=["debreif"])
    status, code, message = error_of(r)
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message == "config.plugins[0]: unknown plugin 'debreif'; available: debrief"
    assert "triage" not in runtime


async def test_a_plugin_named_twice_answers_422(client: httpx.AsyncClient) -> None:
    r = await create(client, "triage", plugins=["debrief", "debrief"])
    assert error_of(r)[:3] == (
        422,
        "VALIDATION_ERROR",
        "config.plugins[1]: plugin 'debrief' is already named by plugins[0]",
    )


async def test_a_plugin_object_cannot_be_sent(client: httpx.AsyncClient) -> None:
    r = await create(client, "triage", plugins=[{"class": "acme:AcmePlugin"}])
    status, code, message = error_of(r)
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith("config.plugins[0]: a plugin is activated by its name")


async def test_a_plugin_that_cannot_be_loaded_answers_422_and_deploys_nothing(
    client: httpx.AsyncClient, runtime: AgentRuntime, install_plugin: Install
) -> None:
    install_plugin("raise ImportError('needs acme-sdk')\n")
    r = await create(client, "triage", plugins=["acme"])
    status, code, message = error_of(r)
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith("config.plugins: plugin 'acme' could not be loaded")
    assert "needs acme-sdk" in message
    assert "triage" not in runtime


async def test_plugins_are_allowed_without_command_deploys(runtime: AgentRuntime) -> None:
    """A name selects code the host's operator installed; no program travels over HTTP."""
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            r = await create(client, "triage", plugins=["debrief"])
    finally:
        await api.stop()
    assert r.status_code == 201, r.text


# -- the document and auth -------------------------------------------------------------------------


async def test_the_openapi_document_lists_the_hook_endpoints(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    for path in (
        "/api/v1/hooks/events",
        "/api/v1/hooks/catalog",
        "/api/v1/processes/{name}/hooks/runs",
        "/api/v1/processes/{name}/hooks/dry-run",
        "/api/v1/processes/{name}/hooks/{selector}/disable",
        "/api/v1/processes/{name}/hooks/{selector}/enable",
        "/api/v1/processes/{name}/events/{event_id}/artifacts",
        "/api/v1/processes/{name}/tasks/{task_id}/artifacts",
    ):
        assert path in doc["paths"], path
    catalog = doc["paths"]["/api/v1/hooks/catalog"]["get"]
    params = {p["name"]: p for p in catalog["parameters"]}
    assert set(params) == {"process", "event", "source", "mode"}
    assert params["source"]["schema"]["enum"] == [
        "code",
        "config",
        "manifest",
        "plugin",
        "inherited",
        "shared",
    ]
    runs = doc["paths"]["/api/v1/processes/{name}/hooks/runs"]["get"]
    assert [p["name"] for p in runs["parameters"]] == [
        "name",
        "event",
        "outcome",
        "hook",
        "since",
        "last",
    ]
    assert "400" in runs["responses"]
    assert "DryRunRequest" in doc["components"]["schemas"]


async def test_the_hook_endpoints_need_the_token(runtime: AgentRuntime) -> None:
    api = OrchestrationAPI(runtime, port=0, webhooks=False, token=TOKEN)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            refused = [
                (await client.get("/hooks/events")).status_code,
                (await client.get("/hooks/catalog")).status_code,
                (await client.post("/processes/x/hooks/dry-run", json={})).status_code,
            ]
            allowed = await client.get(
                "/hooks/catalog", headers={"Authorization": f"Bearer {TOKEN}"}
            )
    finally:
        await api.stop()
    assert refused == [401, 401, 401]
    assert allowed.status_code == 200
