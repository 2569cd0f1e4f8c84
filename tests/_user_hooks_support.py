"""Hooks as users write them: callback hooks that call the client libraries real hooks call
(httpx, aiohttp, the openai SDK, anyio, task groups, timeouts of their own, threads,
subprocesses, Redis, PostgreSQL through asyncpg, NATS), and the same calls stuck mid-way.

Each hook sets ``status`` to 200 in the event data when its call worked. The services are the
real ones of these machines (Redis, PostgreSQL, NATS on 127.0.0.1); without one, the tests that
need it skip saying why, and under ``TETHER_REQUIRE_SERVICES=1`` (CI) they fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import httpx
import pytest

from _redis_support import REDIS_URL, require_redis

__all__ = [
    "LIBRARY_HOOKS",
    "NATS_URL",
    "POSTGRES_URL",
    "STUCK_HOOKS",
    "Hook",
    "library_hooks",
    "needs",
    "serve_http",
    "stuck_hooks",
]

POSTGRES_URL = os.environ.get(
    "TETHER_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
NATS_URL = os.environ.get("TETHER_NATS_URL", "nats://127.0.0.1:4222")

#: A hook taking any hook context (a HookContext or a PluginContext).
Hook = Callable[[Any], Awaitable[None]]


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


@contextlib.asynccontextmanager
async def serve_http(*, silent: bool = False) -> AsyncIterator[str]:
    """A real HTTP server on a free loopback port: an echo, or one that never answers."""
    server = await asyncio.start_server(_never_answer if silent else _answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}"
        server.close()
        await asyncio.sleep(0.05)  # the handlers' close runs


async def _problem(service: str) -> str | None:
    try:
        if service == "postgres":
            import asyncpg

            connection = await asyncpg.connect(POSTGRES_URL, timeout=2)
            await connection.close()
        elif service == "nats":
            import nats

            client = await nats.connect(NATS_URL, connect_timeout=2, max_reconnect_attempts=0)
            await client.close()
    except Exception as exc:
        return f"no {service} at {POSTGRES_URL if service == 'postgres' else NATS_URL}: {exc}"
    return None


async def needs(service: str) -> None:
    """Skip (or fail under TETHER_REQUIRE_SERVICES=1) when ``service`` does not answer."""
    if service == "redis":
        await require_redis()
        return
    problem = await _problem(service)
    if problem is not None:
        if os.environ.get("TETHER_REQUIRE_SERVICES") == "1":
            pytest.fail(f"TETHER_REQUIRE_SERVICES=1 but {problem}")
        pytest.skip(problem)


def library_hooks(http_url: str, llm_url: str) -> dict[str, Hook]:
    """One working hook per library, keyed by name (see :data:`LIBRARY_HOOKS`)."""

    async def httpx_get(ctx: Any) -> None:
        async with httpx.AsyncClient() as client:
            answer = await client.get(f"{http_url}/policy")
        ctx.set("status", answer.status_code)

    async def httpx_post_json(ctx: Any) -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.post(f"{http_url}/notify", json={"prompt": ctx.data["prompt"]})
        ctx.set("status", answer.json()["prompt"] == ctx.data["prompt"] and 200)

    async def aiohttp_post_json(ctx: Any) -> None:
        import aiohttp

        payload = {"p": ctx.data["prompt"]}
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{http_url}/notify", json=payload) as r,
        ):
            body = await r.json()
        ctx.set("status", r.status if body == payload else 0)

    async def openai_sdk(ctx: Any) -> None:
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=llm_url, api_key="test") as client:
            reply = await client.chat.completions.create(
                model="gpt-5-mini", messages=[{"role": "user", "content": ctx.data["prompt"]}]
            )
        ctx.set("status", 200 if reply.choices[0].message.content else 0)

    async def anyio_task_group(ctx: Any) -> None:
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

    async def asyncio_task_group(ctx: Any) -> None:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(asyncio.sleep(0.01, result=n)) for n in range(3)]
        ctx.set("status", 200 if [t.result() for t in tasks] == [0, 1, 2] else 0)

    async def inner_timeout_caught(ctx: Any) -> None:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(1)
        except TimeoutError:
            pass
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(1), 0.01)
        ctx.set("status", 200)

    async def helper_task_cancelled(ctx: Any) -> None:
        helper = asyncio.create_task(asyncio.sleep(10))
        await asyncio.sleep(0.01)
        helper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await helper
        ctx.set("status", 200 if helper.cancelled() else 0)

    async def shielded(ctx: Any) -> None:
        value = await asyncio.shield(asyncio.sleep(0.01, result=200))
        ctx.set("status", value)

    async def in_a_thread(ctx: Any) -> None:
        ctx.set("status", await asyncio.to_thread(lambda: 200))

    async def subprocess_exec(ctx: Any) -> None:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "print(200)", stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
        ctx.set("status", int(out))

    async def redis_ping(ctx: Any) -> None:
        import redis.asyncio as redis

        client = redis.Redis.from_url(REDIS_URL)
        try:
            ctx.set("status", 200 if await client.ping() else 0)
        finally:
            await client.aclose()

    async def asyncpg_query(ctx: Any) -> None:
        import asyncpg

        connection = await asyncpg.connect(POSTGRES_URL)
        try:
            ctx.set("status", await connection.fetchval("SELECT $1::int", 200))
        finally:
            await connection.close()

    async def nats_round_trip(ctx: Any) -> None:
        import nats

        client = await nats.connect(NATS_URL)
        try:
            subject = f"tether.test.{uuid.uuid4().hex}"
            inbox = await client.subscribe(subject)
            await client.publish(subject, ctx.data["prompt"].encode())
            message = await inbox.next_msg(timeout=5)
            ctx.set("status", 200 if message.data.decode() == ctx.data["prompt"] else 0)
        finally:
            await client.close()

    hooks = (
        httpx_get,
        httpx_post_json,
        aiohttp_post_json,
        openai_sdk,
        anyio_task_group,
        asyncio_task_group,
        inner_timeout_caught,
        helper_task_cancelled,
        shielded,
        in_a_thread,
        subprocess_exec,
        redis_ping,
        asyncpg_query,
        nats_round_trip,
    )
    return {fn.__name__: fn for fn in hooks}


def stuck_hooks(silent_url: str) -> dict[str, Hook]:
    """One hook per library that gets stuck mid-call (a server that never answers, a query
    that sleeps, a message that never comes), keyed by name (see :data:`STUCK_HOOKS`)."""

    async def httpx_silent_server(ctx: Any) -> None:
        async with httpx.AsyncClient() as client:
            await client.get(silent_url)

    async def aiohttp_silent_server(ctx: Any) -> None:
        import aiohttp

        async with aiohttp.ClientSession() as session, session.get(silent_url) as answer:
            await answer.read()

    async def openai_silent_server(ctx: Any) -> None:
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=silent_url, api_key="test", max_retries=0) as client:
            await client.chat.completions.create(
                model="gpt-5-mini", messages=[{"role": "user", "content": "hi"}]
            )

    async def anyio_sleeping_task_group(ctx: Any) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.sleep, 60)

    async def redis_blocking_pop(ctx: Any) -> None:
        import redis.asyncio as redis

        client = redis.Redis.from_url(REDIS_URL)
        try:
            await client.blpop([f"tether-test-empty-{uuid.uuid4().hex}"], timeout=60)
        finally:
            await client.aclose()

    async def asyncpg_pg_sleep(ctx: Any) -> None:
        import asyncpg

        connection = await asyncpg.connect(POSTGRES_URL)
        try:
            await connection.execute("SELECT pg_sleep(60)")
        finally:
            connection.terminate()

    async def nats_message_never_comes(ctx: Any) -> None:
        import nats

        client = await nats.connect(NATS_URL)
        try:
            inbox = await client.subscribe(f"tether.test.silent.{uuid.uuid4().hex}")
            await inbox.next_msg(timeout=60)
        finally:
            await client.close()

    async def subprocess_that_sleeps(ctx: Any) -> None:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", "import time; time.sleep(60)"
        )
        try:
            await child.wait()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()

    hooks = (
        httpx_silent_server,
        aiohttp_silent_server,
        openai_silent_server,
        anyio_sleeping_task_group,
        redis_blocking_pop,
        asyncpg_pg_sleep,
        nats_message_never_comes,
        subprocess_that_sleeps,
    )
    return {fn.__name__: fn for fn in hooks}


#: The names of :func:`library_hooks`, for parametrizing (and the service each needs).
LIBRARY_HOOKS: dict[str, str | None] = {
    "httpx_get": None,
    "httpx_post_json": None,
    "aiohttp_post_json": None,
    "openai_sdk": None,
    "anyio_task_group": None,
    "asyncio_task_group": None,
    "inner_timeout_caught": None,
    "helper_task_cancelled": None,
    "shielded": None,
    "in_a_thread": None,
    "subprocess_exec": None,
    "redis_ping": "redis",
    "asyncpg_query": "postgres",
    "nats_round_trip": "nats",
}

#: The names of :func:`stuck_hooks` (and the service each needs).
STUCK_HOOKS: dict[str, str | None] = {
    "httpx_silent_server": None,
    "aiohttp_silent_server": None,
    "openai_silent_server": None,
    "anyio_sleeping_task_group": None,
    "redis_blocking_pop": "redis",
    "asyncpg_pg_sleep": "postgres",
    "nats_message_never_comes": "nats",
    "subprocess_that_sleeps": None,
}
