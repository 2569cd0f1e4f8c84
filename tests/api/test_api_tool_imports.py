"""Over the API, tools by import path and Claude Code hook files need allow_command_deploys
(403 COMMANDS_NOT_ALLOWED otherwise, tested with the other program-running fields in
test_api.py); allowed, they load, and what cannot be loaded is a 422 naming the entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tether import AgentRuntime, HookEvent


async def create(client: httpx.AsyncClient, config: dict[str, Any]) -> httpx.Response:
    return await client.post(
        "/processes", json={"name": "shop", "config": {"model": "scripted", **config}}
    )


async def test_a_tool_by_import_path_is_deployed_when_commands_are_allowed(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, {"tools": ["_tool_support:lookup_order"]})
    assert r.status_code == 201, r.text
    process = runtime.get("shop")
    assert process is not None  # created: the tool was imported (see the 422 below)
    assert process.config.tools == ["_tool_support:lookup_order"]


async def test_a_tool_that_cannot_be_imported_answers_422_naming_it(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, {"tools": ["no_such_package.tools:lookup"]})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["message"].startswith("config.tools[0]: tool 'no_such_package.tools:lookup'")
    assert "shop" not in runtime


async def test_a_malformed_import_path_answers_422_naming_it(client: httpx.AsyncClient) -> None:
    r = await create(client, {"tools": ["lookup order"]})
    assert r.status_code == 422
    assert r.json()["error"]["details"][0]["path"] == "config.tools[0]"


async def test_claude_code_hooks_are_deployed_when_commands_are_allowed(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Path
) -> None:
    file = tmp_path / "hooks.json"
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}
    file.write_text(json.dumps({"hooks": hooks}))
    r = await create(client, {"claude_code_hooks": [str(file)]})
    assert r.status_code == 201, r.text
    process = runtime.get("shop")
    assert process is not None
    [hook] = process.hooks.describe(HookEvent.PRE_TOOL_USE)
    assert hook.matcher == {"tool_name": ["Bash"]}


async def test_a_claude_code_hooks_file_that_cannot_be_read_answers_422(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    r = await create(client, {"claude_code_hooks": [str(tmp_path / "missing.json")]})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error["message"].startswith("config.claude_code_hooks: ")
    assert "cannot read" in error["message"]


async def test_the_catalog_says_which_command_hooks_speak_claude_codes_protocol(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    file = tmp_path / "hooks.json"
    file.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}})
    )
    config = {
        "claude_code_hooks": [str(file)],
        "hooks": [{"event": "task_completed", "command": ["true"], "name": "plain"}],
    }
    assert (await create(client, config)).status_code == 201
    entries = (await client.get("/hooks/catalog", params={"process": "shop"})).json()["hooks"]
    assert {(h["name"], h["source"], h["protocol"]) for h in entries} == {
        ("x", "claude-code", "claude-code"),
        ("plain", "config", "tether"),
    }
