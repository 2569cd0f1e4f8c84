"""Helpers for tests that read a process's hook-run history over the control API."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx


async def runs_of(client: httpx.AsyncClient, name: str, **params: Any) -> list[dict[str, Any]]:
    """GET /processes/{name}/hooks/runs with ``params``; the runs (asserting a 200)."""
    r = await client.get(f"/processes/{name}/hooks/runs", params=params)
    assert r.status_code == 200, r.text
    runs: list[dict[str, Any]] = r.json()["runs"]
    return runs


async def wait_for_runs(
    client: httpx.AsyncClient, name: str, count: int, **params: Any
) -> list[dict[str, Any]]:
    """The runs once there are at least ``count`` (gives up after 10 s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while len(found := await runs_of(client, name, **params)) < count:
        assert loop.time() < deadline, f"gave up waiting for {count} runs: {found}"
        await asyncio.sleep(0.01)
    return found
