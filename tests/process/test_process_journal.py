"""The SQLite journal: a process killed with SIGKILL loses nothing that was queued."""

from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

from pydantic import SecretStr

from _process_support import Recorder, eventually, killed_host, ticket
from tether import AgentProcess, HookBlocked, HookConfig, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.store import Journal

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys

    from tether import AgentProcess, ProcessConfig, TriggerEvent
    from tether.models import ScriptedModel


    async def main() -> None:
        model = ScriptedModel(latency=3600)  # the first run hangs until the kill
        config = ProcessConfig(model=model, journal_path=sys.argv[1])
        process = AgentProcess("journaled", config)
        await process.start()
        ids = []
        for i in range(4):
            event = TriggerEvent("helpdesk", "webhook", {"ticket": f"ticket {i}"})
            ids.append(await process.inject(event))
        while not model.requests:
            await asyncio.sleep(0.005)
        print(json.dumps(ids), flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


async def run_and_kill(tmp_path: Path, journal: Path) -> list[str]:
    """Run CHILD until its first run is in flight, SIGKILL it; return the ids it injected."""
    async with killed_host(tmp_path, CHILD, str(journal)) as (child, line):
        pass
    assert child.returncode == -signal.SIGKILL
    ids: list[str] = json.loads(line)
    return ids


async def test_a_process_killed_mid_run_is_recovered_by_a_new_process_with_the_journal(
    tmp_path: Path,
) -> None:
    """Regression: the interrupted event was recovered last (the journal sorted by update time)."""
    journal = tmp_path / "tether.db"
    ids = await run_and_kill(tmp_path, journal)

    model = ScriptedModel()
    process = AgentProcess("journaled", ProcessConfig(model=model, journal_path=str(journal)))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 4, what="4 runs")
    [start] = rec.of(HookEvent.SESSION_START)
    assert start == {
        "restart": False,
        "recovered": {"events": 4, "event_ids": ids, "dead_letters": 0},
    }
    # The recovered events run in the order they were injected, the interrupted one first.
    assert [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)] == [
        (event_id, "success") for event_id in ids
    ]
    assert [p.split("\n")[0] for p in model.prompts] == [f"ticket: ticket {i}" for i in range(4)]
    assert Journal(journal, "journaled").unfinished() == []


async def test_recovery_happens_once_per_process_object(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    await run_and_kill(tmp_path, journal)
    process = AgentProcess(
        "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 4, what="4 runs")
        await process.restart()
    assert [d["recovered"] is None for d in rec.of(HookEvent.SESSION_START)] == [False, True]
    assert len(rec.of(HookEvent.TASK_COMPLETED)) == 4


async def test_a_journal_belongs_to_the_process_name(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    await run_and_kill(tmp_path, journal)
    process = AgentProcess("other", ProcessConfig(model=ScriptedModel(), journal_path=str(journal)))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START)
    async with process:
        pass
    assert rec.of(HookEvent.SESSION_START) == [{"restart": False, "recovered": None}]


async def test_a_finished_event_leaves_nothing_in_the_journal(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    process = AgentProcess(
        "journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(journal))
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    assert Journal(journal, "journaled").unfinished() == []
    assert Journal(journal, "journaled").dead_letters() == []


async def test_dead_letters_survive_in_the_journal_for_the_next_process(tmp_path: Path) -> None:
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not now")

    journal = tmp_path / "tether.db"
    first = AgentProcess(
        "journaled",
        ProcessConfig(
            model=ScriptedModel(),
            journal_path=str(journal),
            hooks=[HookConfig(event="task_created", callback=refuse)],
        ),
    )
    async with first:
        event = ticket()
        await first.inject(event)

    model = ScriptedModel()
    second = AgentProcess("journaled", ProcessConfig(model=model, journal_path=str(journal)))
    rec = Recorder().attach(second.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    async with second:
        [dead] = second.dead_letters
        assert (dead["event_id"], dead["reason"], dead["error"]) == (
            event.event_id,
            "blocked by hook",
            "not now",
        )
        assert await second.redeliver_dead_letters() == 1
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the redelivery")
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] == {
        "events": 0,
        "event_ids": [],
        "dead_letters": 1,
    }
    assert Journal(journal, "journaled").dead_letters() == []


RETRYING_CHILD = textwrap.dedent(
    """
    import asyncio, sys

    from pydantic import SecretStr

    from tether import AgentProcess, HookEvent, ProcessConfig, TriggerEvent
    from tether.models import ModelUnavailableError


    class FailingModel:
        name = "failing"

        async def complete(self, messages, tools=None):
            raise ModelUnavailableError("the endpoint is down")

        async def aclose(self):
            pass


    async def main() -> None:
        config = ProcessConfig(
            model=FailingModel(),
            journal_path=sys.argv[1],
            secrets={"crm_token": SecretStr("tok-7f3a9")},
            max_retries=1,
            retry_backoff=3600,
        )
        process = AgentProcess("journaled", config)
        retrying = asyncio.Event()

        async def seen(ctx):
            if ctx.data["outcome"] == "retrying":
                retrying.set()

        process.hooks.register(HookEvent.TASK_COMPLETED, seen)
        await process.start()
        ticket = {"ticket": "CRM rejects tok-7f3a9"}
        await process.inject(TriggerEvent("helpdesk", "webhook", ticket))
        await retrying.wait()
        print("retrying", flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


async def test_a_retry_waiting_in_the_journal_holds_no_declared_secret(tmp_path: Path) -> None:
    """A declared secret never reaches the journal file, so recovery re-runs the event with
    the secret redacted (the journal is a plain SQLite file on disk)."""
    journal = tmp_path / "tether.db"
    secrets = {"crm_token": SecretStr("tok-7f3a9")}
    # A host whose first attempt failed, killed while the retry waits.
    async with killed_host(tmp_path, RETRYING_CHILD, str(journal)) as (_, line):
        assert line == b"retrying\n"
    model = ScriptedModel()
    recovered = AgentProcess(
        "journaled", ProcessConfig(model=model, journal_path=str(journal), secrets=secrets)
    )
    rec2 = Recorder().attach(recovered.hooks, HookEvent.TASK_COMPLETED)
    async with recovered:
        await eventually(lambda: rec2.of(HookEvent.TASK_COMPLETED), what="the recovered run")
    assert "CRM rejects [REDACTED:crm_token]" in model.prompts[0]
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("tether.db*"))  # noqa: ASYNC240 (WAL too)
    assert b"tok-7f3a9" not in stored
