"""Journaled processes share their file's parts: one writer thread per journal file (not per
process), one lock file per journal file (a byte of it per name, removed when the last name
is given back), no descriptor of a process's own; a process that never received an event
holds no thread.

The scale test runs in a child interpreter whose open-file limit is 1,024: 1,500 journaled
processes over two files start, run events and stop there (each used to hold a lock file of
its own: the 1,014th failed with EMFILE)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import threading
from pathlib import Path

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig, ProcessStateError
from tether.models import ScriptedModel


def journal_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("tether-journal-"))


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def journaled(name: str, path: Path) -> AgentProcess:
    return AgentProcess(name, ProcessConfig(model=ScriptedModel(), journal_path=str(path)))


async def run_one_each(processes: list[AgentProcess]) -> None:
    recorders = [Recorder().attach(p.hooks, HookEvent.TASK_COMPLETED) for p in processes]
    for process in processes:
        await process.inject(ticket(f"for {process.name}"))
    await eventually(lambda: all(r.of(HookEvent.TASK_COMPLETED) for r in recorders), what="runs")


async def test_processes_over_one_journal_file_share_one_writer_thread(tmp_path: Path) -> None:
    first = [journaled(f"a{i}", tmp_path / "first.db") for i in range(5)]
    second = [journaled(f"b{i}", tmp_path / "second.db") for i in range(3)]
    for process in (*first, *second):
        await process.start()
    try:
        await run_one_each([*first, *second])
        assert journal_threads() == ["tether-journal-first.db", "tether-journal-second.db"]
    finally:
        for process in first:
            await process.stop()
        assert journal_threads() == ["tether-journal-second.db"]  # the last over it stopped
        for process in second:
            await process.stop()
    assert journal_threads() == []


async def test_a_journaled_process_that_never_received_an_event_holds_no_thread(
    tmp_path: Path,
) -> None:
    processes = [journaled(f"idle{i}", tmp_path / "tether.db") for i in range(3)]
    for process in processes:
        await process.start()
    try:
        assert journal_threads() == []
    finally:
        for process in processes:
            await process.stop()


async def test_journaled_processes_hold_no_descriptor_of_their_own(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    first = journaled("p0", path)
    await first.start()
    await run_one_each([first])
    held = open_descriptors()  # the file's connections, its lock file
    others = [journaled(f"p{i}", path) for i in range(1, 41)]
    try:
        for process in others:
            await process.start()
        await run_one_each(others)
        assert open_descriptors() == held
    finally:
        for process in others:
            await process.stop()
        await first.stop()


async def test_the_lock_file_is_removed_when_the_last_process_over_the_journal_stops(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    lock = tmp_path / "tether.db.lock"
    first, second = journaled("first", path), journaled("second", path)
    await first.start()
    await second.start()
    assert lock.exists()
    await first.stop()
    assert lock.exists()  # the second still holds its name in it
    await second.stop()
    assert not lock.exists()
    assert os.listdir(tmp_path) == ["tether.db"]  # (its WAL checkpointed at the close)


async def test_a_stopped_process_gives_its_name_back_in_the_shared_lock_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    keeper = journaled("keeper", path)  # keeps the lock file open throughout
    first = journaled("triage", path)
    await keeper.start()
    try:
        await first.start()
        again = journaled("triage", path)
        try:
            await again.start()
            raise AssertionError("a second live process of the name started")
        except ProcessStateError:
            pass
        await first.stop()
        await again.start()  # its name was given back, the file still open
        await again.stop()
    finally:
        await keeper.stop()


SCALE = textwrap.dedent(
    """
    import asyncio, json, os, resource, sys
    from pathlib import Path

    from tether import AgentRuntime, HookEvent, ProcessConfig, TriggerEvent

    folder = Path(sys.argv[1])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


    async def main() -> None:
        runtime = AgentRuntime()
        await runtime.start_all()
        done = 0

        async def completed(ctx):
            nonlocal done
            done += 1

        for i in range(1500):
            config = ProcessConfig(model="scripted", journal_path=str(folder / f"j{i % 2}.db"))
            process = await runtime.add_process(f"p{i}", config)
            process.hooks.register(HookEvent.TASK_COMPLETED, completed)
        fds = len(os.listdir("/proc/self/fd"))
        names = [f"p{i}" for i in range(0, 1500, 7)]
        for name in names:
            await runtime.get(name).inject(TriggerEvent("desk", "manual", {"ticket": name}))
        while done < len(names):
            await asyncio.sleep(0.01)
        await runtime.stop_all()
        print(json.dumps({"done": done, "fds": fds, "left": sorted(os.listdir(folder))}))


    asyncio.run(main())
    """
)


async def test_1500_journaled_processes_run_under_an_open_file_limit_of_1024(
    tmp_path: Path,
) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SCALE,
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(child.communicate(), 240)
    assert child.returncode == 0, err.decode()[-3000:]
    report = json.loads(out)
    assert report["done"] == len(range(0, 1500, 7))
    assert report["fds"] < 50  # two files' connections and lock files, not one per process
    assert not [name for name in report["left"] if name.endswith(".lock")]
