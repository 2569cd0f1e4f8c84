"""A configuration never shows a secret it holds: not in a dump, not in the error that refuses
it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from tether import AgentProcess, AgentRuntime, McpServerConfig, ProcessConfig, WebhookTrigger
from tether.hooks import HookConfig
from tether.manifest import ProcessSpec, spec_to_process_config

CANARY = "config-canary-41b9e2"
URL = f"https://bot:{CANARY}@crm.example/mcp"


def test_a_configs_dumps_never_show_the_password_of_an_mcp_servers_url() -> None:
    """Regression: ``model_dump()`` and ``model_dump_json()`` of a configuration showed an MCP
    server's url as given, ``http://user:password@host`` and all (repr and str did not)."""
    config = ProcessConfig(model="scripted", mcp_servers=[{"name": "crm", "url": URL}])
    spec = ProcessSpec.model_validate({"model": "scripted", "mcp_servers": [{"url": URL}]})

    for model in (config, spec):
        [dumped] = model.model_dump()["mcp_servers"]
        assert dumped["url"] == "https://bot:****@crm.example/mcp"
        [loaded] = json.loads(model.model_dump_json())["mcp_servers"]
        assert loaded["url"] == "https://bot:****@crm.example/mcp"
        assert CANARY not in model.model_dump_json()


async def test_an_mcp_servers_url_keeps_its_password_where_the_server_is_reached_from(
    runtime: AgentRuntime,
) -> None:
    """The entry itself (what connects to the server reads it) keeps the url as given, in code,
    from a manifest's spec and in a running process; only dumps mask it."""
    server = {"name": "crm", "url": URL}
    config = ProcessConfig(model="scripted", mcp_servers=[server])
    spec = ProcessSpec.model_validate({"model": "scripted", "mcp_servers": [server]})
    process = await runtime.add_process("crm", spec_to_process_config(spec))

    assert config.mcp_servers[0]["url"] == URL
    assert process.config.mcp_servers[0]["url"] == URL
    assert AgentProcess("again", config).config.mcp_servers[0]["url"] == URL


@pytest.mark.parametrize("value", [12345678, 1234.5678, ["abcd5678"], {"v": "abcd5678"}])
def test_a_secret_of_the_wrong_type_is_refused_naming_its_field_but_not_its_value(
    value: object,
) -> None:
    """Regression: a declared secret given as another type than a string (an int, say) was
    echoed in the validation error of a configuration built in code."""
    with pytest.raises(ValidationError) as refused:
        ProcessConfig(model="scripted", secrets={"CRM_TOKEN": value})

    shown = str(refused.value)
    assert "secrets.CRM_TOKEN" in shown
    assert "Input should be a valid string" in shown
    for part in ("12345678", "1234.5678", "abcd5678"):
        assert part not in shown
    assert "abcd5678" not in repr(refused.value)


def test_a_secret_under_a_misspelt_field_is_refused_without_its_value() -> None:
    """Regression: ``secret=`` for ``secrets=`` was refused as an unknown field, the secret it
    held quoted in the error."""
    with pytest.raises(ValidationError) as refused:
        ProcessConfig(model="scripted", secret={"CRM_TOKEN": CANARY})  # type: ignore[call-arg]

    assert "secret\n  Extra inputs are not permitted" in str(refused.value)
    assert CANARY not in str(refused.value)


def test_a_spec_built_in_code_refuses_a_secret_of_the_wrong_type_without_its_value() -> None:
    with pytest.raises(ValidationError) as refused:
        ProcessSpec.model_validate({"model": "scripted", "secrets": {"CRM_TOKEN": 12345678}})

    assert "secrets.CRM_TOKEN" in str(refused.value)
    assert "12345678" not in str(refused.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda: HookConfig(event="task_created", command=["gate"], env={"TOKEN": 99887766}),
        lambda: WebhookTrigger(webhook_path="/t", secret=99887766),
    ],
    ids=["hook env", "webhook secret"],
)
def test_a_hooks_env_value_or_a_webhook_key_of_the_wrong_type_is_refused_without_its_value(
    build: Callable[[], object],
) -> None:
    """Regression: a hook's ``env`` value or a webhook trigger's ``secret`` given as another
    type than a string was echoed in the validation error."""
    with pytest.raises(ValidationError) as refused:
        build()

    assert "Input should be a valid string" in str(refused.value)
    assert "<int, not shown>" in str(refused.value)  # what it got: the type alone
    assert "99887766" not in str(refused.value)
    assert "99887766" not in repr(refused.value.errors())


async def test_an_mcp_server_configs_repr_and_dumps_never_show_its_urls_password(
    runtime: AgentRuntime,
) -> None:
    """Regression: a ``McpServerConfig`` (what ``add_mcp_server`` and the API's
    ``add_mcp_servers`` take) showed its url as given in its repr, str and dumps; the entry a
    process keeps still has it whole."""
    server = McpServerConfig(name="crm", url=URL)
    process = await runtime.add_process("crm", ProcessConfig(model="scripted"))
    assert await process.add_mcp_server(server)

    for shown in (repr(server), str(server), str(server.model_dump()), server.model_dump_json()):
        assert "https://bot:****@crm.example/mcp" in shown
        assert CANARY not in shown
    assert server.entry()["url"] == URL
    assert process.config.mcp_servers[0]["url"] == URL
