"""The API's observability endpoints over real HTTP: the live hook-run feed (server-sent
events), task timelines, publishing runtime events, the dashboard's files and token rules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _process_support import eventually, noop
from tether import AgentRuntime, EventTrigger, HookEvent, HookManager, ProcessConfig
from tether.api import OrchestrationAPI
from tether.models import ScriptedModel

TOKEN = "feed-token-123"


@pytest.fixture
async def served() -> AsyncIterator[tuple[AgentRuntime, OrchestrationAPI]]:
    runtime = AgentRuntime(hooks=HookManager())
    async with runtime:
        process = await runtime.add_process("desk", ProcessConfig(model=ScriptedModel()))
        process.hooks.on(HookEvent.USER_PROMPT_SUBMIT, name="screen")(noop)
        async with OrchestrationAPI(runtime, port=0, webhooks=False, token=TOKEN) as api:
            yield runtime, api


def authed(api: OrchestrationAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"{api.url}/api/v1", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )


async def read_events(response: httpx.Response, count: int) -> list[tuple[str, Any]]:
    """The first ``count`` named events of an SSE stream."""
    found: list[tuple[str, Any]] = []
    name = None
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:") and name is not None:
            found.append((name, json.loads(line[5:])))
            name = None
            if len(found) == count:
                return found
    return found


async def test_the_feed_streams_a_hook_run_as_it_is_recorded(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with (
        authed(api) as client,
        client.stream("GET", "/hooks/runs/stream", params={"process": "desk"}) as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        reading = asyncio.ensure_future(read_events(stream, 1))
        r = await client.post("/processes/desk/inject", json={"payload": {"q": 1}})
        [(name, run)] = await asyncio.wait_for(reading, 10)
    assert name == "hook_run"
    assert run["hook_name"] == "screen"
    assert run["event"] == "user_prompt_submit"
    assert run["process_id"] == "desk"
    assert run["event_id"] == r.json()["event_id"]
    assert "data_before" not in run


async def test_the_feed_s_filters_let_only_matching_runs_through(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    runtime, api = served
    process = runtime.get("desk")
    assert process is not None
    process.hooks.on(HookEvent.TASK_COMPLETED, name="after")(noop)
    params = {"event": "task_completed", "outcome": "passed"}
    async with (
        authed(api) as client,
        client.stream("GET", "/hooks/runs/stream", params=params) as stream,
    ):
        reading = asyncio.ensure_future(read_events(stream, 1))
        await client.post("/processes/desk/inject", json={})
        [(_, run)] = await asyncio.wait_for(reading, 10)
    assert (run["hook_name"], run["event"]) == ("after", "task_completed")


async def test_a_bad_feed_filter_is_refused_naming_it(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with authed(api) as client:
        event = await client.get("/hooks/runs/stream", params={"event": "nope"})
        process = await client.get("/hooks/runs/stream", params={"process": "no such"})
        outcome = await client.get("/hooks/runs/stream", params={"outcome": "meh"})
        # A well-formed name of no process is not found, as on the catalog.
        ghost = await client.get("/hooks/runs/stream", params={"process": "ghost"})
    for r, name in ((event, "event"), (process, "process"), (outcome, "outcome")):
        assert r.status_code == 400
        assert r.json()["error"]["details"][0]["path"] == f"query.{name}"
    assert (ghost.status_code, ghost.json()["error"]["code"]) == (404, "PROCESS_NOT_FOUND")


async def test_the_feed_needs_the_token(served: tuple[AgentRuntime, OrchestrationAPI]) -> None:
    _, api = served
    async with httpx.AsyncClient() as client:
        r = await client.get(f"{api.url}/api/v1/hooks/runs/stream")
    assert r.status_code == 401


async def test_stopping_the_api_ends_an_open_stream() -> None:
    runtime = AgentRuntime()
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    async with (
        httpx.AsyncClient(base_url=f"{api.url}/api/v1", timeout=10) as client,
        client.stream("GET", "/hooks/runs/stream") as stream,
    ):
        reading = asyncio.ensure_future(read_events(stream, 1))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(api.stop(), 5)
        assert await asyncio.wait_for(reading, 5) == []


async def test_a_trigger_event_s_timeline_holds_its_hook_runs_and_run(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    runtime, api = served
    process = runtime.get("desk")
    assert process is not None
    async with authed(api) as client:
        r = await client.post("/processes/desk/inject", json={})
        event_id = r.json()["event_id"]
        await eventually(lambda: process.status()["invocation_count"] == 1)
        events = await client.get("/processes/desk/events")
        timeline = await client.get(f"/processes/desk/events/{event_id}/timeline")
        missing = await client.get("/processes/desk/events/nope/timeline")
    assert event_id in events.json()["events"]
    body = timeline.json()
    assert body["event_id"] == event_id
    assert [run["hook_name"] for run in body["hook_runs"]] == ["screen"]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]
    assert body["dead_letters"] == []
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "EVENT_NOT_FOUND"


async def test_the_deprecated_task_paths_still_answer_as_they_did(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    runtime, api = served
    process = runtime.get("desk")
    assert process is not None
    async with authed(api) as client:
        r = await client.post("/processes/desk/inject", json={})
        event_id = r.json()["event_id"]
        await eventually(lambda: process.status()["invocation_count"] == 1)
        tasks = await client.get("/processes/desk/tasks")
        timeline = await client.get(f"/processes/desk/tasks/{event_id}/timeline")
        missing = await client.get("/processes/desk/tasks/nope/timeline")
    assert event_id in tasks.json()["tasks"]
    body = timeline.json()
    assert [run["hook_name"] for run in body["hook_runs"]] == ["screen"]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant"]
    assert body["dead_letters"] == []
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "TASK_NOT_FOUND"


async def test_runtime_events_can_be_published_over_the_api() -> None:
    runtime = AgentRuntime()
    trigger = EventTrigger(id="on-deploy", event_type="deployed")
    cfg = ProcessConfig(model=ScriptedModel(), triggers=[trigger])
    async with runtime:
        process = await runtime.add_process("ops", cfg)
        async with (
            OrchestrationAPI(runtime, port=0, webhooks=False) as api,
            httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client,
        ):
            r = await client.post("/events", json={"event_type": "deployed", "payload": {"v": 2}})
            none = await client.post("/events", json={"event_type": "nobody-listens"})
            bad = await client.post("/events", json={"payload": {}})
        await eventually(lambda: process.status()["invocation_count"] == 1)
    assert r.status_code == 202
    assert len(r.json()["event_ids"]) == 1
    assert none.json()["event_ids"] == []
    assert bad.status_code == 422
    assert "event_type" in bad.json()["error"]["message"]


async def test_the_dashboard_s_files_are_served_without_the_token_and_hold_no_data(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with httpx.AsyncClient(base_url=api.url) as client:
        page = await client.get("/")
        script = await client.get("/dashboard/app.js")
        other = await client.get("/dashboard/secrets.txt")
        data = await client.get("/api/v1/processes")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "desk" not in page.text  # the page shows what the API answers, under its token
    assert script.headers["content-type"].startswith("text/javascript")
    assert "http://" not in script.text  # no CDN
    assert "https://" not in script.text
    assert other.status_code == 404
    assert data.status_code == 401


async def test_without_a_token_the_dashboard_refuses_foreign_hosts_like_the_api() -> None:
    async with (
        OrchestrationAPI(AgentRuntime(), port=0, webhooks=False) as api,
        httpx.AsyncClient(base_url=api.url) as client,
    ):
        r = await client.get("/", headers={"Host": "evil.example"})
    assert r.status_code == 403


async def test_the_openapi_document_declares_the_observability_endpoints(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with authed(api) as client:
        doc = (await client.get("/openapi.json")).json()
    for path in (
        "/metrics",
        "/",
        "/api/v1/hooks/runs/stream",
        "/api/v1/events",
        "/api/v1/processes/{name}/events/{event_id}/timeline",
        "/api/v1/processes/{name}/tasks/{task_id}/timeline",
    ):
        assert path in doc["paths"], path
    assert "PublishEvent" in doc["components"]["schemas"]
    assert "traceparent" in doc["components"]["schemas"]["InjectEvent"]["properties"]


async def test_the_feed_and_a_timeline_show_what_a_hook_told_the_operator(tmp_path: Any) -> None:
    """A Claude Code hook's systemMessage reaches the dashboard's feed and the task's
    timeline as its run's notice."""
    from tether.hooks import HookConfig

    program = tmp_path / "notice.sh"
    program.write_text(
        '#!/bin/sh\ncat >/dev/null\necho \'{"systemMessage": "routed to the night shift"}\'\n'
    )
    program.chmod(0o755)
    hook = HookConfig(event="user_prompt_submit", command=[str(program)], protocol="claude-code")
    runtime = AgentRuntime(hooks=HookManager())
    async with runtime:
        await runtime.add_process("desk", ProcessConfig(model=ScriptedModel(), hooks=[hook]))
        async with (
            OrchestrationAPI(runtime, port=0, webhooks=False, token=TOKEN) as api,
            authed(api) as client,
            client.stream("GET", "/hooks/runs/stream", params={"process": "desk"}) as stream,
        ):
            reading = asyncio.ensure_future(read_events(stream, 1))
            r = await client.post("/processes/desk/inject", json={"payload": {"q": 1}})
            [(_, run)] = await asyncio.wait_for(reading, 10)
            event_id = r.json()["event_id"]
            timeline = await client.get(f"/processes/desk/tasks/{event_id}/timeline")
    assert run["notice"] == "routed to the night shift"
    [shown] = timeline.json()["hook_runs"]
    assert shown["notice"] == "routed to the night shift"


async def test_the_openapi_document_marks_the_task_paths_deprecated_and_only_them(
    served: tuple[AgentRuntime, OrchestrationAPI],
) -> None:
    _, api = served
    async with authed(api) as client:
        doc = (await client.get("/openapi.json")).json()
    deprecated = sorted(
        path
        for path, operations in doc["paths"].items()
        for operation in operations.values()
        if operation.get("deprecated")
    )
    assert deprecated == [
        "/api/v1/processes/{name}/tasks",
        "/api/v1/processes/{name}/tasks/{task_id}/artifacts",
        "/api/v1/processes/{name}/tasks/{task_id}/timeline",
    ]
    old = doc["paths"]["/api/v1/processes/{name}/tasks/{task_id}/timeline"]["get"]
    assert old["summary"].startswith(
        "Deprecated: use GET /api/v1/processes/{name}/events/{event_id}/timeline."
    )
