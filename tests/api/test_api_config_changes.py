"""PATCH .../config (mission, health, MCP servers, rollback) and POST .../rewind over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _process_support import GatedModel
from tether import AgentProcess, AgentRuntime, OrchestrationAPI, ProcessConfig, TriggerEvent
from tether.hooks import HookContext, HookEvent

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}
DOCS: dict[str, Any] = {"name": "docs", "url": "https://mcp.example.com/docs"}
STDIO: dict[str, Any] = {"name": "fs", "command": ["mcp-fs", "/srv"]}


async def serve(runtime: AgentRuntime, **options: Any) -> OrchestrationAPI:
    api = OrchestrationAPI(runtime, port=0, webhooks=False, **options)
    await api.start()
    return api


@pytest.fixture
async def client(runtime: AgentRuntime) -> AsyncIterator[httpx.AsyncClient]:
    api = await serve(runtime, allowed_hook_hosts=["mcp.example.com"])
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            yield client
    finally:
        await api.stop()


@pytest.fixture
async def triage(runtime: AgentRuntime) -> AgentProcess:
    return await runtime.add_process("triage", SCRIPTED)


@pytest.fixture
def changes(runtime: AgentRuntime) -> list[dict[str, Any]]:
    """The data of every config_change of every process of the runtime."""
    seen: list[dict[str, Any]] = []

    async def record(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))

    runtime.hooks.register(HookEvent.CONFIG_CHANGE, record)
    return seen


async def patch(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    return await client.patch("/processes/triage/config", json=body)


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


async def run_one(process: AgentProcess, text: str) -> None:
    event_id = await process.inject(TriggerEvent("api", "manual", {"ticket": text}))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while event_id not in process.transcripts or process.status()["in_flight"]:
        assert loop.time() < deadline, "gave up waiting for the run"
        await asyncio.sleep(0.005)


# -- PATCH: the new fields ------------------------------------------------------------------


async def test_mission_health_and_mcp_servers_each_fire_config_change_as_operator(
    client: httpx.AsyncClient, triage: AgentProcess, changes: list[dict[str, Any]]
) -> None:
    r = await patch(
        client,
        {
            "mission": "Keep the login page up.",
            "health": {"max_consecutive_failures": 2},
            "add_mcp_servers": [DOCS],
        },
    )
    assert r.status_code == 200
    assert r.json()["changed"] == ["mission", "health", "mcp_server_added:docs"]
    assert [(c["source"], c["change"]) for c in changes] == [
        ("operator", "mission"),
        ("operator", "health"),
        ("operator", "mcp_server"),
    ]
    assert changes[1]["health"]["max_consecutive_failures"] == 2
    assert changes[1]["health"]["max_restarts"] == 3  # the fields not sent are kept
    config = (await client.get("/processes/triage")).json()["config"]
    assert config["mission"] == "Keep the login page up."
    assert config["health"]["max_consecutive_failures"] == 2
    assert config["mcp_server_names"] == ["docs"]
    assert config["next_rollback"] == "mcp_server"

    r = await patch(client, {"remove_mcp_servers": ["docs"], "mission": None})
    assert r.json()["changed"] == ["mission", "mcp_server_removed:docs"]
    assert triage.config.mission is None
    assert triage.config.mcp_servers == []


async def test_a_stdio_mcp_server_needs_command_deploys(
    client: httpx.AsyncClient, triage: AgentProcess, changes: list[dict[str, Any]]
) -> None:
    status, code, message = error_of(await patch(client, {"add_mcp_servers": [DOCS, STDIO]}))
    assert (status, code) == (403, "COMMANDS_NOT_ALLOWED")
    assert message.startswith("Refusing to deploy add_mcp_servers[1], a stdio MCP server")
    assert triage.config.mcp_servers == []
    assert changes == []


async def test_a_stdio_mcp_server_is_added_when_command_deploys_are_allowed(
    runtime: AgentRuntime, triage: AgentProcess
) -> None:
    api = await serve(runtime, allow_command_deploys=True)
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            r = await patch(client, {"add_mcp_servers": [STDIO]})
    finally:
        await api.stop()
    assert r.json()["changed"] == ["mcp_server_added:fs"]
    assert triage.config.mcp_servers == [{**STDIO, "transport": "stdio"}]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (
            {"health": {"max_restarts": -1}},
            422,
            "health.max_restarts: Input should be greater than or equal to 0 (got -1)",
        ),
        ({"health": {"policy": "always"}}, 422, "health.policy: Input should be 'never' or"),
        (
            {"health": {"restarts": 1}},
            422,
            "health.restarts: unknown key 'restarts' (did you mean 'max_restarts'?); allowed",
        ),
        ({"mission": "   "}, 422, "mission: mission must not be blank; pass None to clear it"),
        ({"mission": "x" * 2001}, 422, "mission: mission is 2001 characters long; at most 2000"),
        (
            {"add_mcp_servers": [{"name": "docs"}]},
            422,
            "add_mcp_servers[0]: an MCP server with transport 'http' needs 'url'",
        ),
        (
            {"add_mcp_servers": [{"name": "docs", "url": "ftp://x"}]},
            422,
            "add_mcp_servers[0].url: url must start with http:// or https://, got 'ftp://x'",
        ),
        (
            {"remove_mcp_servers": ["nope"]},
            422,
            "remove_mcp_servers: process 'triage' has no MCP server 'nope' (it has: none)",
        ),
        (
            {"add_mcp_servers": [DOCS, DOCS]},
            422,
            "add_mcp_servers[1].name: process 'triage' already has an MCP server 'docs'",
        ),
        ({"rollback": "maybe"}, 422, "rollback: Input should be a valid boolean"),
    ],
)
async def test_a_bad_value_answers_an_error_naming_the_field_and_changes_nothing(
    client: httpx.AsyncClient,
    triage: AgentProcess,
    changes: list[dict[str, Any]],
    body: dict[str, Any],
    status: int,
    says: str,
) -> None:
    before = triage.config
    got = error_of(await patch(client, body))
    assert got[:2] == (status, "VALIDATION_ERROR")
    assert got[2].startswith(says), got[2]
    assert got[2].count("got ") <= 1, got[2]  # the value is named once
    assert triage.config == before
    assert changes == []


# -- PATCH: rollback ------------------------------------------------------------------------


async def test_two_rollbacks_at_once_each_answer_the_change_they_undid(
    client: httpx.AsyncClient, runtime: AgentRuntime, triage: AgentProcess
) -> None:
    """Regression: the answer named the change that was newest before the rollback waited for
    the change lock, so two overlapping rollbacks both named the same one."""
    await patch(client, {"instructions": "Answer in one sentence."})
    await patch(client, {"mission": "Be brief."})

    async def slow(ctx: HookContext) -> None:
        if ctx.data["change"] == "rollback":
            await asyncio.sleep(0.05)

    runtime.hooks.register(HookEvent.CONFIG_CHANGE, slow)
    answers = await asyncio.gather(*(patch(client, {"rollback": True}) for _ in range(2)))
    assert sorted(r.json()["changed"][0] for r in answers) == [
        "rollback:instructions",
        "rollback:mission",
    ]
    assert triage.config.mission is None


async def test_rollback_undoes_the_last_applied_change(
    client: httpx.AsyncClient, triage: AgentProcess, changes: list[dict[str, Any]]
) -> None:
    await patch(client, {"instructions": "Answer in one sentence.", "mission": "Be brief."})
    r = await patch(client, {"rollback": True})
    assert r.status_code == 200
    assert r.json()["changed"] == ["rollback:mission"]
    assert triage.config.mission is None
    assert triage.config.instructions == "Answer in one sentence."
    assert (changes[-1]["source"], changes[-1]["change"], changes[-1]["undone"]) == (
        "operator",
        "rollback",
        "mission",
    )

    assert (await patch(client, {"rollback": True})).json()["changed"] == ["rollback:instructions"]
    assert triage.config.instructions == "You triage support tickets."
    status, code, message = error_of(await patch(client, {"rollback": True}))
    assert (status, code) == (409, "NOTHING_TO_ROLL_BACK")
    assert "process 'triage' has no applied configuration change to roll back" in message


async def test_rollback_of_an_added_trigger_takes_it_away(
    client: httpx.AsyncClient, triage: AgentProcess
) -> None:
    trigger = {"type": "cron", "id": "nightly", "cron_expression": "0 3 * * *"}
    await patch(client, {"add_triggers": [trigger]})
    r = await patch(client, {"rollback": True})
    assert r.json()["changed"] == ["rollback:trigger_added"]
    assert r.json()["triggers"] == []


async def test_rollback_is_sent_alone(
    client: httpx.AsyncClient, triage: AgentProcess, changes: list[dict[str, Any]]
) -> None:
    await patch(client, {"mission": "Be brief."})
    status, code, message = error_of(await patch(client, {"rollback": True, "instructions": "x"}))
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith("rollback: send it alone")
    assert "instructions" in message
    assert triage.config.mission == "Be brief."
    assert len(changes) == 1


async def test_rollback_false_changes_nothing(
    client: httpx.AsyncClient, triage: AgentProcess
) -> None:
    await patch(client, {"mission": "Be brief."})
    assert (await patch(client, {"rollback": False})).json()["changed"] == []
    assert triage.config.mission == "Be brief."


# -- POST rewind ----------------------------------------------------------------------------


async def test_rewind_drops_messages_and_fires_rewind(
    client: httpx.AsyncClient, triage: AgentProcess, changes: list[dict[str, Any]]
) -> None:
    await run_one(triage, "first")
    await run_one(triage, "second")
    r = await client.post("/processes/triage/rewind", json={"messages": 2})
    assert r.status_code == 200
    assert r.json() == {"name": "triage", "dropped": 2, "conversation_size": 2}
    [change] = changes
    assert (change["source"], change["change"], change["dropped"]) == ("operator", "rewind", 2)
    assert (change["size_before"], change["size_after"]) == (4, 2)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"messages": 0}, "messages: Input should be greater than or equal to 1 (got 0)"),
        ({"messages": "two"}, "messages: Input should be a valid integer"),
        ({}, "messages: missing required key 'messages'"),
        ({"messages": 1, "timeout": 0}, "timeout: Input should be greater than 0 (got 0)"),
        ({"messages": 1, "steps": 2}, "steps: unknown key 'steps'"),
        (
            {"messages": 3},
            "messages: cannot rewind 3 messages; the conversation of process 'triage' holds 2 "
            "(allowed: 1 to 2)",
        ),
    ],
)
async def test_a_bad_rewind_answers_422_naming_the_field(
    client: httpx.AsyncClient,
    triage: AgentProcess,
    changes: list[dict[str, Any]],
    body: dict[str, Any],
    says: str,
) -> None:
    await run_one(triage, "first")
    status, code, message = error_of(await client.post("/processes/triage/rewind", json=body))
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith(says), message
    assert len(triage.context.conversation) == 2
    assert changes == []


async def test_a_rewind_of_a_busy_process_answers_409_after_its_timeout(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    model = GatedModel()
    model.gate.set()
    process = await runtime.add_process("triage", ProcessConfig(model=model))
    await run_one(process, "first")
    model.gate.clear()
    await process.inject(TriggerEvent("api", "manual", {"ticket": "second"}))
    while model.active == 0:
        await asyncio.sleep(0.005)
    r = await client.post("/processes/triage/rewind", json={"messages": 2, "timeout": 0.05})
    status, code, message = error_of(r)
    assert (status, code) == (409, "PROCESS_BUSY")
    assert "still runs 1 task(s)" in message
    model.gate.set()
    assert len(process.context.conversation) == 2


async def test_the_openapi_document_describes_the_new_fields_and_rewind(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert "/api/v1/processes/{name}/rewind" in doc["paths"]
    fields = doc["components"]["schemas"]["ConfigChange"]["properties"]
    for name in ("mission", "health", "add_mcp_servers", "remove_mcp_servers", "rollback"):
        assert name in fields
    assert "messages" in doc["components"]["schemas"]["RewindRequest"]["properties"]
    assert "McpServerConfig" in doc["components"]["schemas"]


async def test_rollback_that_would_bring_back_a_clashing_webhook_answers_409(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    hook = {"type": "webhook", "id": "tickets", "webhook_path": "/t", "webhook_port": 9798}
    process = await runtime.add_process("triage", {**SCRIPTED, "triggers": [hook]})
    await patch(client, {"remove_triggers": ["tickets"]})
    await runtime.add_process("other", {**SCRIPTED, "triggers": [hook]})
    status, code, message = error_of(await patch(client, {"rollback": True}))
    assert (status, code) == (409, "WEBHOOK_CLASH")
    assert message.startswith("rollback: webhook trigger triage/tickets: path /t on port 9798")
    assert process.triggers == []
    assert process.config_history[-1]["change"] == "trigger_removed"  # still there to undo
