"""Hook fields of the control API over real HTTP: tags that contain '/'."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tether import AgentRuntime, HookManager, OrchestrationAPI

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


@pytest.fixture
async def runtime() -> AsyncIterator[AgentRuntime]:
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    yield runtime
    await runtime.stop_all()


@pytest.fixture
async def client(runtime: AgentRuntime) -> AsyncIterator[httpx.AsyncClient]:
    api = OrchestrationAPI(runtime, port=0, webhooks=False, allow_command_deploys=True)
    await api.start()
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
        yield client
    await api.stop()


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> None:
    r = await client.post("/processes", json={"name": name, "config": {**SCRIPTED, **config}})
    assert r.status_code == 201, r.text


async def catalog(client: httpx.AsyncClient, **params: str) -> dict[str, dict[str, Any]]:
    r = await client.get("/hooks/catalog", params=params)
    assert r.status_code == 200, r.text
    return {h["name"]: h for h in r.json()["hooks"]}


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
