"""Hooks as users write them: callback hooks that call the libraries real hooks call (httpx,
the openai SDK, anyio, task groups, timeouts of their own, threads, subprocesses, Redis), through
``HookManager.dispatch`` with and without a default timeout, and as extension-point handlers.

Regression: the engine stepped hook coroutines by hand and took anyio's own cancel-scope
cancellation (httpx's connect) for a cancellation of the dispatch, so every httpx or openai call
in a hook failed with ``CancelledError("Cancelled via cancel scope ...")``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from _redis_support import REDIS_URL
from tether.hooks import HookContext, HookEvent, HookManager, HookTimeoutError
from tether.testing import FakeLLM

UPS = HookEvent.USER_PROMPT_SUBMIT
Hook = Callable[[HookContext], Awaitable[None]]


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A tiny real HTTP server: echoes the request body (or ``{}``) as JSON."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.decode().split("\r\n"):
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    body = await reader.readexactly(length) if length else b"{}"
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    writer.close()


async def _never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await asyncio.sleep(60)
    finally:
        writer.close()


@pytest.fixture
async def http_url() -> AsyncIterator[str]:
    server = await asyncio.start_server(_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
async def silent_url() -> AsyncIterator[str]:
    server = await asyncio.start_server(_never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"
        server.close()
        await asyncio.sleep(0.05)  # the handler's close runs


def _hooks(http_url: str, llm_url: str) -> dict[str, Hook]:
    async def httpx_get(ctx: HookContext) -> None:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{http_url}/policy")
        ctx.set("status", answer.status_code)

    async def httpx_post_json(ctx: HookContext) -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.post(f"{http_url}/notify", json={"prompt": ctx.data["prompt"]})
        ctx.set("status", answer.json()["prompt"] == ctx.data["prompt"] and 200)

    async def openai_sdk(ctx: HookContext) -> None:
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=llm_url, api_key="test") as client:
            reply = await client.chat.completions.create(
                model="gpt-5-mini", messages=[{"role": "user", "content": ctx.data["prompt"]}]
            )
        ctx.set("status", 200 if reply.choices[0].message.content else 0)

    async def anyio_task_group(ctx: HookContext) -> None:
        done: list[int] = []

        async def one(n: int) -> None:
            await anyio.sleep(0.01)
            done.append(n)

        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(one, n)
        with anyio.move_on_after(0.01):  # a cancel scope of the hook's own
            await anyio.sleep(1)
        ctx.set("status", 200 if sorted(done) == [0, 1, 2] else 0)

    async def asyncio_task_group(ctx: HookContext) -> None:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(asyncio.sleep(0.01, result=n)) for n in range(3)]
        ctx.set("status", 200 if [t.result() for t in tasks] == [0, 1, 2] else 0)

    async def inner_timeout_caught(ctx: HookContext) -> None:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            pass
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(1), 0.01)
        ctx.set("status", 200)

    async def helper_task_cancelled(ctx: HookContext) -> None:
        helper = asyncio.create_task(asyncio.sleep(10))
        await asyncio.sleep(0.01)
        helper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await helper
        ctx.set("status", 200 if helper.cancelled() else 0)

    async def shielded(ctx: HookContext) -> None:
        value = await asyncio.shield(asyncio.sleep(0.01, result=200))
        ctx.set("status", value)

    async def in_a_thread(ctx: HookContext) -> None:
        ctx.set("status", await asyncio.to_thread(lambda: 200))

    async def subprocess_exec(ctx: HookContext) -> None:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "print(200)", stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
        ctx.set("status", int(out))

    async def redis_ping(ctx: HookContext) -> None:
        import redis.asyncio as redis

        client = redis.Redis.from_url(REDIS_URL)
        try:
            ctx.set("status", 200 if await client.ping() else 0)
        finally:
            await client.aclose()

    return {
        fn.__name__: fn
        for fn in (
            httpx_get,
            httpx_post_json,
            openai_sdk,
            anyio_task_group,
            asyncio_task_group,
            inner_timeout_caught,
            helper_task_cancelled,
            shielded,
            in_a_thread,
            subprocess_exec,
            redis_ping,
        )
    }


NAMES = [
    "httpx_get",
    "httpx_post_json",
    "openai_sdk",
    "anyio_task_group",
    "asyncio_task_group",
    "inner_timeout_caught",
    "helper_task_cancelled",
    "shielded",
    "in_a_thread",
    "subprocess_exec",
    "redis_ping",
]


@pytest.mark.parametrize("default_timeout", [None, 30])
@pytest.mark.parametrize("name", NAMES)
async def test_a_hook_calling_a_real_library_works_through_dispatch(
    name: str, default_timeout: float | None, http_url: str, llm: FakeLLM
) -> None:
    manager = HookManager(default_timeout=default_timeout)
    manager.register(UPS, _hooks(http_url, llm.base_url)[name], fail_closed=True)
    result = await manager.dispatch(UPS, {"prompt": "hello"})
    assert (result.blocked, result.errors) == (False, [])
    assert result.data["status"] == 200


@pytest.mark.parametrize("name", NAMES)
async def test_a_handler_calling_a_real_library_works_as_an_extension_point(
    name: str, http_url: str, llm: FakeLLM
) -> None:
    hook = _hooks(http_url, llm.base_url)[name]

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


async def test_an_httpx_request_to_a_server_that_never_answers_times_out(
    silent_url: str,
) -> None:
    async def asks(ctx: HookContext) -> None:
        async with httpx.AsyncClient() as client:
            await client.get(silent_url)

    manager = HookManager()
    manager.register(UPS, asks, timeout=0.3, fail_closed=True)
    started = time.monotonic()
    result = await manager.dispatch(UPS, {"prompt": "x"})
    assert time.monotonic() - started < 3  # bounded: the server would hold it for 60 s
    assert result.blocked
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


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
