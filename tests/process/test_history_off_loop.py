"""Hook-run history writes never stall the loop: while another program holds the SQLite file
locked, a process's history batches wait on its writer thread (with its journal writes), and
the loop runs on. Once the lock goes, the waiting batches land, in order, each run once."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from _process_support import eventually
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig
from tether.hooks._history import BATCH, FLUSH_INTERVAL

UPS = HookEvent.USER_PROMPT_SUBMIT


async def audit(ctx: HookContext) -> None:
    pass


def journaled(path: Path) -> AgentProcess:
    process = AgentProcess("p", ProcessConfig(model="scripted", journal_path=str(path)))
    process.hooks.register(UPS, audit, name="audit")
    return process


async def hook_run(process: AgentProcess, n: int) -> None:
    data = {"prompt": "hi", "event_id": f"e{n}", "trigger_id": "desk", "trigger_type": "manual"}
    await process.hooks.dispatch(UPS, data, process_id=process.name)


def stored(path: Path) -> list[str]:
    """The dispatch ids of the file's hook runs, in the order they were written."""
    db = sqlite3.connect(path)  # a connection of its own, as another host would read
    try:
        rows = db.execute("SELECT dispatch_id FROM hook_runs ORDER BY rowid").fetchall()
    finally:
        db.close()
    return [dispatch_id for (dispatch_id,) in rows]


def locked(path: Path) -> sqlite3.Connection:
    """A connection of another program holding ``path`` locked; ROLLBACK and close it to free."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN EXCLUSIVE")
    return other


def free(other: sqlite3.Connection) -> None:
    other.execute("ROLLBACK")
    other.close()


@asynccontextmanager
async def ticking() -> AsyncIterator[list[float]]:
    """A task that ticks every 10 ms; yields the gaps between its ticks (seconds)."""
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    try:
        yield gaps
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)


def writer_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("tether-journal-")]


@pytest.mark.slow
async def test_hook_runs_on_a_locked_history_file_do_not_stall_the_loop(tmp_path: Path) -> None:
    """Regression: the timed flush wrote the batch on the loop, which a file locked by another
    program held for the busy timeout (5 s): every process on the loop stalled with it."""
    path = tmp_path / "tether.db"
    process = journaled(path)
    await process.start()
    try:
        async with ticking() as gaps:
            other = locked(path)
            try:
                for n in range(5):
                    await hook_run(process, n)
                # The timed flush comes and hands the batch over; it waits for the lock.
                await asyncio.sleep(3 * FLUSH_INTERVAL)
                assert stored(path) == []  # (readers are not locked out in WAL mode)
            finally:
                free(other)
            await eventually(lambda: len(stored(path)) == 5, what="the batch to land")
        # Not a benchmark: the stall was the 5 s busy timeout; a tick is 10 ms.
        assert max(gaps) < 1.0
        assert [r.dispatch_id for r in process.hook_runs()] == stored(path)
        assert process.history.dropped == 0
    finally:
        await process.stop()


@pytest.mark.slow
async def test_batches_written_around_a_lock_land_in_order_once_each(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path)
    await process.start()
    try:
        total = 3 * BATCH + 7
        other = locked(path)
        try:
            for n in range(total):
                await hook_run(process, n)
                if n == BATCH // 2:
                    await asyncio.sleep(2 * FLUSH_INTERVAL)  # a batch waits for the lock
        finally:
            free(other)
        recorded = [r.dispatch_id for r in process.history.runs()]
        assert len(recorded) == len(set(recorded)) == total
        await eventually(lambda: len(stored(path)) == total, what="every batch to land")
        assert stored(path) == recorded
        assert [r.dispatch_id for r in process.hook_runs()] == recorded
    finally:
        await process.stop()
    assert stored(path) == recorded


@pytest.mark.slow
async def test_stop_waits_for_the_batch_under_way_and_leaves_no_writer_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    process = journaled(path)
    await process.start()
    other = locked(path)
    try:
        for n in range(3):
            await hook_run(process, n)
        await asyncio.sleep(2 * FLUSH_INTERVAL)  # handed over, waiting for the lock
        assert writer_threads() == ["tether-journal-tether.db"]
        asyncio.get_running_loop().call_later(0.5, free, other)
        await process.stop()
    except BaseException:
        free(other)
        raise
    assert len(stored(path)) == 3
    assert writer_threads() == []
