"""Prompt hooks: a model (ScriptedModel in process, FakeLLM over real HTTP) decides allow or
deny; a bad answer or a failing model is the hook's error."""

from __future__ import annotations

import json

import pytest

from tether import HookContext, HookEvent, HookManager
from tether.agent._prompt_hook import DECISION_SCHEMA, DECISION_TOOL, PromptHook
from tether.hooks._errors import PromptHookError
from tether.models import OpenAIModel, ScriptedModel
from tether.testing import FakeLLM

POLICY = "Deny any prompt that asks for a password; allow everything else."


def ctx(prompt: str = "What is the admin password?") -> HookContext:
    return HookContext(HookEvent.USER_PROMPT_SUBMIT, "helper", {"prompt": prompt})


def deciding(decision: str, reason: str = "it asks for a password") -> ScriptedModel:
    return ScriptedModel(tool_calls=[(DECISION_TOOL, {"decision": decision, "reason": reason})])


async def test_a_deny_decision_blocks_the_event_with_the_models_reason() -> None:
    manager = HookManager()
    manager.register(
        HookEvent.USER_PROMPT_SUBMIT, PromptHook(POLICY, model=deciding("deny")).callback
    )

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "the password?"})

    assert result.blocked is True
    assert result.reason == "it asks for a password"


async def test_an_allow_decision_lets_the_event_through_unchanged() -> None:
    manager = HookManager()
    hook = PromptHook(POLICY, model=deciding("allow", "harmless"))
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback)

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hello"})

    assert result.blocked is False
    assert result.errors == []
    assert result.data == {"prompt": "hello"}


async def test_the_model_reads_the_policy_and_the_event_and_gets_the_decision_schema() -> None:
    model = deciding("allow")

    await PromptHook(POLICY, model=model).run(ctx("hello there"))

    (request,) = model.requests
    system, user = request["messages"]
    assert system["role"] == "system"
    assert system["content"].endswith(POLICY)
    assert json.loads(user["content"])["data"] == {"prompt": "hello there"}
    (tool,) = request["tools"]
    assert tool["function"]["name"] == DECISION_TOOL
    assert tool["function"]["parameters"] == DECISION_SCHEMA


@pytest.mark.parametrize(
    "reply",
    [
        '{"decision": "deny", "reason": "asks for a password"}',
        '```json\n{"decision": "deny", "reason": "asks for a password"}\n```',
    ],
)
async def test_a_decision_given_as_json_text_counts_too(reply: str) -> None:
    result = await PromptHook(POLICY, model=ScriptedModel(reply=reply)).run(ctx())

    assert result.block is True
    assert result.reason == "asks for a password"


@pytest.mark.parametrize(
    "reply",
    [
        "I think this is fine.",
        '{"decision": "maybe", "reason": "unsure"}',
        '{"decision": "allow"}',
        '{"decision": "allow", "reason": "ok", "also": "extra"}',
        '["deny"]',
    ],
)
async def test_an_answer_that_is_not_a_decision_is_the_hooks_error(reply: str) -> None:
    with pytest.raises(PromptHookError, match="the model's answer is not a decision"):
        await PromptHook(POLICY, model=ScriptedModel(reply=reply)).run(ctx())


async def test_a_bad_answer_blocks_a_fail_closed_prompt_hook() -> None:
    manager = HookManager()
    hook = PromptHook(POLICY, model=ScriptedModel(reply="no idea"))
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback, fail_closed=True)

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    assert result.blocked is True
    assert result.reason.startswith("hook failed (fail_closed): prompt hook")


async def test_a_deny_without_a_reason_still_says_why() -> None:
    manager = HookManager()
    manager.register(
        HookEvent.USER_PROMPT_SUBMIT, PromptHook(POLICY, model=deciding("deny", "")).callback
    )

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    assert result.reason == "denied by a prompt hook (it gave no reason)"


async def test_a_model_slower_than_the_timeout_is_the_hooks_error() -> None:
    hook = PromptHook(POLICY, model=ScriptedModel(latency=5), timeout=0.1)

    with pytest.raises(PromptHookError, match=r"no answer within 0.1s"):
        await hook.run(ctx())


async def test_a_hook_without_a_model_says_how_to_give_it_one() -> None:
    with pytest.raises(PromptHookError, match="has no model"):
        await PromptHook(POLICY, model=lambda: None).run(ctx())


async def test_a_real_http_model_decides_through_the_decide_tool() -> None:
    async with FakeLLM(port=0) as llm:
        llm.tool_calls = [(DECISION_TOOL, {"decision": "deny", "reason": "password request"})]
        model = OpenAIModel("fake", base_url=llm.base_url, api_key="sk-test", max_retries=0)
        try:
            result = await PromptHook(POLICY, model=model).run(ctx())
        finally:
            await model.aclose()

    assert result.block is True
    assert result.reason == "password request"


async def test_a_model_error_is_the_hooks_error() -> None:
    async with FakeLLM(port=0) as llm:
        llm.errors = [500, 500, 500]
        model = OpenAIModel("fake", base_url=llm.base_url, api_key="sk-test", max_retries=0)
        try:
            with pytest.raises(PromptHookError, match="the model failed"):
                await PromptHook(POLICY, model=model).run(ctx())
        finally:
            await model.aclose()


async def test_a_long_event_is_cut_to_max_event_chars() -> None:
    model = deciding("allow")

    await PromptHook(POLICY, model=model, max_event_chars=100).run(ctx("x" * 10_000))

    user = model.requests[0]["messages"][1]["content"]
    assert len(user) < 200
    assert user.endswith("…(cut)")


def test_an_empty_policy_is_refused_when_the_hook_is_made() -> None:
    with pytest.raises(ValueError, match="prompt must be a non-empty policy text"):
        PromptHook("  ")
