"""Cost of hook-run history: the engine's dispatch benchmark with and without a recorder.

Run: ``.venv/bin/python bench/history.py``. The rows are those of ``bench/dispatch.py`` (the same
trivial and suspending hooks, the same data, a 30 s default timeout in force). Each row times
one manager with no recorder and one with a ``HistoryRecorder`` attached, interleaved in this
one run, and keeps the best of REPEATS for each side (robust to a noisy machine), with the
garbage collector paused while timing, as in the dispatch benchmark. The recorder is a
process's ordinary history: a 1,000-entry ring, records built only when read.

The warm-up runs each chain past QUICK_AFTER dispatches, so a chain of trivial hooks is timed
as a long-running process times it: once per dispatch, its runs sharing the time
(``duration_shared``). The second table forces per-hook timing (QUICK_AFTER out of reach), the
cost of a chain not (yet) found fast, beside the floor of that: one clock reading per hook.

Target (issue 5): with history on, a dispatch is at most 25% slower.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Any

from tether import HookBlocked, HookContext, HookManager
from tether.hooks import _recording
from tether.hooks._history import HistoryRecorder

sys.path.insert(0, str(Path(__file__).parent))
from dispatch import DATA, EVENT, Hook, suspending_hooks, trivial_hooks

REPEATS = 25
TARGET = 25.0


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


async def rows() -> list[tuple[str, float, float]]:
    out: list[tuple[str, float, float]] = []
    for n in (1, 10, 100):
        iterations = max(500, 40_000 // n)
        out.append((f"{n} trivial", *await measure(trivial_hooks(n), iterations)))
    out.append(("10 suspending", *await measure(suspending_hooks(10), 2_000)))
    return out


def table(title: str, measured: list[tuple[str, float, float]]) -> float:
    print(title)
    print(f"{'hooks':<16}{'off µs':>10}{'on µs':>10}{'slowdown':>10}")
    worst = 0.0
    for label, off_us, on_us in measured:
        slowdown = 100 * (on_us / off_us - 1)
        worst = max(worst, slowdown)
        print(f"{label:<16}{off_us:>10.2f}{on_us:>10.2f}{slowdown:>9.0f}%")
    return worst


async def main() -> None:
    measured = await rows()
    scale = await measure(policy_hooks(10), 4_000)
    quick_after = _recording.QUICK_AFTER
    _recording.QUICK_AFTER = 2**62  # no chain is ever found fast: every hook timed alone
    try:
        exact = await rows()
    finally:
        _recording.QUICK_AFTER = quick_after

    worst = table("HookManager.dispatch without and with a HistoryRecorder attached", measured)
    verdict = "within" if worst <= TARGET else "OVER"
    print(f"worst slowdown {worst:.0f}%: {verdict} the {TARGET:.0f}% target")
    off_us, on_us = scale
    print(
        f"for scale, not a dispatch-benchmark row: 10 hooks that read the prompt and check it "
        f"{off_us:.2f} -> {on_us:.2f} µs ({100 * (on_us / off_us - 1):.0f}%)"
    )
    print()
    table("the same, every hook timed alone (a chain not yet found fast)", exact)
    # The floor of per-hook timing: what one clock reading kept per hook costs on its own,
    # measured where it sits (after stepping a hook's coroutine), beside a trivial hook's share
    # of the dispatch (from the rows above).
    per_hook_ns = (exact[2][1] - exact[1][1]) / 90 * 1e3
    clock_ns = clock_reading_ns()
    print(
        f"floor: one clock reading kept per hook, after stepping the hook, costs {clock_ns:.0f} ns"
        f" = {100 * clock_ns / per_hook_ns:.0f}% of a trivial hook's {per_hook_ns:.0f} ns share "
        f"of a dispatch"
    )


def clock_reading_ns(hooks: int = 100, rounds: int = 200) -> float:
    """ns per hook that ``marks.append(time.time())`` adds to a loop stepping trivial hooks.

    Inside such a loop the reading costs about twice what it costs in a bare loop: the
    clock's instructions wait for the interpreter's work in flight before them.
    """

    async def trivial(ctx: Any) -> None:
        return None

    chain = [trivial] * hooks
    now = time.time

    def step(marks: list[float] | None) -> None:
        for hook in chain:
            coro = hook(None)
            try:  # noqa: SIM105 (as the dispatch steps a hook; suppress() costs more)
                coro.send(None)
            except StopIteration:
                pass
            if marks is not None:
                marks.append(now())

    def best(keep: bool) -> float:
        fastest = float("inf")
        for _ in range(REPEATS * 2):
            start = time.perf_counter()
            for _ in range(rounds):
                step([] if keep else None)
            fastest = min(fastest, time.perf_counter() - start)
        return fastest / rounds / hooks * 1e9

    return min(best(True) - best(False) for _ in range(3))


def policy_hooks(n: int) -> list[Hook]:
    """Hooks doing the least a real policy hook does: read a field of the data and test it."""

    def make() -> Hook:
        async def hook(ctx: HookContext) -> None:
            prompt = ctx.data.get("prompt", "")
            if "password" in prompt.lower() or len(prompt) > 10_000:
                raise HookBlocked("refused")

        return hook

    return [make() for _ in range(n)]


if __name__ == "__main__":
    asyncio.run(main())
