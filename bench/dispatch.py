"""Per-hook cost of HookManager.dispatch beside awaiting the same callbacks directly.

Run: ``.venv/bin/python bench/dispatch.py``. Every row is measured in this one run: the baseline
awaits the very callbacks the manager holds, one after another, on a prepared HookContext. The
manager has a 30 s default timeout in force, as an AgentProcess's manager does.

Targets (issue 2): 0 hooks at most 1 µs per dispatch; at most 1.5 µs per hook above the baseline.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tether import HookContext, HookEvent, HookManager

EVENT = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "What is the capital of France?", "event_id": "ev-1", "trigger_id": "t-1"}
REPEATS = 7
Hook = Callable[[HookContext], Awaitable[Any]]


def trivial_hooks(n: int) -> list[Hook]:
    def make() -> Hook:
        async def hook(ctx: HookContext) -> None:
            return None

        return hook

    return [make() for _ in range(n)]


def suspending_hooks(n: int) -> list[Hook]:
    def make() -> Hook:
        async def hook(ctx: HookContext) -> None:
            await asyncio.sleep(0)

        return hook

    return [make() for _ in range(n)]


def best_of(run: Callable[[int], Awaitable[float]], iterations: int) -> Awaitable[float]:
    async def measure() -> float:
        best = float("inf")
        for _ in range(REPEATS):
            best = min(best, await run(iterations))
        return best / iterations * 1e6

    return measure()


async def time_dispatch(hooks: list[Hook], iterations: int) -> float:
    manager = HookManager(default_timeout=30)
    for fn in hooks:
        manager.register(EVENT, fn)
    dispatch = manager.dispatch

    async def run(k: int) -> float:
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(k):
                await dispatch(EVENT, DATA, process_id="bench")
            return time.perf_counter() - start
        finally:
            gc.enable()

    await run(min(iterations, 1000))  # warm the cache
    return await best_of(run, iterations)


async def time_direct(hooks: list[Hook], iterations: int) -> float:
    ctx = HookContext(EVENT, "bench", dict(DATA))

    async def run(k: int) -> float:
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(k):
                for fn in hooks:
                    await fn(ctx)
            return time.perf_counter() - start
        finally:
            gc.enable()

    return await best_of(run, iterations)


async def main() -> None:
    rows: list[tuple[str, int, float, float]] = []
    for n in (0, 1, 10, 100):
        iterations = max(2_000, 200_000 // max(n, 1))
        hooks = trivial_hooks(n)
        rows.append(
            (
                "trivial",
                n,
                await time_dispatch(hooks, iterations),
                await time_direct(hooks, iterations),
            )
        )
    hooks = suspending_hooks(10)
    rows.append(
        ("suspending", 10, await time_dispatch(hooks, 20_000), await time_direct(hooks, 20_000))
    )

    print("HookManager(default_timeout=30).dispatch vs awaiting the same callbacks directly")
    print(f"{'hooks':<16}{'dispatch µs':>14}{'direct µs':>12}{'above µs':>12}{'µs/hook above':>16}")
    for kind, n, dispatch_us, direct_us in rows:
        above = dispatch_us - direct_us
        per_hook = f"{above / n:.2f}" if n else "-"
        print(
            f"{f'{n} {kind}':<16}{dispatch_us:>14.2f}{direct_us:>12.2f}{above:>12.2f}{per_hook:>16}"
        )


if __name__ == "__main__":
    asyncio.run(main())
