"""Review of hook-run history in SQLite: batches are whole, and a killed host's file reads."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import textwrap
import time
from pathlib import Path

from tether import AgentProcess, HookContext, HookEvent, HookRun, ProcessConfig
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
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(path), stdout=asyncio.subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), timeout=30) == b"written\n"
        await asyncio.sleep(0.2)  # several batches more, one of them under way at the kill
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
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
