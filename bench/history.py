"""Cost of hook-run history: the dispatch benchmark with and without a recorder attached.

Run: python bench/history.py   (target: history on slows a dispatch by at most 25%)
"""

from __future__ import annotations

import asyncio
import time

from tether import HookEvent, HookManager
from tether.hooks._history import HistoryRecorder

ROUNDS = 20_000


async def trivial(ctx: object) -> None:
    return None


async def measure(hooks: int, history: bool) -> float:
    manager = HookManager(default_timeout=30)
    for _ in range(hooks):
        manager.register(HookEvent.USER_PROMPT_SUBMIT, trivial)
    if history:
        manager.recorder = HistoryRecorder("bench")
    data = {"prompt": "hello", "event_id": "e1", "trigger_id": "t", "trigger_type": "manual"}
    for _ in range(500):
        await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(ROUNDS // max(hooks, 1)):
            await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
        elapsed = (time.perf_counter() - start) / (ROUNDS // max(hooks, 1))
        best = min(best, elapsed)
    return best * 1e6


async def main() -> None:
    print(f"{'hooks':>6} {'off µs/dispatch':>16} {'on µs/dispatch':>15} {'slowdown':>9}")
    for n in (1, 10, 100):
        off = await measure(n, False)
        on = await measure(n, True)
        print(f"{n:>6} {off:>16.2f} {on:>15.2f} {100 * (on / off - 1):>8.0f}%")


if __name__ == "__main__":
    asyncio.run(main())
