"""``tether hooks runs --show-changes``: who rewrote what, with the value before and after."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tether import AgentRuntime, HookContext, HookEvent, HookManager
from tether.api import OrchestrationAPI

TOKEN = "t0ken"


@pytest.fixture
async def api() -> AsyncIterator[OrchestrationAPI]:
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    process = await runtime.add_process("triage", {"model": "scripted"})

    async def tidy(ctx: HookContext) -> None:
        ctx.data["prompt"] = "TIDIED"

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, tidy, name="tidy")
    api = OrchestrationAPI(runtime, port=0, token=TOKEN, webhooks=False)
    await api.start()
    yield api
    await api.stop()
    await runtime.stop_all()


async def inject(api: OrchestrationAPI) -> None:
    process = api.runtime.get("triage")
    assert process is not None
    async with httpx.AsyncClient(
        base_url=f"{api.url}/api/v1", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as client:
        r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "x"}})
        assert r.status_code in (200, 201, 202), r.text
    async with asyncio.timeout(10):
        while not process.hook_runs(event="user_prompt_submit"):
            await asyncio.sleep(0.01)


async def test_show_changes_prints_each_rewrite_with_before_and_after(
    cli: Any, api: OrchestrationAPI
) -> None:
    await inject(api)
    args = ("--url", api.url, "--token", TOKEN, "--event", "user_prompt_submit")
    done = await cli("hooks", "runs", "triage", "--show-changes", *args)
    assert done.returncode == 0, done.stderr
    assert "CHANGES" in done.stdout
    assert 'prompt: "ticket: x' in done.stdout  # repr of the prompt before (it holds a quote)
    assert "-> 'TIDIED'" in done.stdout
    plain = await cli("hooks", "runs", "triage", *args)
    assert "CHANGES" not in plain.stdout


async def test_the_json_answer_carries_the_changes(cli: Any, api: OrchestrationAPI) -> None:
    await inject(api)
    args = ("--url", api.url, "--token", TOKEN, "--event", "user_prompt_submit", "--json")
    done = await cli("hooks", "runs", "triage", *args)
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)
    assert run["changes"]["prompt"]["after"] == "TIDIED"
    assert run["changes"]["prompt"]["before"].startswith("ticket: x")
    assert run["required"] is False


async def test_piped_show_changes_keeps_each_value_whole(cli: Any, api: OrchestrationAPI) -> None:
    """Regression: `hooks runs --show-changes | cat` cut values at 60 characters, hiding the
    change itself, though piped output is whole (docs/cli.md)."""
    process = api.runtime.get("triage")
    assert process is not None
    long = "the customer asks for a refund of order 1182 " * 4 + "END-OF-PROMPT"

    async def rewrite(ctx: HookContext) -> None:
        ctx.data["prompt"] = long

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, rewrite, name="long", priority=-10)
    await inject(api)
    args = ("--url", api.url, "--token", TOKEN, "--hook", "long", "--show-changes")
    done = await cli("hooks", "runs", "triage", *args)
    assert done.returncode == 0, done.stderr
    assert f"-> {long!r}" in done.stdout
    assert "..." not in done.stdout
