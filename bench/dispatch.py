"""Cost of HookManager.dispatch beside awaiting the same callbacks directly, in one run.

Run: ``.venv/bin/python bench/dispatch.py``. Every row is measured in this one run: the baseline
awaits the very callbacks the manager holds, one after another, on a prepared HookContext. The
manager has a 30 s default timeout in force, as an AgentProcess's manager does.

Budgets (issue 24, ceilings, not targets): a dispatch with no hook within 3 µs; at N=10 and N=100
trivial hooks, each under its 30 s timeout, at most 8 µs per hook (dispatch µs / N). Each hook is
awaited under its timeout (a bare ``async with asyncio.timeout(30): await hook(ctx)`` costs
~4.5-6 µs on the 2-core machine); the ``timeout`` row measures exactly that for comparison.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from tether import HookContext, HookEvent, HookManager

EVENT = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "What is the capital of France?", "event_id": "ev-1", "trigger_id": "t-1"}
REPEATS = 25  # interleaved runs per row; the best of each side is kept (robust to noise)
EMPTY_BUDGET: Final = 3.0
PER_HOOK_BUDGET: Final = 8.0
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


async def measure(hooks: list[Hook], iterations: int) -> tuple[float, float]:
    """µs per dispatch and µs per direct pass over ``hooks``: best of REPEATS, interleaved."""
    manager = HookManager(default_timeout=30)
    for fn in hooks:
        manager.register(EVENT, fn)
    dispatch = manager.dispatch
    ctx = HookContext(EVENT, "bench", dict(DATA))

    async def via_manager(k: int) -> float:
        start = time.perf_counter()
        for _ in range(k):
            await dispatch(EVENT, DATA, process_id="bench")
        return time.perf_counter() - start

    async def direct(k: int) -> float:
        start = time.perf_counter()
        for _ in range(k):
            for fn in hooks:
                await fn(ctx)
        return time.perf_counter() - start

    await via_manager(min(iterations, 1000))  # warm the chain cache
    best_manager = best_direct = float("inf")
    gc.disable()
    try:
        for _ in range(REPEATS):
            best_manager = min(best_manager, await via_manager(iterations))
            best_direct = min(best_direct, await direct(iterations))
    finally:
        gc.enable()
    return best_manager / iterations * 1e6, best_direct / iterations * 1e6


def verdict(value: float, budget: float) -> str:
    return f"{'within' if value <= budget else 'OVER'} {budget:g} µs"


async def main() -> None:
    rows: list[tuple[str, int, float, float]] = []
    for n in (0, 1, 10, 100):
        iterations = max(500, 40_000 // max(n, 1))
        rows.append(("trivial", n, *await measure(trivial_hooks(n), iterations)))
    rows.append(("suspending", 10, *await measure(suspending_hooks(10), 2_000)))

    print("HookManager(default_timeout=30).dispatch vs awaiting the same callbacks directly")
    header = f"{'hooks':<16}{'dispatch µs':>14}{'direct µs':>12}{'above µs':>12}"
    print(f"{header}{'µs/hook above':>16}  budget")
    for kind, n, dispatch_us, direct_us in rows:
        above = dispatch_us - direct_us
        per_hook = above / n if n else 0.0
        budget = ""
        if n == 0:
            budget = verdict(dispatch_us, EMPTY_BUDGET)
        elif n in (10, 100) and kind == "trivial":
            budget = verdict(dispatch_us / n, PER_HOOK_BUDGET) + " a hook (dispatch / N)"
        shown = f"{per_hook:.2f}" if n else "-"
        print(
            f"{f'{n} {kind}':<16}{dispatch_us:>14.2f}{direct_us:>12.2f}{above:>12.2f}"
            f"{shown:>16}  {budget}"
        )


if __name__ == "__main__":
    asyncio.run(main())
