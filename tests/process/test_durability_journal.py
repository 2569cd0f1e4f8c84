"""Review of the journal's durability: what a real SQLite file keeps across processes."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from _process_support import Recorder, eventually
from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel
from tether.store import Journal


async def test_a_finished_event_whose_id_holds_a_declared_secret_leaves_the_journal(
    tmp_path: Path,
) -> None:
    """Regression: the row was written under the redacted id but marked running and done under
    the real one, so it stayed "queued" for ever and the next process ran the event again."""
    journal = tmp_path / "tether.db"
    config = ProcessConfig(
        model=ScriptedModel(), journal_path=str(journal), secrets={"pin": SecretStr("42")}
    )
    process = AgentProcess("journaled", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(TriggerEvent("shop", "webhook", {"n": 1}, event_id="order-42"))
        await eventually(lambda: rec.outcomes() == ["success"], what="the run")
    assert Journal(journal, "journaled").unfinished() == []
    assert b"order-42" not in journal.read_bytes()


async def test_a_cleared_dead_letter_whose_id_holds_a_declared_secret_stays_cleared(
    tmp_path: Path,
) -> None:
    """Regression: clear_dead_letters() deleted the journal row by the real id, the row was
    under the redacted one: the dead letter came back in the next process."""
    journal = tmp_path / "tether.db"
    secrets = {"pin": SecretStr("42")}
    first = AgentProcess("journaled", ProcessConfig(journal_path=str(journal), secrets=secrets))
    await first.inject(TriggerEvent("shop", "webhook", {"n": 1}, event_id="order-42"))
    await first.stop()  # never started: the event is dead-lettered
    assert first.clear_dead_letters() == 1
    second = AgentProcess("journaled", ProcessConfig(journal_path=str(journal), secrets=secrets))
    assert Journal(journal, "journaled").dead_letters() == []
    await second.stop()
    assert second.dead_letters == []


async def test_an_event_injected_before_start_whose_id_holds_a_declared_secret_runs_once(
    tmp_path: Path,
) -> None:
    """Regression: recovery told the journal's rows from the events queued already by their
    id, and the row's id was the redacted one: the event was queued twice and ran twice."""
    journal = tmp_path / "tether.db"
    model = ScriptedModel()
    config = ProcessConfig(model=model, journal_path=str(journal), secrets={"pin": SecretStr("42")})
    process = AgentProcess("journaled", config)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    await process.inject(TriggerEvent("shop", "webhook", {"n": 1}, event_id="order-42"))
    async with process:
        # An id of its own: a random one holds the secret "42" about one time in nine, and the
        # hooks would see it redacted.
        last = await process.inject(TriggerEvent("shop", "webhook", {"n": 2}, event_id="after-it"))
        await eventually(
            lambda: last in [d["event_id"] for d in rec.of(HookEvent.TASK_COMPLETED)],
            what="the last event",
        )
    assert rec.outcomes() == ["success", "success"]
    assert len(model.prompts) == 2
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] is None


async def test_a_dead_letter_made_before_start_whose_id_holds_a_declared_secret_is_listed_once(
    tmp_path: Path,
) -> None:
    """Regression: recovery told the journal's dead letters from those the process held by
    their id, and the row's id was the redacted one: the dead letter was listed twice."""

    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not now")

    journal = tmp_path / "tether.db"
    config = ProcessConfig(
        model=ScriptedModel(),
        journal_path=str(journal),
        secrets={"pin": SecretStr("42")},
        hooks=[HookConfig(event="task_created", callback=refuse)],
    )
    process = AgentProcess("journaled", config)
    await process.inject(TriggerEvent("shop", "webhook", {"n": 1}, event_id="order-42"))
    async with process:
        assert [d["reason"] for d in process.dead_letters] == ["blocked by hook"]
