"""The order of declared hooks over the control API: POST /processes takes before/after that
name a hook declared later or a runtime's shared hook; a cycle or an unknown name answers 422
at ``config.hooks[i].before``/``.after``; the catalog shows the resolved order."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx

from tether import AgentRuntime, HookContext, HookEvent, load_manifest, manifest_to_process_config

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You sort tickets."}


def hook(name: str, **options: Any) -> dict[str, Any]:
    return {"event": "task_created", "command": ["true"], "name": name, **options}


async def create(client: httpx.AsyncClient, name: str, hooks: list[Any]) -> httpx.Response:
    return await client.post(
        "/processes", json={"name": name, "config": {**SCRIPTED, "hooks": hooks}}
    )


async def catalog_order(client: httpx.AsyncClient, process: str) -> list[tuple[str, int, str]]:
    r = await client.get("/hooks/catalog")
    assert r.status_code == 200, r.text
    return [
        (h["name"], h["order"], h["source"])
        for h in r.json()["hooks"]
        if h["process"] == process and h["event"] == "task_created"
    ]


async def test_a_forward_reference_is_accepted_and_the_catalog_shows_the_order(
    client: httpx.AsyncClient,
) -> None:
    r = await create(client, "fwd", [hook("x", after=["y"], priority=9), hook("y")])
    assert r.status_code == 201, r.text
    assert await catalog_order(client, "fwd") == [("y", 0, "config"), ("x", 1, "config")]


async def test_a_config_hook_after_a_shared_runtime_hook_is_accepted(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    async def audit(ctx: HookContext) -> None:
        pass

    runtime.hooks.register(HookEvent.TASK_CREATED, audit, name="audit", priority=-5)
    r = await create(client, "after-audit", [hook("report", after=["audit"], priority=5)])
    assert r.status_code == 201, r.text
    assert await catalog_order(client, "after-audit") == [
        ("audit", 0, "shared"),
        ("report", 1, "config"),
    ]


async def test_a_cycle_answers_422_naming_the_cycle_and_the_hook(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, "looped", [hook("x", after=["y"]), hook("y", after=["x"])])
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"] == [
        {
            "path": "config.hooks[1].after",
            "message": "hook 'y': hooks' before/after make a cycle: 'x' -> 'y' -> 'x'",
        }
    ]
    assert runtime.get("looped") is None


async def test_an_unknown_name_answers_422_at_the_hooks_field(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    r = await create(client, "lost", [hook("x"), hook("y", before=["nope"])])
    assert r.status_code == 422, r.text
    (detail,) = r.json()["error"]["details"]
    assert detail["path"] == "config.hooks[1].before"
    assert detail["message"].startswith("hook 'y': before names 'nope', which no hook of")
    assert runtime.get("lost") is None


async def test_a_manifest_in_forward_order_runs_in_it_and_the_catalog_shows_it(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Path
) -> None:
    log = tmp_path / "ran.txt"

    def command(name: str) -> str:
        return f"[{sys.executable!r}, -c, \"open({str(log)!r}, 'a').write('{name} ')\"]"

    text = f"""\
        version: 1
        name: ordered
        model: scripted
        hooks:
          - {{event: task_created, name: report, after: [redact], command: {command("report")}}}
          - {{event: task_created, name: redact, after: [scan], command: {command("redact")}}}
          - {{event: task_created, name: scan, command: {command("scan")}}}
        """
    path = tmp_path / "ordered.agent"
    path.write_text(textwrap.dedent(text))
    process = await runtime.add_process("ordered", manifest_to_process_config(load_manifest(path)))
    result = await process.hooks.dispatch(HookEvent.TASK_CREATED, {})
    assert result.errors == []
    assert log.read_text().split() == ["scan", "redact", "report"]
    assert await catalog_order(client, "ordered") == [
        ("scan", 0, "manifest"),
        ("redact", 1, "manifest"),
        ("report", 2, "manifest"),
    ]
