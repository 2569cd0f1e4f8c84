"""Cost of hook-run history: the dispatch benchmark with and without a recorder, in one run.

Run: ``.venv/bin/python bench/history.py``. The rows are those of ``bench/dispatch.py`` (the same
trivial and suspending hooks, the same data, a 30 s default timeout in force). Each row times
one manager with no recorder and one with a ``HistoryRecorder`` attached, interleaved in this
one run, and keeps the best of REPEATS for each side (robust to a noisy machine), with the
garbage collector paused while timing. The recorder is a process's ordinary history: a
1,000-entry ring, records built only when read. Every run is timed on its own (perf_counter)
and its changes found by comparing the data before and after it.

Budget (issue 15): with history on, at most 1 µs per hook more than with history off, judged
(as the dispatch budget is) on the chains of N=10 and N=100 hooks; the one-hook row shows what a
recorded dispatch costs on its own (its record, the first copy of the data), shared by its hooks.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Final

from tether import HookBlocked, HookContext, HookManager
from tether.hooks._history import HistoryRecorder

sys.path.insert(0, str(Path(__file__).parent))
from dispatch import DATA, EVENT, Hook, suspending_hooks, trivial_hooks

REPEATS = 25
PER_HOOK_BUDGET: Final = 1.0


def manager_with(hooks: list[Hook], history: bool) -> HookManager:
    manager = HookManager(default_timeout=30)
    for fn in hooks:
        manager.register(EVENT, fn)
    if history:
        manager.recorder = HistoryRecorder("bench")
    return manager


async def timed(manager: HookManager, k: int) -> float:
    dispatch = manager.dispatch
    start = time.perf_counter()
    for _ in range(k):
        await dispatch(EVENT, DATA, process_id="bench")
    return time.perf_counter() - start


async def measure(hooks: list[Hook], iterations: int) -> tuple[float, float]:
    """µs per dispatch without and with history: best of REPEATS, interleaved."""
    off, on = manager_with(hooks, False), manager_with(hooks, True)
    for manager in (off, on):  # warm the chain caches and fill the ring
        await timed(manager, max(1000, min(iterations, 2000)))
    best_off = best_on = float("inf")
    gc.disable()
    try:
        for _ in range(REPEATS):
            best_off = min(best_off, await timed(off, iterations))
            best_on = min(best_on, await timed(on, iterations))
    finally:
        gc.enable()
    recorded = on.recorder.runs() if on.recorder is not None else []  # type: ignore[attr-defined]
    assert recorded, "the recorder recorded nothing"
    return best_off / iterations * 1e6, best_on / iterations * 1e6


def policy_hooks(n: int) -> list[Hook]:
    """Hooks doing the least a real policy hook does: read a field of the data and test it."""

    def make() -> Hook:
        async def hook(ctx: HookContext) -> None:
            prompt = ctx.data.get("prompt", "")
            if "password" in prompt.lower() or len(prompt) > 10_000:
                raise HookBlocked("refused")

        return hook

    return [make() for _ in range(n)]


async def main() -> None:
    rows: list[tuple[str, int, float, float]] = []
    for n in (1, 10, 100):
        iterations = max(500, 40_000 // n)
        rows.append((f"{n} trivial", n, *await measure(trivial_hooks(n), iterations)))
    rows.append(("10 suspending", 10, *await measure(suspending_hooks(10), 2_000)))
    scale = await measure(policy_hooks(10), 4_000)

    print("HookManager.dispatch without and with a HistoryRecorder attached")
    print(f"{'hooks':<16}{'off µs':>10}{'on µs':>10}{'µs/hook more':>14}  budget")
    worst = 0.0
    for label, n, off_us, on_us in rows:
        per_hook = (on_us - off_us) / n
        budget = "-"
        if n >= 10:
            worst = max(worst, per_hook)
            budget = f"{'within' if per_hook <= PER_HOOK_BUDGET else 'OVER'} {PER_HOOK_BUDGET:g} µs"
        print(f"{label:<16}{off_us:>10.2f}{on_us:>10.2f}{per_hook:>14.2f}  {budget}")
    verdict = "within" if worst <= PER_HOOK_BUDGET else "OVER"
    print(f"worst at N >= 10: {worst:.2f} µs a hook more with history on: {verdict} the budget")
    off_us, on_us = scale
    print(
        f"for scale, not a dispatch-benchmark row: 10 hooks that read the prompt and check it "
        f"{off_us:.2f} -> {on_us:.2f} µs ({(on_us - off_us) / 10:.2f} µs a hook more)"
    )


if __name__ == "__main__":
    asyncio.run(main())
