"""The control API over real HTTP: endpoints, auth, the deploy rules and every bad request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _imports_support import loaded_after
from _process_support import eventually
from tether import AgentRuntime, HookBlocked, HookContext, HookEvent, OrchestrationAPI
from tether.api import APIConfigError

TOKEN = "s3cret-token-for-tests"
SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


async def serve(runtime: AgentRuntime, **options: Any) -> OrchestrationAPI:
    api = OrchestrationAPI(runtime, port=0, webhooks=False, **options)
    await api.start()
    return api


@pytest.fixture
async def api(runtime: AgentRuntime) -> AsyncIterator[OrchestrationAPI]:
    api = await serve(runtime)
    yield api
    await api.stop()


async def create(client: httpx.AsyncClient, name: str, config: dict[str, Any]) -> httpx.Response:
    return await client.post("/processes", json={"name": name, "config": config})


def error_of(response: httpx.Response) -> tuple[int, str, str]:
    error = response.json()["error"]
    return response.status_code, error["code"], error["message"]


# -- endpoints ---------------------------------------------------------------------------------


async def test_health_reports_the_runtime(client: httpx.AsyncClient) -> None:
    r = await client.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    assert body["running"] is True
    assert body["processes"] == 0


async def test_a_process_is_created_listed_shown_and_deleted(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, "triage", SCRIPTED)
    assert r.status_code == 201
    assert r.json()["name"] == "triage"
    assert r.json()["state"] == "running"  # the runtime runs: the process starts at once

    listed = (await client.get("/processes")).json()["processes"]
    assert [p["name"] for p in listed] == ["triage"]

    detail = (await client.get("/processes/triage")).json()
    assert detail["config"]["model"] == "scripted"
    assert detail["config"]["instructions"] == "You triage support tickets."
    assert detail["hooks"] == []

    r = await client.delete("/processes/triage")
    assert r.json() == {"name": "triage", "removed": True}
    assert "triage" not in runtime


async def test_inject_queues_an_event_that_runs(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage", SCRIPTED)
    r = await client.post(
        "/processes/triage/inject", json={"payload": {"ticket": "Login page is down"}}
    )
    assert r.status_code == 202
    body = r.json()
    assert body["status"] == "queued"
    process = runtime.get("triage")
    assert process is not None
    await eventually(lambda: body["event_id"] in process.transcripts)


async def test_start_stop_and_restart_change_the_state(client: httpx.AsyncClient) -> None:
    await create(client, "triage", SCRIPTED)
    assert (await client.post("/processes/triage/stop")).json()["state"] == "stopped"
    assert (await client.post("/processes/triage/start")).json()["state"] == "running"
    restarted = (await client.post("/processes/triage/restart")).json()
    assert restarted["state"] == "running"
    assert restarted["restart_count"] == 1


async def test_dead_letters_are_listed_redelivered_and_cleared(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage", SCRIPTED)
    await client.post("/processes/triage/stop")
    r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "late"}})
    assert r.json()["status"] == "dead_lettered"
    assert r.json()["reason"] == "process stopped"

    letters = (await client.get("/processes/triage/dead-letters")).json()["dead_letters"]
    assert [(d["event_id"], d["reason"]) for d in letters] == [
        (r.json()["event_id"], "process stopped")
    ]
    assert letters[0]["payload"] == {"ticket": "late"}

    await client.post("/processes/triage/start")
    redelivered = await client.post("/processes/triage/dead-letters/redeliver", json={})
    assert redelivered.json()["redelivered"] == 1
    process = runtime.get("triage")
    assert process is not None
    await eventually(lambda: process.status()["invocation_count"] == 1)

    await client.post("/processes/triage/stop")
    await client.post("/processes/triage/inject", json={})
    cleared = await client.delete("/processes/triage/dead-letters")
    assert cleared.json()["cleared"] == 1
    assert (await client.get("/processes/triage/dead-letters")).json()["dead_letters"] == []


async def test_a_config_change_fires_config_change_as_operator(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    changes: list[dict[str, Any]] = []

    async def record(ctx: HookContext) -> None:
        changes.append(dict(ctx.data))

    runtime.hooks.register(HookEvent.CONFIG_CHANGE, record)
    await create(client, "triage", SCRIPTED)
    r = await client.patch(
        "/processes/triage/config",
        json={
            "instructions": "Answer in one sentence.",
            "budget": {"max_runs_per_day": 5},
            "add_triggers": [{"type": "cron", "id": "nightly", "cron_expression": "0 3 * * *"}],
        },
    )
    assert r.status_code == 200
    assert r.json()["changed"] == ["instructions", "budget", "trigger_added:nightly"]
    assert [(c["source"], c["change"]) for c in changes] == [
        ("operator", "instructions"),
        ("operator", "budget"),
        ("operator", "trigger_added"),
    ]
    process = runtime.get("triage")
    assert process is not None
    assert process.config.instructions == "Answer in one sentence."

    r = await client.patch("/processes/triage/config", json={"remove_triggers": ["nightly"]})
    assert r.json()["changed"] == ["trigger_removed:nightly"]
    assert r.json()["triggers"] == []


async def test_the_hook_catalog_lists_the_resolved_chain(
    runtime: AgentRuntime,
) -> None:
    api = await serve(runtime, allow_command_deploys=True)
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            hooks = [{"event": "task_completed", "command": ["true"], "name": "notify"}]
            await create(client, "triage", {**SCRIPTED, "hooks": hooks})
            r = await client.get("/processes/triage/hooks")
    finally:
        await api.stop()
    [hook] = r.json()["hooks"]
    assert (hook["event"], hook["name"], hook["command"]) == ("task_completed", "notify", ["true"])


async def test_the_openapi_document_lists_the_endpoints(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.")
    assert "/api/v1/processes/{name}/dead-letters/redeliver" in doc["paths"]
    assert "CreateProcess" in doc["components"]["schemas"]


async def test_secrets_never_appear_in_answers(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    secret = "sk-very-secret-value"
    config = {
        **SCRIPTED,
        "secrets": {"API_KEY": secret},
        "triggers": [{"type": "webhook", "webhook_path": "/t", "secret": "hmac-key-123"}],
    }
    assert (await create(client, "triage", config)).status_code == 201
    await client.post("/processes/triage/stop")
    await client.post("/processes/triage/inject", json={"payload": {"note": f"key {secret}"}})
    answers = [
        await client.get("/processes"),
        await client.get("/processes/triage"),
        await client.get("/processes/triage/dead-letters"),
    ]
    for answer in answers:
        assert secret not in answer.text
        assert "hmac-key-123" not in answer.text
    detail = answers[1].json()
    assert detail["config"]["secrets"] == ["API_KEY"]
    assert detail["triggers"][0]["signed"] is True
    assert "[REDACTED:API_KEY]" in answers[2].text


# -- the deploy rules --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"hooks": [{"event": "task_completed", "command": "notify"}]}, "hooks[0], a command hook"),
        (
            {"mcp_servers": [{"name": "fs", "transport": "stdio", "command": "mcp-fs"}]},
            "mcp_servers[0], a stdio MCP server",
        ),
        ({"mcp_servers": [{"name": "fs", "command": "mcp-fs"}]}, "mcp_servers[0]"),
        (
            {"open_mode": {"allow_tool_creation": True}},
            "open_mode.allow_tool_creation, which lets the agent create tools",
        ),
        (
            {"tools": ["_tool_support:lookup_order"]},
            "tools[0], a tool imported by path (_tool_support:lookup_order), code run on the host",
        ),
        (
            {"claude_code_hooks": [".claude/settings.json"]},
            "claude_code_hooks[0], a file of Claude Code command hooks",
        ),
    ],
)
async def test_configs_that_run_programs_answer_403(
    client: httpx.AsyncClient, runtime: AgentRuntime, config: dict[str, Any], named: str
) -> None:
    r = await create(client, "triage", {**SCRIPTED, **config})
    status, code, message = error_of(r)
    assert (status, code) == (403, "COMMANDS_NOT_ALLOWED")
    assert message.startswith(f"Refusing to deploy {named}")
    assert "allow_command_deploys=True" in message
    assert "triage" not in runtime


async def test_the_403_message_explains_why_in_its_first_118_characters(
    client: httpx.AsyncClient,
) -> None:
    hooks = [{"event": "user_prompt_submit", "command": ["python3", "hooks/gate.py"]}]
    _, _, message = error_of(await create(client, "triage", {"hooks": hooks}))
    assert message[:118] == (
        "Refusing to deploy hooks[0], a command hook: anyone holding the API token could run "
        "any program on the runtime's host "
    )


async def test_an_http_mcp_server_is_not_a_command(runtime: AgentRuntime) -> None:
    config = {
        **SCRIPTED,
        "mcp_servers": [{"name": "docs", "transport": "http", "url": "http://127.0.0.1:9/mcp"}],
    }
    api = await serve(runtime, allowed_hook_hosts=["127.0.0.1"])
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            assert (await create(client, "triage", config)).status_code == 201
    finally:
        await api.stop()


async def test_command_deploys_can_be_allowed(runtime: AgentRuntime) -> None:
    api = await serve(runtime, allow_command_deploys=True)
    try:
        async with httpx.AsyncClient() as client:
            hooks = [{"event": "task_completed", "command": ["true"]}]
            r = await client.post(
                f"{api.url}/api/v1/processes",
                json={"name": "triage", "config": {**SCRIPTED, "hooks": hooks}},
            )
    finally:
        await api.stop()
    assert r.status_code == 201
    assert r.json()["name"] == "triage"


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"hooks": [{"event": "task_created", "callback": "mod.fn"}]}, "config.hooks[0].callback"),
        ({"approval": {"tools": ["x"], "handler": "mod.fn"}}, "config.approval.handler"),
        ({"guardrails": {"scanners": ["mod.fn"]}}, "config.guardrails.scanners"),
        ({"tools": [{"fn": "mod.fn"}]}, "config.tools[0]"),
    ],
)
async def test_python_objects_cannot_be_sent_and_answer_422_naming_the_field(
    client: httpx.AsyncClient, config: dict[str, Any], path: str
) -> None:
    r = await create(client, "triage", config)
    status, code, message = error_of(r)
    assert (status, code) == (422, "VALIDATION_ERROR")
    assert message.startswith(f"{path}: ")
    assert r.json()["error"]["details"][0]["path"] == path


async def test_a_callback_is_refused_even_when_commands_are_allowed(runtime: AgentRuntime) -> None:
    api = await serve(runtime, allow_command_deploys=True)
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            hooks = [{"event": "task_created", "command": "x", "callback": "mod.fn"}]
            r = await create(client, "triage", {"hooks": hooks})
    finally:
        await api.stop()
    assert error_of(r)[:2] == (422, "VALIDATION_ERROR")
    assert "hooks[0].callback" in error_of(r)[2]


# -- auth --------------------------------------------------------------------------------------


async def test_without_a_token_the_api_refuses_to_start_off_loopback(
    runtime: AgentRuntime,
) -> None:
    api = OrchestrationAPI(runtime, host="0.0.0.0", port=0)
    with pytest.raises(APIConfigError, match=r"refusing to serve the control API on 0\.0\.0\.0"):
        await api.start()
    assert not api.running


async def test_with_a_token_every_request_needs_it(runtime: AgentRuntime) -> None:
    api = await serve(runtime, token=TOKEN)
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            missing = await client.get("/processes")
            wrong = await client.get("/processes", headers={"Authorization": "Bearer nope"})
            scheme = await client.get("/processes", headers={"Authorization": f"Basic {TOKEN}"})
            right = await client.get("/processes", headers={"Authorization": f"Bearer {TOKEN}"})
            openapi = await client.get("/openapi.json")
    finally:
        await api.stop()
    assert error_of(missing)[:2] == (401, "UNAUTHORIZED")
    assert missing.headers["www-authenticate"] == "Bearer"
    assert error_of(wrong) == (401, "UNAUTHORIZED", "the bearer token is not valid")
    assert error_of(scheme)[:2] == (401, "UNAUTHORIZED")
    assert right.status_code == 200
    assert openapi.status_code == 401


async def test_a_token_lets_the_api_listen_off_loopback(runtime: AgentRuntime) -> None:
    api = OrchestrationAPI(runtime, host="0.0.0.0", port=0, token=TOKEN, webhooks=False)
    await api.start()
    try:
        async with httpx.AsyncClient() as client:
            r = await client.get(
                f"http://127.0.0.1:{api.port}/api/v1/health",
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
    finally:
        await api.stop()
    assert r.status_code == 200


async def test_without_a_token_browser_origins_and_foreign_hosts_are_refused(
    client: httpx.AsyncClient,
) -> None:
    origin = await client.get("/health", headers={"Origin": "https://evil.example"})
    host = await client.get("/health", headers={"Host": "evil.example"})
    assert error_of(origin)[:2] == (403, "FORBIDDEN")
    assert error_of(host)[:2] == (403, "FORBIDDEN")


def test_an_empty_token_or_a_bad_port_is_a_configuration_error() -> None:
    with pytest.raises(APIConfigError, match="token must be a non-empty string"):
        OrchestrationAPI(AgentRuntime(), token="  ")
    with pytest.raises(APIConfigError, match="port must be"):
        OrchestrationAPI(AgentRuntime(), port=70000)


async def test_a_busy_port_fails_start_with_oserror(
    api: OrchestrationAPI, runtime: AgentRuntime
) -> None:
    second = OrchestrationAPI(runtime, port=api.port, webhooks=False)
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{api.port}"):
        await second.start()


# -- bad requests ------------------------------------------------------------------------------


async def test_a_huge_body_answers_413(client: httpx.AsyncClient) -> None:
    body = b'{"name": "x", "config": {"instructions": "' + b"a" * (2 * 1024 * 1024) + b'"}}'
    r = await client.post("/processes", content=body, headers={"Content-Type": "application/json"})
    assert error_of(r)[:2] == (413, "BODY_TOO_LARGE")


async def test_a_huge_chunked_body_answers_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(40):
            yield b" " * 65536

    r = await client.post(
        "/processes", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert error_of(r)[:2] == (413, "BODY_TOO_LARGE")


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"", b'{"name": NaN}', b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe"],
)
async def test_malformed_json_answers_400(client: httpx.AsyncClient, body: bytes) -> None:
    r = await client.post("/processes", content=body, headers={"Content-Type": "application/json"})
    assert error_of(r)[:2] == (400, "INVALID_JSON")


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ([1, 2], "expected a JSON object"),
        ({"name": 42}, "name: process name 42 is not allowed"),
        ({"name": "ok", "config": "x"}, "config: expected a JSON object"),
        ({"name": "ok", "config": {"max_turns": "many"}}, "config.max_turns: "),
        ({"name": "ok", "config": {"triggers": [{"type": "cron"}]}}, "config.triggers[0]"),
        ({"name": "ok", "config": {"colour": "blue"}}, "config.colour: unknown key 'colour'"),
        ({"name": "ok", "extra": 1}, "extra: unknown key 'extra'"),
        ({"config": {}}, "name: missing required field 'name'"),
    ],
)
async def test_wrong_types_answer_422(client: httpx.AsyncClient, payload: Any, path: str) -> None:
    r = await client.post("/processes", json=payload)
    status, _code, message = error_of(r)
    assert status == 422
    assert path in message


async def test_a_wrong_value_is_named_in_the_answer_unless_it_may_be_a_secret(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post("/processes", json={"name": "ok", "config": {"max_turns": "many"}})
    assert "(got 'many')" in error_of(r)[2]
    canary = 8675309123
    r = await client.post(
        "/processes", json={"name": "ok", "config": {**SCRIPTED, "secrets": {"API_KEY": canary}}}
    )
    assert r.status_code == 422
    assert str(canary) not in r.text


@pytest.mark.parametrize("name", ["../etc", "a/b", "..", "a b", "", ".hidden", "x" * 65])
async def test_a_name_with_path_characters_answers_422(
    client: httpx.AsyncClient, name: str
) -> None:
    r = await create(client, name, SCRIPTED)
    assert error_of(r)[:2] == (422, "INVALID_NAME")


async def test_an_unknown_process_answers_404(client: httpx.AsyncClient) -> None:
    for method, path in [
        ("GET", "/processes/nope"),
        ("DELETE", "/processes/nope"),
        ("POST", "/processes/nope/start"),
        ("POST", "/processes/nope/inject"),
        ("GET", "/processes/nope/dead-letters"),
        ("PATCH", "/processes/nope/config"),
    ]:
        r = await client.request(method, path)
        assert error_of(r) == (404, "PROCESS_NOT_FOUND", "no process named 'nope'"), path


async def test_a_path_traversal_in_the_url_answers_404(client: httpx.AsyncClient) -> None:
    r = await client.get("/processes/..%2F..%2Fetc")
    assert r.status_code == 404
    assert r.json()["error"]["code"] in ("NOT_FOUND", "PROCESS_NOT_FOUND")


async def test_a_duplicate_name_answers_409(client: httpx.AsyncClient) -> None:
    assert (await create(client, "triage", SCRIPTED)).status_code == 201
    r = await create(client, "triage", SCRIPTED)
    assert error_of(r) == (409, "PROCESS_EXISTS", "a process named 'triage' already exists")


async def test_a_webhook_clash_with_another_process_answers_409(
    client: httpx.AsyncClient,
) -> None:
    trigger = {"type": "webhook", "webhook_path": "/tickets", "webhook_port": 9799}
    assert (await create(client, "a", {**SCRIPTED, "triggers": [trigger]})).status_code == 201
    r = await create(client, "b", {**SCRIPTED, "triggers": [trigger]})
    assert error_of(r)[:2] == (409, "WEBHOOK_CLASH")


async def test_unknown_routes_and_methods_answer_json(client: httpx.AsyncClient) -> None:
    assert error_of(await client.get("/nothing-here"))[:2] == (404, "NOT_FOUND")
    assert error_of(await client.put("/processes", json={}))[:2] == (405, "METHOD_NOT_ALLOWED")


async def test_a_body_that_is_not_json_typed_answers_415(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/processes", content=b'{"name": "x"}', headers={"Content-Type": "text/plain"}
    )
    assert error_of(r)[:2] == (415, "UNSUPPORTED_MEDIA_TYPE")


async def test_bad_inject_and_config_bodies_answer_4xx(client: httpx.AsyncClient) -> None:
    await create(client, "triage", SCRIPTED)
    inject = await client.post("/processes/triage/inject", json={"payload": 1, "when": "now"})
    empty_id = await client.post("/processes/triage/inject", json={"trigger_id": ""})
    change = await client.patch("/processes/triage/config", json={"remove_triggers": ["nope"]})
    budget = await client.patch("/processes/triage/config", json={"budget": {"max_runs": 1}})
    redeliver = await client.post(
        "/processes/triage/dead-letters/redeliver", json={"event_ids": "all"}
    )
    assert error_of(inject)[:2] == (422, "VALIDATION_ERROR")
    assert "when: unknown key 'when'" in error_of(inject)[2]
    assert error_of(empty_id)[:2] == (422, "VALIDATION_ERROR")
    assert error_of(change)[2] == "remove_triggers: process 'triage' has no trigger 'nope'"
    assert "budget.max_runs" in error_of(budget)[2]
    assert error_of(redeliver)[:2] == (422, "VALIDATION_ERROR")


def test_importing_tether_does_not_import_the_http_stack() -> None:
    code = "import tether\ntether.load_manifest, tether.AgentRuntime"
    assert loaded_after(code, ["starlette", "uvicorn"]) == []


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"triggers": [{"type": "file_watch", "watch_path": "/etc"}]}, "config.triggers[0]"),
        ({"journal_path": "/tmp/x.db"}, "config.journal_path"),
        ({"artifacts_dir": "/tmp/artifacts"}, "config.artifacts_dir"),
    ],
)
async def test_configs_that_name_host_paths_answer_403(
    client: httpx.AsyncClient, config: dict[str, Any], path: str
) -> None:
    status, code, message = error_of(await create(client, "triage", {**SCRIPTED, **config}))
    assert (status, code) == (403, "HOST_PATHS_NOT_ALLOWED")
    assert message.startswith(path)


async def test_a_watched_folder_cannot_be_added_over_the_api_either(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage", SCRIPTED)
    r = await client.patch(
        "/processes/triage/config",
        json={"add_triggers": [{"type": "file_watch", "watch_path": "/etc"}]},
    )
    assert error_of(r)[:2] == (403, "HOST_PATHS_NOT_ALLOWED")
    process = runtime.get("triage")
    assert process is not None
    assert process.triggers == []


async def test_a_webhook_trigger_on_a_busy_port_is_taken_back(runtime: AgentRuntime) -> None:
    api = OrchestrationAPI(runtime, port=0)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            await create(client, "triage", SCRIPTED)
            r = await client.patch(
                "/processes/triage/config",
                json={
                    "add_triggers": [
                        {"type": "webhook", "webhook_path": "/t", "webhook_port": api.port}
                    ]
                },
            )
    finally:
        await api.stop()
    assert error_of(r)[:2] == (409, "PORT_UNAVAILABLE")
    process = runtime.get("triage")
    assert process is not None
    assert process.triggers == []


async def test_a_process_whose_webhook_port_is_busy_is_not_deployed(
    runtime: AgentRuntime,
) -> None:
    api = OrchestrationAPI(runtime, port=0)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            trigger = {"type": "webhook", "webhook_path": "/t", "webhook_port": api.port}
            r = await create(client, "triage", {**SCRIPTED, "triggers": [trigger]})
    finally:
        await api.stop()
    assert error_of(r)[:2] == (409, "PORT_UNAVAILABLE")
    assert "triage" not in runtime


async def test_inject_refuses_a_trigger_id_the_process_does_not_have_as_the_cli_does(
    client: httpx.AsyncClient,
) -> None:
    """Regression: POST /inject took any trigger_id, where `tether inject --trigger-id`
    refused one naming no trigger of the process."""
    desk = {"type": "event", "id": "desk", "event_type": "ticket"}
    await create(client, "triage", {**SCRIPTED, "triggers": [desk]})
    r = await client.post("/processes/triage/inject", json={"trigger_id": "nope"})
    assert error_of(r) == (
        422,
        "UNKNOWN_TRIGGER",
        "trigger_id: process 'triage' has no trigger 'nope' (its triggers: desk); leave "
        "trigger_id out to inject a manual event",
    )
    known = await client.post("/processes/triage/inject", json={"trigger_id": "desk", "wait": 10})
    manual = await client.post("/processes/triage/inject", json={"trigger_id": "cli"})
    assert (known.status_code, manual.status_code) == (202, 202)


async def test_inject_with_wait_answers_the_outcome_once_decided(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage", SCRIPTED)
    process = runtime.get("triage")
    assert process is not None

    async def refuses(ctx: HookContext) -> None:
        if "refund" in ctx.data["prompt"]:
            raise HookBlocked("refunds need a human")

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, refuses, name="gate")
    done = await client.post("/processes/triage/inject", json={"payload": "hi", "wait": 10})
    refused = await client.post("/processes/triage/inject", json={"payload": "refund", "wait": 10})
    at_once = await client.post("/processes/triage/inject", json={"payload": "refund"})
    assert done.status_code == 202
    assert (done.json()["status"], done.json()["outcome"]) == ("done", "success")
    assert (refused.json()["status"], refused.json()["reason"]) == (
        "dead_lettered",
        "blocked by hook",
    )
    assert refused.json()["error"] == "refunds need a human"
    assert at_once.json()["status"] == "queued"  # decided later, by the worker
