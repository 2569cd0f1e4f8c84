"""A configuration never shows a secret it holds: not in a dump, not in the error that refuses
it."""

from __future__ import annotations

import json

from tether import AgentProcess, AgentRuntime, ProcessConfig
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
        assert dumped["url"] == "https://bot:***@crm.example/mcp"
        [loaded] = json.loads(model.model_dump_json())["mcp_servers"]
        assert loaded["url"] == "https://bot:***@crm.example/mcp"
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
