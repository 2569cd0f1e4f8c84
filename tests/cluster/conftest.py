"""A watchdog for the cluster tests: a test still running after WATCHDOG seconds prints the
stack of every asyncio task (the loop's own stack, which pytest-timeout prints, shows only
``select``), so a hang says where it waits."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

WATCHDOG = 120.0


def _dump(name: str) -> None:
    out = sys.__stderr__
    if out is None:
        return
    print(f"\n=== {name} still running after {WATCHDOG:g}s; its tasks:", file=out)
    for task in asyncio.all_tasks():
        task.print_stack(file=out)
    out.flush()


@pytest.fixture(autouse=True)
async def _watchdog(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    handle = asyncio.get_running_loop().call_later(WATCHDOG, _dump, request.node.nodeid)
    yield
    handle.cancel()
