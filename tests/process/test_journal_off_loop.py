"""Journal writes never stall the loop: while another program holds the SQLite file locked, a
journaled process's writes wait on its writer thread, and other processes on the same loop run
on. Once the lock goes, the waiting writes land (at-least-once as before)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from _process_support import Recorder, eventually, locked, ticket
from tether import AgentProcess, HookEvent, ProcessConfig
from tether.store import Journal


def journal_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("tether-journal-")]


async def started_and_run(path: Path, count: int) -> AgentProcess:
    """A started process "p" journaled at ``path`` that has run ``count`` tickets."""
    process = AgentProcess("p", ProcessConfig(model="scripted", journal_path=str(path)))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    for i in range(count):
        await process.inject(ticket(f"t{i}"))
    await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == count, what="the runs")
    return process


async def test_a_locked_journal_does_not_stall_another_process_on_the_loop(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    journaled = AgentProcess("journaled", ProcessConfig(model="scripted", journal_path=str(path)))
    other = AgentProcess("other", ProcessConfig(model="scripted"))
    done = Recorder().attach(journaled.hooks, HookEvent.TASK_COMPLETED)
    others = Recorder().attach(other.hooks, HookEvent.TASK_COMPLETED)
    await journaled.start()
    await other.start()
    try:
        with locked(path):
            # Its inject waits (off the loop) for its queued write, which waits for the lock
            # (5 s busy timeout)...
            injecting = asyncio.ensure_future(journaled.inject(ticket()))
            for i in range(20):
                await other.inject(ticket(f"other {i}"))
            # ...and meanwhile the other process runs all its events on the same loop.
            await eventually(lambda: len(others.of(HookEvent.TASK_COMPLETED)) == 20, what="20")
            assert not injecting.done(), "the write did not wait: no evidence"
        await injecting
        await eventually(lambda: done.of(HookEvent.TASK_COMPLETED), what="the journaled run")
        await eventually(lambda: journaled.journal_pending == 0, what="the writes to land")
        assert journaled.status()["journal_errors"] == 0
        assert Journal(path, "journaled").unfinished() == []  # its done landed after the lock
    finally:
        await journaled.stop()
        await other.stop()


async def test_inject_on_a_locked_journal_waits_off_the_loop_and_is_accepted_when_it_frees(
    tmp_path: Path,
) -> None:
    """The accepting write is waited for (durable before inject returns), but not on the loop."""
    path = tmp_path / "tether.db"
    journaled = AgentProcess("journaled", ProcessConfig(model="scripted", journal_path=str(path)))
    await journaled.start()
    try:
        with locked(path):
            waiting = asyncio.ensure_future(journaled.inject(ticket()))
            ticks = 0
            for _ in range(20):  # the loop goes on while inject waits for the lock
                await asyncio.sleep(0.005)
                ticks += 1
            assert not waiting.done()
        event_id = await waiting
        assert [e["event_id"] for e, _ in Journal(path, "journaled").unfinished()] in (
            [event_id],
            [],
        )
        assert ticks == 20
    finally:
        await journaled.stop()


async def test_a_stopped_process_leaves_no_journal_writer_thread(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    process = await started_and_run(path, 5)
    assert journal_threads() == ["tether-journal-tether.db"]  # its file's writer
    await process.stop()
    assert journal_threads() == []
    assert Journal(path, "p").unfinished() == []


async def test_writes_left_at_a_stop_land_before_the_stop_returns(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    process = await started_and_run(path, 50)
    await process.stop()
    assert process.journal_pending == 0
    assert Journal(path, "p").unfinished() == []
