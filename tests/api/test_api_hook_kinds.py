"""Deploying the new hook kinds over the control API (real HTTP on 127.0.0.1): URL hooks only to
the operator's allowed hosts, persistent hooks as commands, prompt hooks freely."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _executor_support import PolicyServer
from tether import AgentRuntime
from tether.api import OrchestrationAPI
from tether.api._deploy import hook_host_allowed
from tether.api._errors import APIConfigError

SCRIPTED = {"model": "scripted"}


@pytest.fixture
async def service() -> AsyncIterator[PolicyServer]:
    async with PolicyServer() as server:
        yield server


async def deploy(
    runtime: AgentRuntime, config: dict[str, Any], **options: Any
) -> tuple[int, dict[str, Any]]:
    api = OrchestrationAPI(runtime, port=0, webhooks=False, **options)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            r = await client.post(
                "/processes", json={"name": "triage", "config": {**SCRIPTED, **config}}
            )
            return r.status_code, r.json()
    finally:
        await api.stop()


def url_hook(url: str) -> dict[str, Any]:
    return {"hooks": [{"event": "task_created", "url": url}]}


async def test_a_url_hook_to_an_allowed_host_is_deployed_and_runs(
    runtime: AgentRuntime, service: PolicyServer
) -> None:
    status, body = await deploy(
        runtime, url_hook(f"{service.url}/block"), allowed_hook_hosts=["127.0.0.1"]
    )

    assert status == 201, body
    process = runtime.get("triage")
    assert process is not None
    [info] = [i for i in process.hooks.describe() if i.event == "task_created"]
    assert info.executor_kind == "url"


async def test_a_url_hook_to_another_host_answers_403_naming_hook_and_host(
    runtime: AgentRuntime,
) -> None:
    status, body = await deploy(
        runtime, url_hook("https://evil.example/collect"), allowed_hook_hosts=["policy.internal"]
    )

    assert status == 403
    assert body["error"]["code"] == "HOOK_HOST_NOT_ALLOWED"
    message = body["error"]["message"]
    assert message.startswith("Refusing to deploy hooks[0].url")
    assert "'evil.example' is not in this API's allowed_hook_hosts (policy.internal)" in message
    assert "triage" not in runtime


async def test_without_an_allow_list_no_url_hook_can_be_deployed(runtime: AgentRuntime) -> None:
    status, body = await deploy(runtime, url_hook("https://policy.internal/hook"))

    assert status == 403
    assert body["error"]["code"] == "HOOK_HOST_NOT_ALLOWED"
    assert "none: the list is empty" in body["error"]["message"]


async def test_allowing_command_deploys_does_not_allow_url_hooks(runtime: AgentRuntime) -> None:
    status, body = await deploy(
        runtime, url_hook("https://policy.internal/hook"), allow_command_deploys=True
    )

    assert (status, body["error"]["code"]) == (403, "HOOK_HOST_NOT_ALLOWED")


async def test_a_persistent_hook_is_a_command_hook_to_the_api(runtime: AgentRuntime) -> None:
    hooks = [{"event": "task_created", "command": ["/bin/cat"], "persistent": True}]
    status, body = await deploy(runtime, {"hooks": hooks})

    assert status == 403
    assert body["error"]["code"] == "COMMANDS_NOT_ALLOWED"
    assert "hooks[0], a persistent command hook" in body["error"]["message"]


async def test_a_prompt_hook_may_be_deployed(runtime: AgentRuntime) -> None:
    hooks = [{"event": "user_prompt_submit", "prompt": "Deny passwords.", "model": "scripted"}]
    status, body = await deploy(runtime, {"hooks": hooks})

    assert status == 201, body


async def test_a_bad_url_hook_is_a_422_at_its_path(runtime: AgentRuntime) -> None:
    status, body = await deploy(
        runtime, url_hook("ftp://policy.internal/hook"), allowed_hook_hosts=["policy.internal"]
    )

    assert status == 422
    assert "config.hooks[0].url" in body["error"]["message"]
    assert "must start with http:// or https://" in body["error"]["message"]


@pytest.mark.parametrize(
    ("url", "allowed", "ok"),
    [
        ("https://policy.internal/hook", ["policy.internal"], True),
        ("https://POLICY.internal/hook", ["policy.internal"], True),
        ("https://policy.internal.evil.example/", ["policy.internal"], False),
        ("https://a.corp.example/hook", ["*.corp.example"], True),
        ("https://corp.example/hook", ["*.corp.example"], False),
        ("http://127.0.0.1:8080/hook", ["127.0.0.1:8080"], True),
        ("http://127.0.0.1:8081/hook", ["127.0.0.1:8080"], False),
        ("https://policy.internal/hook", ["policy.internal:443"], True),
        ("http://[::1]:9000/hook", ["[::1]:9000"], True),
        ("http://[::1]:9000/hook", ["::1"], True),
    ],
)
def test_the_allow_list_matches_host_names_patterns_and_ports(
    url: str, allowed: list[str], ok: bool
) -> None:
    assert hook_host_allowed(url, allowed) is ok


@pytest.mark.parametrize("hosts", [["https://policy.internal"], [""], "policy.internal", [5]])
def test_a_bad_allow_list_is_refused_when_the_api_is_made(
    runtime: AgentRuntime, hosts: Any
) -> None:
    with pytest.raises(APIConfigError, match="allowed_hook_hosts"):
        OrchestrationAPI(runtime, port=0, webhooks=False, allowed_hook_hosts=hosts)
