"""Hooks as users write them: callback hooks that call the libraries real hooks call (httpx,
aiohttp, the openai SDK, anyio, task groups, timeouts of their own, threads, subprocesses, Redis,
PostgreSQL, NATS), through ``HookManager.dispatch`` with and without a default timeout, and as
extension-point handlers; stuck mid-call, each is timed out.

Regression: the engine stepped hook coroutines by hand and took anyio's own cancel-scope
cancellation (httpx's connect) for a cancellation of the dispatch, so every httpx or openai call
in a hook failed with ``CancelledError("Cancelled via cancel scope ...")``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from _user_hooks_support import (
    LIBRARY_HOOKS,
    STUCK_HOOKS,
    library_hooks,
    needs,
    serve_http,
    stuck_hooks,
)
from tether.hooks import HookContext, HookEvent, HookManager, HookTimeoutError
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


@pytest.mark.parametrize("default_timeout", [None, 30])
@pytest.mark.parametrize("name", LIBRARY_HOOKS)
async def test_a_hook_calling_a_real_library_works_through_dispatch(
    name: str, default_timeout: float | None, http_url: str, llm: FakeLLM
) -> None:
    if LIBRARY_HOOKS[name]:
        await needs(LIBRARY_HOOKS[name])
    manager = HookManager(default_timeout=default_timeout)
    manager.register(UPS, library_hooks(http_url, llm.base_url)[name], fail_closed=True)
    result = await manager.dispatch(UPS, {"prompt": "hello"})
    assert (result.blocked, result.errors) == (False, [])
    assert result.data["status"] == 200


@pytest.mark.parametrize("name", LIBRARY_HOOKS)
async def test_a_handler_calling_a_real_library_works_as_an_extension_point(
    name: str, http_url: str, llm: FakeLLM
) -> None:
    if LIBRARY_HOOKS[name]:
        await needs(LIBRARY_HOOKS[name])
    hook = library_hooks(http_url, llm.base_url)[name]

    async def handler(prompt: str) -> Any:
        ctx = HookContext(UPS, "p", {"prompt": prompt})
        await hook(ctx)
        return ctx.data["status"]

    manager = HookManager(default_timeout=30)
    manager.register("policy.check", handler)
    errors: list[BaseException] = []
    manager.on_error(lambda info: errors.append(info.error))
    assert await manager.call("policy.check", firstresult=True, prompt="hi") == 200
    assert errors == []


@pytest.mark.parametrize("default_timeout", [None, 30])
@pytest.mark.parametrize("name", STUCK_HOOKS)
async def test_a_hook_stuck_mid_call_times_out_at_its_timeout(
    name: str, default_timeout: float | None, silent_url: str
) -> None:
    if STUCK_HOOKS[name]:
        await needs(STUCK_HOOKS[name])
    manager = HookManager(default_timeout=default_timeout)
    manager.register(UPS, stuck_hooks(silent_url)[name], timeout=0.3, fail_closed=True)
    started = time.monotonic()
    result = await manager.dispatch(UPS, {"prompt": "x"})
    elapsed = time.monotonic() - started
    assert result.blocked
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert elapsed < 5, elapsed  # bounded: each call would hold it for 60 s


@pytest.mark.parametrize("name", STUCK_HOOKS)
async def test_a_handler_stuck_mid_call_times_out_as_an_extension_point(
    name: str, silent_url: str
) -> None:
    if STUCK_HOOKS[name]:
        await needs(STUCK_HOOKS[name])
    hook = stuck_hooks(silent_url)[name]

    async def handler(prompt: str) -> Any:
        await hook(HookContext(UPS, "p", {"prompt": prompt}))
        return "answered"

    manager = HookManager()
    manager.register("policy.check", handler, timeout=0.3)
    errors: list[BaseException] = []
    manager.on_error(lambda info: errors.append(info.error))
    assert await manager.call("policy.check", firstresult=True, prompt="hi") is None
    assert [type(e) for e in errors] == [HookTimeoutError]


@pytest.mark.slow
async def test_a_hook_that_swallows_its_timeout_once_and_goes_on_is_cancelled_again() -> None:
    cancels: list[str] = []

    async def stubborn(ctx: HookContext) -> None:
        for _ in range(3):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancels.append("swallowed")

    manager = HookManager()
    manager.register(UPS, stubborn, timeout=0.05)
    result = await asyncio.wait_for(manager.dispatch(UPS, {"prompt": "x"}), 10)
    assert cancels == ["swallowed"] * 3
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_a_prompt_hook_json_answer_from_the_openai_sdk_decides(llm: FakeLLM) -> None:
    """A policy hook that asks a model through the openai SDK and refuses on its answer."""
    from openai import AsyncOpenAI

    from tether.hooks import HookBlocked

    async def policy(ctx: HookContext) -> None:
        async with AsyncOpenAI(base_url=llm.base_url, api_key="test") as client:
            reply = await client.chat.completions.create(
                model="gpt-5-mini",
                messages=[{"role": "user", "content": json.dumps(ctx.data)}],
            )
        if reply.choices[0].message.content:
            raise HookBlocked(f"the model said: {reply.choices[0].message.content[:20]}")

    manager = HookManager(default_timeout=30)
    manager.register(UPS, policy)
    result = await manager.dispatch(UPS, {"prompt": "refund please"})
    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("the model said: ")
    assert llm.requests  # the question reached the model
