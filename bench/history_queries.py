"""Reading the hook-run history back from SQLite: the API's filters over 100,000 stored runs.

Run: ``.venv/bin/python bench/history_queries.py``.

One process's 100,000 runs are written to a fresh SQLite file in batches, as its recorder
writes them (five events in turn; one run in 100 ``blocked``; a small data dict before and
after each), beside another process's 100,000. Each row times ``HistoryStore.query`` (what
``process.hook_runs(...)`` and ``GET /processes/{name}/hooks/runs`` read) and keeps the best of
REPEATS; "rows" is how many runs it answers. The query plan SQLite chose is printed beside it.

Target (issue 28): ``outcome=blocked`` at most 5 ms; ``last=1000`` cheaper than that.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from tether.hooks import HookRun
from tether.store import HistoryStore

RUNS = 100_000
BATCH = 1_000
REPEATS = 15
TARGET_MS = 5.0
EVENTS = ("task_created", "user_prompt_submit", "pre_tool_use", "post_tool_use", "task_completed")


def run(process: str, i: int, start: float) -> HookRun:
    return HookRun(
        recorded_at=start + i * 0.001,
        hook_id=f"hook-{i % 3}",
        hook_name=f"audit-{i % 3}",
        event=EVENTS[i % len(EVENTS)],
        process_id=process,
        source="code",
        mode="sync",
        outcome="blocked" if i % 100 == 0 else "success",
        duration_ms=0.05,
        error=None,
        patch_applied=False,
        dispatch_id=f"bench-{i}",
        dispatch_depth=0,
        data_before={"ticket": f"Login is down ({i})"},
        data_after={"ticket": f"Login is down ({i})"},
    )


def fill(store: HistoryStore) -> float:
    start = time.time() - RUNS
    for process in ("bench", "other"):
        for first in range(0, RUNS, BATCH):
            store.write([run(process, i, start) for i in range(first, first + BATCH)])
    return start


def best_ms(store: HistoryStore, filters: dict[str, Any]) -> tuple[float, int]:
    times = []
    rows = 0
    for _ in range(REPEATS):
        begin = time.perf_counter()
        rows = len(store.query("bench", **filters))
        times.append(time.perf_counter() - begin)
    return min(times) * 1e3, rows


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = HistoryStore(Path(folder) / "history.db")
        start = fill(store)
        since = start + (RUNS - 5_000) * 0.001
        rows: list[tuple[str, dict[str, Any]]] = [
            ("outcome=blocked", {"outcome": "blocked"}),
            ("event=pre_tool_use", {"event": "pre_tool_use"}),
            ("since (last 5,000 runs)", {"since": since}),
            ("last=1000", {"last": 1000}),
            ("outcome=blocked, last=10", {"outcome": "blocked", "last": 10}),
        ]
        print(f"HistoryStore.query over {RUNS:,} runs of one process (and {RUNS:,} of another)")
        print(f"{'filter':<28}{'best ms':>9}{'rows':>7}  plan")
        results = {}
        for label, filters in rows:
            ms, count = best_ms(store, filters)
            results[label] = ms
            plan = "; ".join(store.plan("bench", **filters))
            print(f"{label:<28}{ms:>9.2f}{count:>7}  {plan}")
        store.close()
    blocked, last = results["outcome=blocked"], results["last=1000"]
    print(
        f"target: outcome=blocked <= {TARGET_MS} ms: {'ok' if blocked <= TARGET_MS else 'MISSED'}"
    )
    print(f"        last=1000 cheaper than that: {'ok' if last <= TARGET_MS else 'MISSED'}")


if __name__ == "__main__":
    main()
