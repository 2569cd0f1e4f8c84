"""Nothing reaches a host secret through the control API (real HTTP on 127.0.0.1): configuration
sent over HTTP names no host variable the operator did not allow, an HTTP MCP server's url is
held to the allowed hosts, the token-less API takes no request from another origin, and with a
token the dashboard opens from another machine."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _cli_support import running
from _executor_support import PolicyServer
from _mcp_support import start_http_server
from tether import AgentRuntime, TriggerEvent
from tether.api import OrchestrationAPI
from tether.api._errors import APIConfigError

SCRIPTED: dict[str, Any] = {"model": "scripted", "stop_timeout": 2.0}
CANARY = "canary-host-secret-5c81f0"


@pytest.fixture(autouse=True)
def host_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret in the host's environment, as AWS_SECRET_ACCESS_KEY would be."""
    monkeypatch.setenv("TETHER_TEST_HOST_SECRET", CANARY)


@pytest.fixture
async def api(runtime: AgentRuntime) -> AsyncIterator[OrchestrationAPI]:
    """An API that allows commands and hosts on this machine: only the variable check refuses."""
    api = OrchestrationAPI(
        runtime,
        port=0,
        webhooks=False,
        allow_command_deploys=True,
        allowed_hook_hosts=["127.0.0.1"],
    )
    async with api:
        yield api


async def create(client: httpx.AsyncClient, config: dict[str, Any]) -> httpx.Response:
    return await client.post("/processes", json={"name": "desk", "config": {**SCRIPTED, **config}})


REF = "${TETHER_TEST_HOST_SECRET}"
HTTP_MCP = {"name": "docs", "url": "http://127.0.0.1:9/mcp"}
URL_HOOK = {"event": "task_created", "url": "http://127.0.0.1:9/hook"}


@pytest.mark.parametrize(
    ("config", "path"),
    [
        (
            {"mcp_servers": [{**HTTP_MCP, "headers": {"Authorization": f"Bearer {REF}"}}]},
            "config.mcp_servers[0].headers.Authorization",
        ),
        (
            {"mcp_servers": [{"name": "fs", "command": ["mcp-fs"], "env": {"TOKEN": REF}}]},
            "config.mcp_servers[0].env.TOKEN",
        ),
        ({"hooks": [{**URL_HOOK, "headers": {"X-Key": REF}}]}, "config.hooks[0].headers.X-Key"),
        ({"hooks": [{**URL_HOOK, "secret": REF}]}, "config.hooks[0].secret"),
        (
            {"hooks": [{"event": "task_created", "command": ["true"], "env": {"K": REF}}]},
            "config.hooks[0].env.K",
        ),
        ({"secrets": {"CRM": REF}}, "config.secrets.CRM"),
        (
            {"triggers": [{"type": "webhook", "webhook_path": "/t", "secret": REF}]},
            "config.triggers[0].secret",
        ),
        ({"instructions": "Use ${TETHER_TEST_HOST_SECRET:-none}."}, "config.instructions"),
    ],
)
async def test_a_deployed_config_naming_a_host_variable_answers_403_naming_field_and_variable(
    runtime: AgentRuntime, client: httpx.AsyncClient, config: dict[str, Any], path: str
) -> None:
    r = await create(client, config)

    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "ENV_NOT_ALLOWED"
    assert error["message"].startswith(f"Refusing {path}: it names the host environment variable")
    assert "'TETHER_TEST_HOST_SECRET'" in error["message"]
    assert "--allow-env TETHER_TEST_HOST_SECRET" in error["message"]
    assert error["details"] == [
        {"path": path, "message": "names the host environment variable 'TETHER_TEST_HOST_SECRET'"}
    ]
    assert CANARY not in r.text
    assert "desk" not in runtime


