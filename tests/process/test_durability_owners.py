"""Review of the journal's owner: one live process per (file, name), or recovery steals events.

A process's recovery takes every unfinished row of its name: a second host started over the
same file and name while the first still runs would take (and run again) the first's queued
and running events, and delete their rows as it finished them, so the first's crash would then
lose them. The first start of a name on a file takes a lease the OS drops when the host dies.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from _process_support import Recorder, eventually
from tether import AgentProcess, HookEvent, ProcessConfig, ProcessStateError
from tether.models import ScriptedModel
from tether.store import Journal

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys

    from tether import AgentProcess, ProcessConfig, TriggerEvent
    from tether.models import ScriptedModel


    async def main() -> None:
        model = ScriptedModel(latency=3600)  # the first run hangs until the kill
        process = AgentProcess("journaled", ProcessConfig(model=model, journal_path=sys.argv[1]))
        await process.start()
        ids = [
            await process.inject(TriggerEvent("helpdesk", "webhook", {"ticket": f"t{i}"}))
            for i in range(3)
        ]
        while not model.requests:
            await asyncio.sleep(0.005)
        print(json.dumps(ids), flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


async def start_child(
    tmp_path: Path, journal: Path
) -> tuple[asyncio.subprocess.Process, list[str]]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(journal), stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), timeout=30)
    except BaseException:
        child.kill()
        await child.wait()
        raise
    return child, json.loads(line)


async def kill(child: asyncio.subprocess.Process) -> None:
    if child.returncode is None:
        child.send_signal(signal.SIGKILL)
    await child.wait()


async def test_a_second_host_over_a_live_hosts_journal_and_name_is_refused_at_start(
    tmp_path: Path,
) -> None:
    """Regression: it recovered the live host's queued and running events and ran them too."""
    journal = tmp_path / "tether.db"
    child, ids = await start_child(tmp_path, journal)
    try:
        model = ScriptedModel()
        second = AgentProcess("journaled", ProcessConfig(model=model, journal_path=str(journal)))
        with pytest.raises(ProcessStateError, match="journaled") as caught:
            await second.start()
        assert str(journal) in str(caught.value)
        assert model.prompts == []
    finally:
        await kill(child)
    # Nothing of the live host's was taken: its events are all still there.
    assert [e["event_id"] for e, _ in Journal(journal, "journaled").unfinished()] == ids


async def test_the_lease_goes_with_a_killed_host_and_the_next_one_recovers_everything(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    child, ids = await start_child(tmp_path, journal)
    await kill(child)
    process = AgentProcess(
        "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: len(rec.outcomes()) == 3, what="3 runs")
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"]["event_ids"] == ids


async def test_another_host_over_a_live_hosts_journal_is_refused_at_start_whatever_its_name(
    tmp_path: Path,
) -> None:
    """A journal file is one runtime's while it runs (SQLite's unix-excl: no shared-memory
    WAL index another program could truncate under the runtime): a second host is refused
    at start, at once, naming the file, and takes nothing of the first's."""
    journal = tmp_path / "tether.db"
    child, ids = await start_child(tmp_path, journal)
    try:
        other = AgentProcess(
            "other", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
        )
        rec = Recorder().attach(other.hooks, HookEvent.SESSION_START)
        with pytest.raises(ProcessStateError, match="in use by another program") as caught:
            await other.start()
        assert str(journal) in str(caught.value)
        assert rec.of(HookEvent.SESSION_START) == []
    finally:
        await kill(child)
    assert [e["event_id"] for e, _ in Journal(journal, "journaled").unfinished()] == ids


async def test_a_stopped_process_lets_the_next_one_of_its_name_start(tmp_path: Path) -> None:
    journal = str(tmp_path / "tether.db")
    first = AgentProcess("journaled", ProcessConfig(model=ScriptedModel(), journal_path=journal))
    async with first:
        await first.restart()  # a restart keeps the lease
    second = AgentProcess("journaled", ProcessConfig(model=ScriptedModel(), journal_path=journal))
    async with second:
        assert second.state.value == "running"


async def test_two_live_processes_of_one_name_in_one_host_do_not_share_a_journal(
    tmp_path: Path,
) -> None:
    journal = str(tmp_path / "tether.db")
    first = AgentProcess("journaled", ProcessConfig(model=ScriptedModel(), journal_path=journal))
    second = AgentProcess("journaled", ProcessConfig(model=ScriptedModel(), journal_path=journal))
    async with first:
        with pytest.raises(ProcessStateError, match="in use"):
            await second.start()
    async with second:  # the first stopped: its lease is free
        pass


async def test_the_lock_file_stays_while_another_host_holds_a_name_in_it(tmp_path: Path) -> None:
    """This host's last name given back leaves the shared lock file to the live host still
    holding one there: its lease holds on."""
    journal = tmp_path / "tether.db"
    child, _ = await start_child(tmp_path, journal)
    try:
        other = AgentProcess(
            "other", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
        )
        with pytest.raises(ProcessStateError, match="in use by another program"):
            await other.start()  # its name was taken, then given back
        assert (tmp_path / "tether.db.lock").exists()
        second = AgentProcess(
            "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
        )
        with pytest.raises(ProcessStateError, match="journaled"):
            await second.start()
    finally:
        await kill(child)
    third = AgentProcess(
        "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
    )
    async with third:  # the killed host's lease went with it
        pass
    assert not (tmp_path / "tether.db.lock").exists()
