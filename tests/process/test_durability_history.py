"""Review of hook-run history in SQLite: batches are whole, and a killed host's file reads."""

from __future__ import annotations

import asyncio
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest

from _process_support import killed_host
from tether import AgentProcess, HookContext, HookEvent, HookManager, HookRun, ProcessConfig
from tether.hooks._history import BATCH, HistoryRecorder
from tether.models import ScriptedModel
from tether.store import HistoryStore

#: Writes batches of 500 runs without end, saying when the first is in.
WRITER = textwrap.dedent(
    """
    import sys, time

    from tether import HookRun
    from tether.store import HistoryStore

    store = HistoryStore(sys.argv[1])
    batch = 0
    while True:
        store.write(
            [
                HookRun(time.time(), "h1", "audit", "task_created", "journaled", "code", "sync",
                        "passed", 1.0, None, False, f"d-{batch}", 0, None, None, None)
                for _ in range(500)
            ]
        )
        batch += 1
        if batch == 1:
            print("written", flush=True)
    """
)


def a_run(process_id: str | None = "journaled") -> HookRun:
    return HookRun(
        time.time(), "h1", "audit", "task_created", process_id,  # type: ignore[arg-type]
        "code", "sync", "passed", 1.0, None, False, "d-1", 0, None, None, None,
    )  # fmt: skip


def test_a_batch_that_fails_midway_writes_none_of_its_runs(tmp_path: Path) -> None:
    """Regression: each run was a transaction of its own (the connection autocommits), so a
    batch that failed at its 101st run kept the first 100 and the log said it failed."""
    path = tmp_path / "tether.db"
    store = HistoryStore(path)
    batch = [a_run() for _ in range(256)]
    batch[100] = a_run(None)  # NOT NULL refuses it
    try:
        store.write(batch)
    except sqlite3.IntegrityError:
        pass
    else:
        raise AssertionError("the bad run was written")
    store.write([a_run()])  # the connection is usable after the failed batch
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM hook_runs").fetchone() == (1,)


async def test_a_host_killed_while_writing_history_leaves_a_readable_file_of_whole_batches(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    async with killed_host(tmp_path, WRITER, str(path)) as (_, line):
        assert line == b"written\n"
        await asyncio.sleep(0.2)  # several batches more, one of them under way at the kill
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        (count,) = db.execute("SELECT COUNT(*) FROM hook_runs").fetchone()
        per_batch = db.execute(
            "SELECT dispatch_id, COUNT(*) FROM hook_runs GROUP BY dispatch_id"
        ).fetchall()
    finally:
        db.close()
    assert count >= 500
    assert {n for _, n in per_batch} == {500}  # no batch is there in part


async def test_runs_still_in_the_batch_at_stop_are_in_the_file_once_stop_returns(
    tmp_path: Path,
) -> None:
    async def audit(ctx: HookContext) -> None:
        pass

    path = tmp_path / "tether.db"
    process = AgentProcess(
        "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(path))
    )
    process.hooks.register(HookEvent.SESSION_END, audit)
    await process.start()
    await process.stop()  # session_end ran within the flush interval
    with sqlite3.connect(path) as db:  # a connection of its own, as another host would read
        rows = db.execute("SELECT event, process_id FROM hook_runs").fetchall()
    assert ("session_end", "journaled") in rows


async def test_runs_of_a_write_that_failed_reach_the_file_with_the_next_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a failed write (the file locked past the busy timeout, say) was logged and
    its runs dropped: they never reached the file, and so were gone after a restart."""
    store = HistoryStore(tmp_path / "tether.db")
    failures = [sqlite3.OperationalError("database is locked")]

    def sink(runs: list[HookRun]) -> None:
        if failures:
            raise failures.pop()
        store.write(runs)

    async def audit(ctx: HookContext) -> None:
        pass

    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, audit)
    manager.recorder = history = HistoryRecorder("journaled", sink=sink)
    data = {"prompt": "hi", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
    await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
    history.flush()
    assert "writing hook-run records failed" in caplog.text
    await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
    history.flush()
    assert len(store.query("journaled")) == 2


async def test_runs_kept_for_a_failing_store_are_bounded(tmp_path: Path) -> None:
    """A store that keeps failing holds at most the ring's size of entries back, the newest."""

    def broken(runs: list[HookRun]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    async def audit(ctx: HookContext) -> None:
        pass

    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, audit)
    manager.recorder = history = HistoryRecorder("journaled", size=10, sink=broken)
    data = {"prompt": "hi", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
    for _ in range(25):
        await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
        history.flush()
    written: list[HookRun] = []
    history._sink = written.extend  # the store is back
    history.flush()
    assert len(written) == 10
    assert written == history.runs()


async def test_a_failing_store_is_not_written_to_on_every_dispatch() -> None:
    """The runs a failed write kept back do not make each later dispatch a full batch that
    writes at once (a locked file would hold every dispatch up for its busy timeout)."""
    calls: list[int] = []

    def broken(runs: list[HookRun]) -> None:
        calls.append(len(runs))
        raise sqlite3.OperationalError("database is locked")

    async def audit(ctx: HookContext) -> None:
        pass

    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, audit)
    manager.recorder = HistoryRecorder("journaled", sink=broken)
    data = {"prompt": "hi", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
    for _ in range(BATCH + 10):
        await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, data)
    assert calls == [BATCH]  # the full batch was tried once; the next ones wait for the timer