async def test_a_patch_naming_a_host_variable_answers_403_and_changes_nothing(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    process = await runtime.add_process("desk", SCRIPTED)
    servers = [{**HTTP_MCP, "headers": {"Authorization": REF}}]
    triggers = [{"type": "webhook", "webhook_path": "/t", "secret": REF}]

    r = await client.patch(
        "/processes/desk/config",
        json={"mission": "Help.", "add_mcp_servers": servers, "add_triggers": triggers},
    )

    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "ENV_NOT_ALLOWED"
    assert [d["path"] for d in error["details"]] == [
        "add_mcp_servers[0].headers.Authorization",
        "add_triggers[0].secret",
    ]
    assert error["message"].startswith("Refusing add_mcp_servers[0].headers.Authorization (and 1")
    assert process.config.mission is None
    assert process.config.mcp_servers == []


@pytest.mark.slow
async def test_a_variable_the_operator_allowed_is_resolved_for_an_mcp_server(
    runtime: AgentRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_MCP_TOKEN", "tok-allowed-9e1d")
    server = await start_http_server("http", token="tok-allowed-9e1d")
    entry = {
        "name": "docs",
        "url": server.url,
        "headers": {"Authorization": "Bearer ${TETHER_TEST_MCP_TOKEN}"},
    }
    api = OrchestrationAPI(
        runtime,
        port=0,
        webhooks=False,
        allowed_hook_hosts=["127.0.0.1"],
        allowed_env=["TETHER_TEST_MCP_TOKEN"],
    )
    try:
        async with api, httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            r = await create(client, {"mcp_servers": [entry]})
            assert r.status_code == 201, r.text
            state = await _mcp_state(client, "docs")
    finally:
        await server.kill()
    assert state == "connected"  # the fixture server refuses a request without the token


async def _mcp_state(client: httpx.AsyncClient, name: str) -> str:
    async with asyncio.timeout(10):
        while True:
            view = (await client.get("/processes/desk")).json()["mcp_servers"][name]
            if view["state"] not in ("connecting", "disconnected", "pending"):
                return str(view["state"])
            await asyncio.sleep(0.02)


async def test_an_allowed_variable_lets_only_itself_through(
    runtime: AgentRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_HOOK_KEY", "hook-key-77ab")
    async with PolicyServer() as service:
        hook = {
            "event": "task_created",
            "url": f"{service.url}/allow",
            "headers": {"X-Key": "${TETHER_TEST_HOOK_KEY}"},
        }
        api = OrchestrationAPI(
            runtime,
            port=0,
            webhooks=False,
            allowed_hook_hosts=["127.0.0.1"],
            allowed_env=["TETHER_TEST_HOOK_KEY"],
        )
        async with api, httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            other = {**hook, "headers": {"X-Key": "${TETHER_TEST_HOOK_KEY}", "X-More": REF}}
            refused = await create(client, {"hooks": [other]})
            assert refused.status_code == 403
            assert [d["path"] for d in refused.json()["error"]["details"]] == [
                "config.hooks[0].headers.X-More"
            ]
            assert (await create(client, {"hooks": [hook]})).status_code == 201
        process = runtime.get("desk")
        assert process is not None
        await process.inject(TriggerEvent("manual", "manual", {"ticket": "1"}))
        async with asyncio.timeout(10):
            while not service.requests:
                await asyncio.sleep(0.01)
    assert service.requests[0].headers["x-key"] == "hook-key-77ab"


def test_allowed_env_takes_only_variable_names(runtime: AgentRuntime) -> None:
    with pytest.raises(APIConfigError, match=r"allowed_env: '\$\{HOME\}' is not an environment"):
        OrchestrationAPI(runtime, allowed_env=["${HOME}"])
    with pytest.raises(APIConfigError, match="allowed_env must be a list"):
        OrchestrationAPI(runtime, allowed_env="HOME")


@pytest.mark.slow
async def test_serve_allow_env_lets_api_clients_name_that_variable_only() -> None:
    env = {"TETHER_TEST_HOST_SECRET": CANARY, "TETHER_TEST_SHARED": "shared", "PATH": "/usr/bin"}
    argv = ["-c", "import sys; from tether.cli import main; sys.exit(main())", "serve"]
    options = ["--port", "0", "--quiet", "--allow-env", "TETHER_TEST_SHARED"]
    async with running(sys.executable, *argv, *options, env=env) as serve:
        await serve.read_until("control API on")
        await serve.read_until("Ctrl-C")
        [url] = re.findall(r"control API on (http://\S+/api/v1)", "".join(serve.seen))
        async with httpx.AsyncClient(base_url=url) as client:
            allowed = await create(client, {"instructions": "Say ${TETHER_TEST_SHARED}."})
            refused = await client.post(
                "/processes", json={"name": "other", "config": {"secrets": {"K": REF}}}
            )
        await serve.stop()
    assert allowed.status_code == 201, allowed.text
    assert refused.json()["error"]["code"] == "ENV_NOT_ALLOWED"
    assert "API configuration may name these host variables: TETHER_TEST_SHARED" in "".join(
        serve.seen
    )


# -- HTTP MCP servers: the allowed hosts ------------------------------------------------------


async def test_an_http_mcp_server_on_a_host_not_allowed_answers_403_naming_the_field(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    server = {"name": "docs", "url": "https://collect.evil.example/mcp"}
    r = await create(client, {"mcp_servers": [server]})

    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "MCP_HOST_NOT_ALLOWED"
    assert error["message"].startswith("Refusing config.mcp_servers[0].url: ")
    assert (
        "'collect.evil.example' is not in this API's allowed_hook_hosts (127.0.0.1)"
        in (error["message"])
    )
    assert "desk" not in runtime


async def test_a_patch_adding_an_http_mcp_server_on_a_host_not_allowed_answers_403(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    process = await runtime.add_process("desk", SCRIPTED)
    server = {"name": "docs", "url": "https://collect.evil.example/mcp"}
    r = await client.patch("/processes/desk/config", json={"add_mcp_servers": [server]})

    assert r.status_code == 403, r.text
    assert r.json()["error"]["code"] == "MCP_HOST_NOT_ALLOWED"
    assert r.json()["error"]["message"].startswith("Refusing add_mcp_servers[0].url: ")
    assert process.config.mcp_servers == []


async def test_without_allowed_hosts_no_http_mcp_server_can_be_deployed(
    runtime: AgentRuntime,
) -> None:
    async with (
        OrchestrationAPI(runtime, port=0, webhooks=False, allow_command_deploys=True) as api,
        httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client,
    ):
        r = await create(client, {"mcp_servers": [HTTP_MCP]})
    assert (r.status_code, r.json()["error"]["code"]) == (403, "MCP_HOST_NOT_ALLOWED")
    assert "none: the list is empty" in r.json()["error"]["message"]


# -- origins and hosts -------------------------------------------------------------------------


async def test_the_token_less_api_refuses_a_page_of_localhost_on_another_port(
    runtime: AgentRuntime, api: OrchestrationAPI
) -> None:
    """Regression: the token-less API took a POST from any page on this machine, a local
    development server's (``localhost:3000``) included, though docs/api.md says another
    origin is refused."""
    body = {"name": "desk", "config": SCRIPTED}
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
        other = await client.post(
            "/processes", json=body, headers={"Origin": "http://localhost:3000"}
        )
        no_port = await client.post("/processes", json=body, headers={"Origin": "http://localhost"})
        assert "desk" not in runtime
        own = await client.post(
            "/processes", json=body, headers={"Origin": f"http://localhost:{api.port}"}
        )
    assert (other.status_code, other.json()["error"]["code"]) == (403, "FORBIDDEN")
    assert "'http://localhost:3000'" in other.json()["error"]["message"]
    assert no_port.status_code == 403
    assert own.status_code == 201, own.text


async def test_with_a_token_the_dashboard_opens_from_another_machine(
    runtime: AgentRuntime,
) -> None:
    """Regression: with a token (as on 0.0.0.0), the dashboard answered 403 to any Host that
    is not a loopback name, so it never opened from another machine."""
    remote = {"Host": "tether.example.net:9781"}
    async with (
        OrchestrationAPI(runtime, port=0, webhooks=False, token="tok-dash-31") as api,
        httpx.AsyncClient(base_url=api.url) as client,
    ):
        page = await client.get("/", headers=remote)
        data = await client.get("/api/v1/processes", headers=remote)
        authorized = await client.get(
            "/api/v1/processes", headers={**remote, "Authorization": "Bearer tok-dash-31"}
        )
    assert page.status_code == 200, page.text
    assert "text/html" in page.headers["content-type"]
    assert data.status_code == 401  # the data still needs the token
    assert authorized.status_code == 200


async def test_without_a_token_the_dashboard_refuses_a_host_that_is_not_loopback(
    api: OrchestrationAPI,
) -> None:
    async with httpx.AsyncClient(base_url=api.url) as client:
        page = await client.get("/", headers={"Host": "tether.example.net"})
    assert page.status_code == 403
