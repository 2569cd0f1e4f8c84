"""Fixtures of the cluster tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _cluster_support import PrivateRedis


@pytest.fixture
async def private_redis(task_watchdog: None) -> AsyncIterator[PrivateRedis]:
    """A redis-server of the test's own on a free port (killed after the test)."""
    server = PrivateRedis().start()
    try:
        yield server
    finally:
        server.kill()
