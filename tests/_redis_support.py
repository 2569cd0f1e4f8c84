"""The Redis of the cluster tests (127.0.0.1:6379 unless TETHER_REDIS_URL says otherwise),
behind the ``redis_url`` and ``redis_prefix`` fixtures of ``tests/conftest.py``.

Without Redis those tests skip, saying why; under TETHER_REQUIRE_REDIS=1 (CI) they fail.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator

import pytest

__all__ = ["REDIS_URL", "key_prefix", "require_redis"]

REDIS_URL = os.environ.get("TETHER_REDIS_URL", "redis://127.0.0.1:6379/0")


async def _reachable(url: str) -> str | None:
    try:
        from redis.asyncio import Redis
    except ImportError:
        return "the redis package is not installed (pip install 'tether[redis]')"
    client = Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    try:
        await client.ping()
    except Exception as exc:
        return f"no Redis at {url}: {exc}"
    finally:
        await client.aclose()
    return None


async def require_redis() -> str:
    """The URL of a Redis that answers; skips (or fails under TETHER_REQUIRE_REDIS=1)."""
    problem = await _reachable(REDIS_URL)
    if problem is not None:
        if os.environ.get("TETHER_REQUIRE_REDIS") == "1":
            pytest.fail(f"TETHER_REQUIRE_REDIS=1 but {problem}")
        pytest.skip(f"cluster tests need Redis: {problem}")
    return REDIS_URL


@contextlib.asynccontextmanager
async def key_prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix no other test uses; its keys are deleted on the way out."""
    from redis.asyncio import Redis

    name = f"tether-test-{uuid.uuid4().hex[:12]}"
    yield name
    client = Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(f"{name}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
