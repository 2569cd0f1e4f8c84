"""Calling an extension point with 10 trivial handlers: tether beside pluggy, in one run.

Run: ``.venv/bin/python bench/extension_points.py`` (pluggy is a dev/bench-only dependency).

tether: ``await manager.call("ticket.classify", text=...)`` on a HookManager holding 10 trivial
handlers (sync, then async), collecting every result, with the 30 s default timeout an
AgentProcess's manager has. pluggy: ``pm.hook.classify(text=...)`` with 10 trivial hookimpls of
one hookspec. Every handler returns 1 (pluggy leaves None results out of its list), so both
return the same list of 10 results. The figure is the best of several
repeats, in microseconds per call, with the garbage collector paused while timing.

Target (issue 6): tether at most 2x pluggy.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pluggy

from tether import HookManager

HANDLERS = 10
ITERATIONS = 50_000
REPEATS = 7
TARGET = 2.0
POINT = "ticket.classify"
TEXT = "The invoice total is wrong"

spec = pluggy.HookspecMarker("bench")
impl = pluggy.HookimplMarker("bench")


class Spec:
    @spec
    def classify(self, text: str) -> Any:
        """Classify a ticket."""


def pluggy_manager(n: int) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("bench")
    pm.add_hookspecs(Spec)
    for i in range(n):

        class Impl:
            @impl
            def classify(self, text: str) -> Any:
                return 1

        pm.register(Impl(), name=f"impl-{i}")
    return pm


def tether_manager(n: int, *, asynchronous: bool) -> HookManager:
    manager = HookManager(default_timeout=30)
    for _ in range(n):
        if asynchronous:

            async def handler(text: str) -> Any:
                return 1

            manager.register(POINT, handler)
        else:

            def sync_handler(text: str) -> Any:
                return 1

            manager.register(POINT, sync_handler)
    return manager


def best(timings: list[float], iterations: int) -> float:
    return min(timings) / iterations * 1e6


def time_pluggy(n: int) -> float:
    call = pluggy_manager(n).hook.classify
    assert call(text=TEXT) == [1] * n
    timings = []
    for _ in range(REPEATS):
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(ITERATIONS):
                call(text=TEXT)
            timings.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return best(timings, ITERATIONS)


async def time_tether(n: int, *, asynchronous: bool) -> float:
    call: Callable[..., Awaitable[Any]] = tether_manager(n, asynchronous=asynchronous).call
    assert await call(POINT, text=TEXT) == [1] * n
    timings = []
    for _ in range(REPEATS):
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(ITERATIONS):
                await call(POINT, text=TEXT)
            timings.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return best(timings, ITERATIONS)


async def main() -> None:
    pluggy_us = time_pluggy(HANDLERS)
    rows = [
        (f"pluggy pm.hook.classify, {HANDLERS} hookimpls", pluggy_us),
        (
            f"tether await call(), {HANDLERS} sync handlers",
            await time_tether(HANDLERS, asynchronous=False),
        ),
        (
            f"tether await call(), {HANDLERS} async handlers",
            await time_tether(HANDLERS, asynchronous=True),
        ),
        ("pluggy pm.hook.classify, 0 hookimpls", time_pluggy(0)),
        ("tether await call(), 0 handlers", await time_tether(0, asynchronous=False)),
    ]
    print(f"Extension point call, best of {REPEATS} x {ITERATIONS} calls")
    print(f"pluggy {pluggy.__version__}; tether HookManager(default_timeout=30)")
    print(f"{'':<44}{'µs/call':>10}{'x pluggy':>10}")
    for label, us in rows:
        print(f"{label:<44}{us:>10.2f}{us / pluggy_us:>10.2f}")
    worst = max(us for label, us in rows[1:3]) / pluggy_us
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"\n{HANDLERS} handlers: tether is {worst:.2f}x pluggy; {verdict} the {TARGET:g}x target")


if __name__ == "__main__":
    asyncio.run(main())
