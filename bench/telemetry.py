"""Cost of telemetry on the dispatch path: a recorded dispatch, then the same with listeners.

Run: ``.venv/bin/python bench/telemetry.py``. Each row dispatches ``bench/dispatch.py``'s
trivial hooks through a manager with an ordinary HistoryRecorder (the baseline, measured in
this same run), then with what telemetry adds on that path: a lazy history listener (what the
dashboard's feed pays while no page streams: the records are built only when read), a
listener that gets the records built at once (what every observer below pays), a
``Telemetry`` with Prometheus metrics, and one with OpenTelemetry spans into the SDK's
in-memory exporter (a span per hook run). Best of REPEATS for each, interleaved, garbage
collector paused while timing.

No target is set for these (telemetry is opt-in); the table is there so a change that makes
observing much dearer shows.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tether import HookManager, HookRun, Telemetry
from tether.hooks._history import HistoryRecorder

sys.path.insert(0, str(Path(__file__).parent))
from dispatch import DATA, EVENT, trivial_hooks

REPEATS = 15


def with_metrics() -> Telemetry:
    from tether.telemetry._metrics import Metrics

    return Telemetry(metrics=Metrics())


def with_spans() -> Telemetry:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry.with_provider(provider, metrics=False)
    telemetry.exporter = exporter  # type: ignore[attr-defined]  # cleared between rounds
    return telemetry


def manager(
    n: int, listen: Callable[[HookManager], Callable[..., None]] | None, *, lazy: bool = False
) -> HookManager:
    m = HookManager(default_timeout=30)
    for fn in trivial_hooks(n):
        m.register(EVENT, fn)
    history = HistoryRecorder("bench")
    m.recorder = history
    if listen is not None:
        history.add_listener(listen(m), lazy=lazy)
    return m


async def timed(m: HookManager, k: int) -> float:
    dispatch = m.dispatch
    start = time.perf_counter()
    for _ in range(k):
        await dispatch(EVENT, DATA, process_id="bench")
    return time.perf_counter() - start


async def row(n: int) -> list[float]:
    metrics, spans = with_metrics(), with_spans()

    def observed(telemetry: Telemetry) -> Callable[[HookManager], Callable[[list[HookRun]], None]]:
        def listen(m: HookManager) -> Callable[[list[HookRun]], None]:
            return lambda runs: telemetry.hook_runs("bench", m, runs)

        return listen

    def noop(m: HookManager) -> Callable[..., None]:
        return lambda runs: None

    managers = [
        manager(n, None),
        manager(n, noop, lazy=True),
        manager(n, noop),
        manager(n, observed(metrics)),
        manager(n, observed(spans)),
    ]
    iterations = max(200, 10_000 // n)
    for m in managers:
        await timed(m, 500)
    best = [float("inf")] * len(managers)
    gc.disable()
    try:
        for _ in range(REPEATS):
            for i, m in enumerate(managers):
                best[i] = min(best[i], await timed(m, iterations))
            spans.exporter.clear()  # type: ignore[attr-defined]
    finally:
        gc.enable()
    return [b / iterations * 1e6 for b in best]


async def main() -> None:
    print("HookManager.dispatch (µs) with a HistoryRecorder, and what telemetry adds to it")
    heads = ("recorded", "+feed", "+records", "+metrics", "+spans")
    print(f"{'hooks':<8}" + "".join(f"{head:>10}" for head in heads))
    for n in (1, 10):
        times = await row(n)
        print(f"{n:<8}" + "".join(f"{t:>10.2f}" for t in times))
        print(f"{'':<8}{'':>10}" + "".join(f"{t / times[0]:>9.1f}x" for t in times[1:]))


if __name__ == "__main__":
    asyncio.run(main())
