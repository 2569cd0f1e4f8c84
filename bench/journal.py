"""What the journal costs per event: a journaled process beside the same process without one.

Run: ``.venv/bin/python bench/journal.py`` (``--profile`` adds a cProfile of the journaled
sequential row).

Every row is measured in this one run, the rows interleaved batch by batch (best of
REPEATS batches of BATCH events, the collector paused), with the in-process ``ScriptedModel``
and no hook, so what is left is the machinery: inject to the last ``task_completed``.

- "sequential": one producer awaits each ``inject`` before the next (each accepted event is
  on disk before its ``inject`` returns, so each waits for a commit of its own).
- "concurrent": PRODUCERS producers inject at once (each ``inject`` still waits for its own
  commit, made at once on the loop when the file is free; the writes waiting on the file's
  writer thread, when it is not, share a transaction: group commit).
- "SQLite alone": the same three statements an event's journal makes (its row queued, set
  running, deleted when done), each committed on its own, called directly on the loop's
  thread: the floor a write path off the loop is compared with.

Target (issue 28): the journal adds at most 150 µs per event over no journal.
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import pstats
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel

BATCH = 2_000
REPEATS = 5
PRODUCERS = 16
TARGET_US = 150.0


def events(n: int) -> list[TriggerEvent]:
    return [
        TriggerEvent("helpdesk", "webhook", {"ticket": f"Login page is down ({i})"})
        for i in range(n)
    ]


def make_process(name: str, journal: str | None) -> AgentProcess:
    config = ProcessConfig(
        model=ScriptedModel(reply="Triaged."), max_queue_size=BATCH, journal_path=journal
    )
    return AgentProcess(name, config)


async def settled(process: AgentProcess, done: int) -> None:
    """Until the last run completed and its writes landed. Polled every millisecond, not
    spun: a loop that never waits keeps the GIL from the writer thread (up to the 5 ms switch
    interval per statement), which is no application's case."""
    while process.invocation_count < done or process.status()["in_flight"]:
        await asyncio.sleep(0.001)
    while process.journal_pending:
        await asyncio.sleep(0.001)


async def sequential(process: AgentProcess, batch: list[TriggerEvent]) -> None:
    for event in batch:
        await process.inject(event)


async def concurrent(process: AgentProcess, batch: list[TriggerEvent]) -> None:
    async def producer(share: list[TriggerEvent]) -> None:
        for event in share:
            await process.inject(event)

    await asyncio.gather(*(producer(batch[i::PRODUCERS]) for i in range(PRODUCERS)))


async def time_batch(process: AgentProcess, concurrently: bool) -> float:
    """µs/event of one batch, the first inject to the last task_completed (and its writes)."""
    batch = events(BATCH)
    done = process.invocation_count + BATCH
    gc.disable()
    try:
        start = time.perf_counter()
        await (concurrent if concurrently else sequential)(process, batch)
        await settled(process, done)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed / BATCH * 1e6


async def time_rows(folder: Path, concurrently: bool) -> tuple[float, float]:
    """Best µs/event without and with a journal, their batches interleaved."""
    kind = "concurrent" if concurrently else "sequential"
    plain = make_process(f"plain-{kind}", None)
    journaled = make_process(f"journaled-{kind}", str(folder / "tether.db"))
    best = [float("inf"), float("inf")]
    await plain.start()
    await journaled.start()
    try:
        for round_ in range(REPEATS + 1):  # the first round warms up
            for i, process in enumerate((plain, journaled)):
                us = await time_batch(process, concurrently)
                if round_:
                    best[i] = min(best[i], us)
    finally:
        await plain.stop()
        await journaled.stop()
    return best[0], best[1]


def sqlite_alone(folder: Path) -> float:
    """Best µs/event of an event's three journal statements, each its own commit, on the
    calling thread (WAL, synchronous=NORMAL, as the journal opens its file)."""
    db = sqlite3.connect(folder / "alone.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE events (process TEXT, event_id TEXT, event TEXT, state TEXT, "
        "attempts INTEGER, updated_at REAL, PRIMARY KEY (process, event_id))"
    )
    best = float("inf")
    for round_ in range(REPEATS + 1):
        batch = [(e.event_id, json.dumps({"payload": e.payload})) for e in events(BATCH)]
        gc.disable()
        start = time.perf_counter()
        for event_id, body in batch:
            db.execute(
                "INSERT INTO events VALUES ('p', ?, ?, 'queued', 0, ?)",
                (event_id, body, time.time()),
            )
            db.execute(
                "UPDATE events SET state='running', attempts=1, updated_at=? "
                "WHERE process='p' AND event_id=?",
                (time.time(), event_id),
            )
            db.execute("DELETE FROM events WHERE process='p' AND event_id=?", (event_id,))
        elapsed = time.perf_counter() - start
        gc.enable()
        if round_:
            best = min(best, elapsed)
    db.close()
    return best / BATCH * 1e6


async def main(profile: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        floor = sqlite_alone(Path(folder))
        rows = {}
        for concurrently in (False, True):
            sub = Path(folder) / ("concurrent" if concurrently else "sequential")
            sub.mkdir()
            rows[concurrently] = await time_rows(sub, concurrently)
        print(f"inject -> task_completed, ScriptedModel, no hook, best of {REPEATS} x {BATCH}")
        print(f"{'row':<34}{'no journal µs':>15}{'journal µs':>12}{'journal adds µs':>17}")
        worst = 0.0
        for concurrently, (plain, journaled) in rows.items():
            label = f"{PRODUCERS} producers" if concurrently else "sequential injects"
            worst = max(worst, journaled - plain)
            print(f"{label:<34}{plain:>15.1f}{journaled:>12.1f}{journaled - plain:>17.1f}")
        print(f"{'SQLite alone, 3 commits, on loop':<34}{'':>15}{'':>12}{floor:>17.1f}")
        verdict = "within" if worst <= TARGET_US else "OVER"
        print(f"journal adds at most {worst:.1f} µs/event: {verdict} the {TARGET_US:g} µs target")
        if profile:
            sub = Path(folder) / "profile"
            sub.mkdir()
            profiler = cProfile.Profile()
            profiler.enable()
            await time_rows(sub, False)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    asyncio.run(main("--profile" in sys.argv))
