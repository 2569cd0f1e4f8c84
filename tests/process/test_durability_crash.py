"""Review of recovery after a real crash (SIGKILL): what was decided stays decided."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
from pathlib import Path

from pydantic import SecretStr

from _process_support import Recorder, eventually, killed_host
from tether import AgentProcess, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.store import Journal

#: A host that dead-letters one event (a hook refuses it), runs a second (its run hangs until
#: the kill) and queues a third whose payload holds a declared secret.
CHILD = textwrap.dedent(
    """
    import asyncio, json, sys

    from pydantic import SecretStr

    from tether import AgentProcess, HookBlocked, HookEvent, ProcessConfig, TriggerEvent
    from tether.models import ScriptedModel


    async def gate(ctx):
        if ctx.data["trigger_id"] == "spam":
            raise HookBlocked("spam")


    async def main() -> None:
        model = ScriptedModel(latency=3600)
        config = ProcessConfig(
            model=model, journal_path=sys.argv[1], secrets={"crm_token": SecretStr("tok-7f3a9")}
        )
        process = AgentProcess("journaled", config)
        process.hooks.register(HookEvent.TASK_CREATED, gate)
        await process.start()
        dead = await process.inject(TriggerEvent("spam", "webhook", {"ticket": "buy now"}))
        running = await process.inject(TriggerEvent("desk", "webhook", {"ticket": "first"}))
        while not model.requests:
            await asyncio.sleep(0.005)
        queued = await process.inject(
            TriggerEvent("desk", "webhook", {"ticket": "CRM says tok-7f3a9 expired"})
        )
        print(json.dumps([dead, running, queued]), flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)

SECRETS = {"crm_token": SecretStr("tok-7f3a9")}


def reopened(journal: Path) -> tuple[AgentProcess, ScriptedModel]:
    """The next process over the killed host's ``journal`` (its name and secrets), and its model."""
    model = ScriptedModel()
    config = ProcessConfig(model=model, journal_path=str(journal), secrets=SECRETS)
    return AgentProcess("journaled", config), model


async def crash(tmp_path: Path, journal: Path) -> tuple[list[str], bytes]:
    """Run CHILD, read the journal's files while it lives, SIGKILL it: its ids and the bytes."""
    async with killed_host(tmp_path, CHILD, str(journal)) as (_, line):
        files = sorted(tmp_path.glob("tether.db*"))  # noqa: ASYNC240 (the WAL too)
        stored = b"".join(p.read_bytes() for p in files)
    ids: list[str] = json.loads(line)
    return ids, stored


async def test_a_dead_letter_of_a_killed_host_is_reloaded_not_run_and_the_rest_is_recovered(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    (dead, running, queued), _ = await crash(tmp_path, journal)
    process, model = reopened(journal)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: len(rec.outcomes()) == 2, what="the two recovered runs")
        assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
            (dead, "blocked by hook")
        ]
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] == {
        "events": 2,
        "event_ids": [running, queued],
        "dead_letters": 1,
    }
    assert [d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)] == [running, queued]
    assert not any("buy now" in p for p in model.prompts)


async def test_a_payload_secret_is_redacted_in_the_journal_file_of_a_live_host(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    _, stored = await crash(tmp_path, journal)
    assert b"CRM says" in stored  # the queued event is in the file...
    assert b"tok-7f3a9" not in stored  # ...its secret is not


async def test_a_dead_letter_of_a_killed_host_redelivered_by_the_next_runs_once_and_is_gone(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    (dead, _, _), _ = await crash(tmp_path, journal)
    process, _ = reopened(journal)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        assert await process.redeliver_dead_letters([dead]) == 1
        await eventually(lambda: len(rec.outcomes()) == 3, what="three runs")
    assert [d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)].count(dead) == 1
    assert process.dead_letters == []
    assert Journal(journal, "journaled").unfinished() == []
    assert Journal(journal, "journaled").dead_letters() == []


#: A host whose runs hang until the kill; it injects one event when told to (argv[2]).
HANGING = textwrap.dedent(
    """
    import asyncio, sys

    from tether import AgentProcess, ProcessConfig, TriggerEvent
    from tether.models import ScriptedModel


    async def main() -> None:
        model = ScriptedModel(latency=3600)
        config = ProcessConfig(model=model, journal_path=sys.argv[1], max_retries=1)
        process = AgentProcess("journaled", config)
        await process.start()
        if sys.argv[2] == "inject":
            await process.inject(TriggerEvent("desk", "webhook", {"ticket": "poison"}))
        while not model.requests:
            await asyncio.sleep(0.005)
        print("running", flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


async def test_an_event_that_keeps_killing_its_host_is_dead_lettered_once_its_retries_are_used(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    script = tmp_path / "hanging.py"
    script.write_text(HANGING)
    for step in ("inject", "recover"):  # attempt 1, then attempt 2 (max_retries=1): both killed
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), str(journal), step, stdout=asyncio.subprocess.PIPE
        )
        try:
            assert child.stdout is not None
            assert await asyncio.wait_for(child.stdout.readline(), timeout=30) == b"running\n"
        finally:
            child.send_signal(signal.SIGKILL)
            await child.wait()
    model = ScriptedModel()
    config = ProcessConfig(model=model, journal_path=str(journal), max_retries=1)
    process = AgentProcess("journaled", config)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START)
    async with process:
        [dead] = process.dead_letters
    assert (dead["reason"], dead["attempts"]) == ("process failed", 2)
    assert "went away while attempt 2 ran" in dead["error"]
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"]["events"] == 0
    assert model.prompts == []


async def test_what_recovery_dead_letters_for_a_full_queue_is_counted_in_session_start(
    tmp_path: Path,
) -> None:
    """Regression: recovery dead-lettered what its queue could not hold ("queue full") but
    left those out of ``recovered``'s dead_letters (and said None when that was all)."""
    journal = tmp_path / "tether.db"
    (dead, running, queued), _ = await crash(tmp_path, journal)
    config = ProcessConfig(
        model=ScriptedModel(), journal_path=str(journal), secrets=SECRETS, max_queue_size=1
    )
    process = AgentProcess("journaled", config)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: rec.outcomes() == ["success"], what="the recovered run")
        assert sorted((d["event_id"], d["reason"]) for d in process.dead_letters) == sorted(
            [(dead, "blocked by hook"), (queued, "queue full")]
        )
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] == {
        "events": 1,
        "event_ids": [running],
        "dead_letters": 2,
    }
