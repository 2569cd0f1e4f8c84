"""Hook fields of the control API over real HTTP: the timeout and executor kind a catalog entry
shows, whether a run was required, the events' family filter, and tags that contain '/'."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest

from tether import AgentRuntime, HookContext, HookEvent, ShellHook

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}
FAMILIES = "session, prompt, permission, subagent, context, trigger, config, task, tool, model"


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> None:
    r = await client.post("/processes", json={"name": name, "config": {**SCRIPTED, **config}})
    assert r.status_code == 201, r.text


async def catalog(client: httpx.AsyncClient, **params: str) -> dict[str, dict[str, Any]]:
    r = await client.get("/hooks/catalog", params=params)
    assert r.status_code == 200, r.text
    return {h["name"]: h for h in r.json()["hooks"]}


async def noop(ctx: HookContext) -> None:
    pass


# -- what a catalog entry shows --------------------------------------------------------------------


async def test_the_catalog_shows_a_command_hooks_declared_timeout_not_the_engines_backstop(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    """Regression: the catalog showed a command hook's timeout plus the engine's 5 s backstop."""
    hooks = [
        {"event": "task_created", "command": ["true"], "name": "default"},
        {"event": "task_created", "command": ["true"], "name": "declared", "timeout": 2},
        {"event": "task_created", "command": ["true"], "name": "longest", "timeout": 3600},
    ]
    await create(client, "triage", hooks=hooks)
    process = runtime.get("triage")
    assert process is not None
    shell = ShellHook([sys.executable, "-c", "pass"], timeout=1.5)
    process.hooks.register(HookEvent.TASK_CREATED, shell.callback, name="in-code")

    timeouts = {name: h["timeout"] for name, h in (await catalog(client)).items()}
    assert timeouts == {"default": 5.0, "declared": 2.0, "longest": 3600.0, "in-code": 1.5}
    detail = (await client.get("/processes/triage/hooks")).json()
    assert {h["name"]: h["timeout"] for h in detail["hooks"]} == timeouts


async def test_a_catalog_entry_names_the_executor_kind_of_each_hook(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    hooks = [{"event": "task_completed", "command": ["true"], "name": "notify"}]
    await create(client, "triage", hooks=hooks, plugins=["debrief"])
    process = runtime.get("triage")
    assert process is not None
    process.hooks.register(HookEvent.TASK_COMPLETED, noop, name="in-code")
    runtime.hooks.register(HookEvent.TASK_COMPLETED, noop, name="fleet")

    kinds = {name: h["executor_kind"] for name, h in (await catalog(client)).items()}
    assert kinds == {
        "notify": "command",
        "in-code": "callback",
        "plugin:debrief.on_task_completed": "plugin",
        "fleet": "callback",
    }
    doc = (await client.get("/openapi.json")).json()
    summary = doc["paths"]["/api/v1/hooks/catalog"]["get"]["summary"]
    assert "executor_kind (callback, command, persistent, url, prompt, plugin)" in summary


# -- runs say whether the hook was required -------------------------------------------------------


async def test_each_run_says_whether_its_hook_was_required(client: httpx.AsyncClient) -> None:
    hooks = [
        {"event": "task_created", "command": ["true"], "name": "gate", "fail_closed": True},
        {"event": "task_created", "command": ["true"], "name": "audit"},
    ]
    await create(client, "triage", hooks=hooks)
    r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "hello"}})
    assert r.status_code == 202, r.text
    r = await client.get("/processes/triage/hooks/runs", params={"event": "task_created"})
    assert {run["hook_name"]: run["required"] for run in r.json()["runs"]} == {
        "gate": True,
        "audit": False,
    }


# -- the events' family filter ---------------------------------------------------------------------


async def test_the_events_endpoint_filters_by_family(client: httpx.AsyncClient) -> None:
    r = await client.get("/hooks/events", params={"family": "task"})
    assert r.status_code == 200, r.text
    assert [(e["event"], e["family"]) for e in r.json()["events"]] == [
        ("task_created", "task"),
        ("task_completed", "task"),
        ("agent_stop", "task"),
    ]
    r = await client.get("/hooks/events", params={"family": "task", "blockable": "false"})
    assert [e["event"] for e in r.json()["events"]] == ["task_completed"]
    families = {e["family"] for e in (await client.get("/hooks/events")).json()["events"]}
    assert families == set(FAMILIES.split(", "))


async def test_an_unknown_family_answers_400_naming_the_value_and_the_families(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/hooks/events", params={"family": "tools"})
    error = r.json()["error"]
    assert (r.status_code, error["code"]) == (400, "INVALID_QUERY")
    assert error["message"] == f"family: unknown value 'tools'; allowed: {FAMILIES}"
    assert error["details"][0]["path"] == "query.family"


async def test_the_openapi_document_lists_the_family_filter(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    params = {p["name"]: p for p in doc["paths"]["/api/v1/hooks/events"]["get"]["parameters"]}
    assert params["family"]["schema"]["enum"] == FAMILIES.split(", ")
    assert "blockable" in params


# -- tags with a '/' -------------------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["team/security", "team%2Fsecurity"])
async def test_a_tag_containing_a_slash_can_be_disabled_and_enabled(
    client: httpx.AsyncClient, selector: str
) -> None:
    """Regression: the route's selector did not match a tag with a '/' (404 for any form)."""
    hooks = [
        {"event": "task_created", "command": ["true"], "name": "a", "tag": "team/security"},
        {"event": "task_completed", "command": ["true"], "name": "b", "tag": "team/security"},
        {"event": "task_completed", "command": ["true"], "name": "c", "tag": "team"},
    ]
    await create(client, "triage", hooks=hooks)

    r = await client.post(f"/processes/triage/hooks/{selector}/disable")
    assert r.status_code == 200, r.text
    assert (r.json()["selector"], r.json()["enabled"]) == ("team/security", False)
    assert sorted(h["name"] for h in r.json()["hooks"]) == ["a", "b"]
    enabled = {name: h["enabled"] for name, h in (await catalog(client)).items()}
    assert enabled == {"a": False, "b": False, "c": True}

    r = await client.post(f"/processes/triage/hooks/{selector}/enable")
    assert r.status_code == 200, r.text
    assert all(h["enabled"] for h in (await catalog(client)).values())


async def test_an_unknown_tag_with_a_slash_answers_404_naming_it(client: httpx.AsyncClient) -> None:
    await create(client, "triage")
    r = await client.post("/processes/triage/hooks/team/nobody/disable")
    error = r.json()["error"]
    assert (r.status_code, error["code"]) == (404, "HOOK_NOT_FOUND")
    assert error["message"] == "process 'triage' has no hook with the id or tag 'team/nobody'"
