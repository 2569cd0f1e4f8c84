"""``GET /api/v1/processes/{name}/tasks/{id}/artifacts`` over real HTTP, for plugins given in
code: every artifact of the task (labelled or not, from a folder or from memory) and its plugin
warnings in the order they were recorded; an unknown process is a 404."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _process_support import eventually
from tether import AgentRuntime, OrchestrationAPI, Plugin, PluginContext, ProcessConfig
from tether.models import ScriptedModel


class Notes(Plugin):
    """Two artifacts (one labelled) and two warnings per task."""

    name = "notes"

    async def on_task_created(self, ctx: PluginContext) -> None:
        ctx.warn("opened")
        ctx.emit_artifact({"stage": "created"}, label="opening")

    async def on_task_completed(self, ctx: PluginContext) -> None:
        ctx.emit_artifact({"stage": "completed", "outcome": ctx.data["outcome"]})
        ctx.warn("closed")


@pytest.fixture
async def client(runtime: AgentRuntime) -> AsyncIterator[httpx.AsyncClient]:
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            yield client
    finally:
        await api.stop()


async def run_one(runtime: AgentRuntime, client: httpx.AsyncClient, **config: Any) -> str:
    process = await runtime.add_process(
        "triage", ProcessConfig(model=ScriptedModel(), plugins=[Notes()], **config)
    )
    r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "VPN down"}})
    assert r.status_code == 202, r.text
    event_id: str = r.json()["event_id"]
    await eventually(lambda: len(process.plugins.warnings.get(event_id, [])) == 2)
    return event_id


@pytest.mark.parametrize("store", ["folder", "memory"])
async def test_every_artifact_and_warning_of_a_task_is_served(
    runtime: AgentRuntime, client: httpx.AsyncClient, tmp_path: Path, store: str
) -> None:
    config = {"artifacts_dir": str(tmp_path)} if store == "folder" else {}
    event_id = await run_one(runtime, client, **config)

    r = await client.get(f"/processes/triage/tasks/{event_id}/artifacts")

    assert r.status_code == 200, r.text
    body = r.json()
    assert [(a["name"], a["payload"]) for a in body["artifacts"]] == [
        (f"{event_id}.notes.json", {"stage": "completed", "outcome": "success"}),
        (f"{event_id}.notes.opening.json", {"stage": "created"}),
    ]
    assert body["warnings"] == ["plugin:notes: opened", "plugin:notes: closed"]
    if store == "folder":
        assert sorted(os.listdir(tmp_path)) == [
            f"{event_id}.notes.json",
            f"{event_id}.notes.opening.json",
        ]


async def test_another_tasks_artifacts_are_not_served(
    runtime: AgentRuntime, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    first = await run_one(runtime, client, artifacts_dir=str(tmp_path))
    process = runtime.get("triage")
    assert process is not None
    r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "Printer"}})
    second = r.json()["event_id"]
    await eventually(lambda: len(process.plugins.warnings.get(second, [])) == 2)

    body = (await client.get(f"/processes/triage/tasks/{first}/artifacts")).json()

    assert {a["name"].split(".")[0] for a in body["artifacts"]} == {first}


async def test_the_artifacts_of_an_unknown_process_answer_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/processes/nobody/tasks/abc/artifacts")

    assert r.status_code == 404
    assert r.json()["error"]["code"] == "PROCESS_NOT_FOUND"
