"""Hooks as users write them, in a running process: the callback hooks of
``_user_hooks_support`` (httpx, aiohttp, the openai SDK, anyio, task groups, threads,
subprocesses, Redis, PostgreSQL, NATS) registered on ``process.hooks`` and as plugin methods;
stuck mid-call, each is timed out; and tether's own prompt hook with an ``openai:`` model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from _process_support import completions, plugin_process, run_task
from _user_hooks_support import (
    LIBRARY_HOOKS,
    STUCK_HOOKS,
    Hook,
    library_hooks,
    needs,
    serve_http,
    stuck_hooks,
)
from tether import AgentProcess, HookConfig, HookEvent, Plugin, PluginContext, ProcessConfig
from tether.models import ScriptedModel
from tether.testing import FakeLLM

UPS = HookEvent.USER_PROMPT_SUBMIT


@pytest.fixture
async def http_url() -> AsyncIterator[str]:
    async with serve_http() as url:
        yield url


@pytest.fixture
async def silent_url() -> AsyncIterator[str]:
    async with serve_http(silent=True) as url:
        yield url


def recording(hook: Hook, statuses: list[Any]) -> Hook:
    """``hook``, then what it found (the ``status`` it set) kept in ``statuses``."""

    async def recorded(ctx: Any) -> None:
        await hook(ctx)
        statuses.append(ctx.data.get("status"))

    return recorded


def as_plugin(hook: Hook, statuses: list[Any], timeout: float | None = None) -> Plugin:
    class UsersPlugin(Plugin):
        name = "users"

        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            await recording(hook, statuses)(ctx)

    plugin = UsersPlugin()
    plugin.timeout = timeout
    return plugin


async def one_ticket(process: AgentProcess) -> str:
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
    assert rec.outcomes() == ["success"], process.dead_letters
    return event_id


@pytest.mark.parametrize("name", LIBRARY_HOOKS)
async def test_a_process_hook_calling_a_real_library_works(
    name: str, http_url: str, llm: FakeLLM
) -> None:
    if LIBRARY_HOOKS[name]:
        await needs(LIBRARY_HOOKS[name])
    statuses: list[Any] = []
    process = plugin_process()
    hook = library_hooks(http_url, llm.base_url)[name]
    process.hooks.register(UPS, recording(hook, statuses), fail_closed=True)
    await one_ticket(process)
    assert statuses == [200]


@pytest.mark.parametrize("name", LIBRARY_HOOKS)
async def test_a_plugin_method_calling_a_real_library_works(
    name: str, http_url: str, llm: FakeLLM
) -> None:
    if LIBRARY_HOOKS[name]:
        await needs(LIBRARY_HOOKS[name])
    statuses: list[Any] = []
    process = plugin_process(as_plugin(library_hooks(http_url, llm.base_url)[name], statuses))
    event_id = await one_ticket(process)
    assert statuses == [200]
    assert process.plugins.task_warnings(event_id) == []


@pytest.mark.parametrize("name", STUCK_HOOKS)
async def test_a_process_hook_stuck_mid_call_is_timed_out_and_blocks_fail_closed(
    name: str, silent_url: str
) -> None:
    if STUCK_HOOKS[name]:
        await needs(STUCK_HOOKS[name])
    model = ScriptedModel()
    process = plugin_process(model=model)
    process.hooks.register(UPS, stuck_hooks(silent_url)[name], timeout=0.3, fail_closed=True)
    rec = completions(process)
    async with process:
        await run_task(process, rec)
    [dead] = process.dead_letters
    assert dead["error"].startswith("hook failed (fail_closed): ")
    assert "timed out after 0.3s" in dead["error"]
    assert model.requests == []  # refused before the model was asked


@pytest.mark.parametrize("name", STUCK_HOOKS)
async def test_a_plugin_method_stuck_mid_call_is_timed_out_and_warned_about(
    name: str, silent_url: str
) -> None:
    if STUCK_HOOKS[name]:
        await needs(STUCK_HOOKS[name])
    statuses: list[Any] = []
    process = plugin_process(as_plugin(stuck_hooks(silent_url)[name], statuses, timeout=0.3))
    event_id = await one_ticket(process)
    assert statuses == []  # it never got past its call
    assert process.plugins.task_warnings(event_id) == [
        "plugin:users: on_user_prompt_submit timed out or was cancelled"
    ]


# -- tether's prompt hook, end to end with an openai: model --------------------------------


def judged(policy: str) -> AgentProcess:
    hook = HookConfig(event="user_prompt_submit", prompt=policy, fail_closed=True)
    return AgentProcess("judged", ProcessConfig(model="openai:gpt-5-mini", hooks=[hook]))


@pytest.mark.llm(openai_env=True)
async def test_a_prompt_hooks_deny_from_an_openai_model_refuses_the_event(llm: FakeLLM) -> None:
    llm.tool_calls = [("decide", {"decision": "deny", "reason": "it asks for a password"})]
    process = judged("Deny tickets about passwords.")
    rec = completions(process)
    async with process:
        await run_task(process, rec, "Reset my password please")

    [dead] = process.dead_letters
    assert dead["error"] == "it asks for a password"
    [question] = llm.requests  # the hook's call reached the model; the run never happened
    assert question["messages"][0]["content"].endswith("Deny tickets about passwords.")
    assert "Reset my password please" in question["messages"][-1]["content"]
    assert [t["function"]["name"] for t in question["tools"]] == ["decide"]


@pytest.mark.llm(openai_env=True, reply="Escalated to the network team.")
async def test_a_prompt_hooks_allow_from_an_openai_model_lets_the_run_go_ahead(
    llm: FakeLLM,
) -> None:
    llm.tool_calls = [("decide", {"decision": "allow", "reason": "an ordinary ticket"})]
    process = judged("Deny tickets about passwords.")
    await one_ticket(process)

    assert process.dead_letters == []
    question, run = llm.requests
    assert [t["function"]["name"] for t in question["tools"]] == ["decide"]
    assert "Login is down" in json_text(run["messages"])
    [hook_run] = [r for r in process.history.runs() if r.event == "user_prompt_submit"]
    assert hook_run.outcome == "passed"


def json_text(messages: list[dict[str, Any]]) -> str:
    return " ".join(str(m.get("content")) for m in messages)
