"""Triggers besides inject(): file watches (file_changed) and cron schedules."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from _process_support import Recorder, eventually, fire_until_completed, write_until
from tether import AgentProcess, CronTrigger, FileWatchTrigger, ProcessConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel
from tether.process._triggers import CronRunner


def watch_process(folder: Path, model: ScriptedModel, **config: Any) -> AgentProcess:
    trigger = FileWatchTrigger(
        id="inbox", watch_path=str(folder), patterns=["*.txt"], debounce_ms=10
    )
    return AgentProcess("watcher", ProcessConfig(model=model, triggers=[trigger], **config))


async def test_a_matching_file_change_fires_file_changed_and_runs_the_agent(
    tmp_path: Path,
) -> None:
    model = ScriptedModel()
    process = watch_process(tmp_path, model)
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED, HookEvent.TASK_COMPLETED)
    async with process:
        (tmp_path / "ignored.log").write_text("not watched\n")
        await write_until(tmp_path / "ticket.txt", lambda: rec.of(HookEvent.TASK_COMPLETED))
    changed = rec.of(HookEvent.FILE_CHANGED)
    assert all(set(d) == {"path", "event_type", "trigger_id", "event_id"} for d in changed)
    assert all(Path(d["path"]).name == "ticket.txt" for d in changed)
    assert all(d["event_type"] in ("added", "modified") for d in changed)
    first = changed[0]
    assert first["trigger_id"] == "inbox"
    completed = rec.of(HookEvent.TASK_COMPLETED)[0]
    assert (completed["event_id"], completed["trigger_type"], completed["outcome"]) == (
        first["event_id"],
        "file_watch",
        "success",
    )
    assert f"path: {first['path']}" in model.prompts[0]


async def test_a_file_changed_block_drops_the_event_and_counts_it_as_filtered(
    tmp_path: Path,
) -> None:
    async def not_on_weekends(ctx: HookContext) -> None:
        raise HookBlocked("the inbox is closed")

    model = ScriptedModel()
    process = watch_process(
        tmp_path, model, hooks=[HookConfig(event="file_changed", callback=not_on_weekends)]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_CREATED)
    async with process:
        await write_until(tmp_path / "ticket.txt", lambda: process.status()["filtered_count"])
    assert rec.seen == []
    assert process.dead_letters == []
    assert model.requests == []


# -- cron -----------------------------------------------------------------------------------


def clock_starting_at(start: datetime) -> Callable[[], datetime]:
    """A wall clock that reads ``start`` now and then advances in real time."""
    origin = time.monotonic()
    return lambda: start + timedelta(seconds=time.monotonic() - origin)


async def test_the_cron_runner_fires_at_the_next_time_of_its_schedule() -> None:
    fired: list[tuple[str, str, dict[str, Any]]] = []

    async def fire(trigger_id: str, trigger_type: str, payload: dict[str, Any]) -> None:
        fired.append((trigger_id, trigger_type, payload))

    # Twenty milliseconds before noon, an every-minute schedule is due at 12:00:00.
    just_before_noon = datetime(2030, 1, 1, 11, 59, 59, 980_000, tzinfo=UTC)
    runner = CronRunner(
        "nightly",
        CronTrigger(cron_expression="* * * * *", payload={"job": "export"}),
        clock=clock_starting_at(just_before_noon),
    )
    runner.start(fire)
    try:
        await eventually(lambda: fired, what="the cron firing")
    finally:
        await runner.stop()
    assert fired == [
        ("nightly", "cron", {"job": "export", "scheduled_at": "2030-01-01T12:00:00+00:00"})
    ]


async def test_a_cron_firing_becomes_a_cron_event_of_the_process() -> None:
    model = ScriptedModel()
    process = AgentProcess("exporter", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_CREATED, HookEvent.TASK_COMPLETED)
    runner = CronRunner(
        "nightly",
        CronTrigger(cron_expression="0 3 * * *"),
        clock=clock_starting_at(datetime(2030, 1, 1, 2, 59, 59, 990_000, tzinfo=UTC)),
    )
    async with process:
        await fire_until_completed(process, runner, rec, "the cron run")
    [created] = rec.of(HookEvent.TASK_CREATED)
    assert (created["trigger_id"], created["trigger_type"]) == ("nightly", "cron")
    assert "scheduled_at: 2030-01-01T03:00:00+00:00" in model.prompts[0]


async def test_a_process_with_a_cron_trigger_lists_it_and_stops_its_runner() -> None:
    trigger = CronTrigger(id="hourly", cron_expression="0 * * * *")
    process = AgentProcess("exporter", ProcessConfig(model=ScriptedModel(), triggers=[trigger]))
    async with process:
        assert process.triggers == [("hourly", trigger)]
    assert process.state.value == "stopped"


def test_a_cron_expression_that_does_not_parse_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="cron_expression 'every day' does not parse"):
        CronTrigger(cron_expression="every day")


async def test_inject_trigger_queues_an_event_of_what_a_trigger_saw() -> None:
    process = AgentProcess("hourly", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        event_id = await process.inject_trigger("nightly", "cron", {"at": "02:00"})
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="its run to end")
    [completed] = rec.of(HookEvent.TASK_COMPLETED)
    assert (completed["event_id"], completed["trigger_id"], completed["trigger_type"]) == (
        event_id,
        "nightly",
        "cron",
    )


async def test_fire_is_a_deprecated_alias_of_inject_trigger() -> None:
    process = AgentProcess("hourly", ProcessConfig(model=ScriptedModel()))
    with pytest.warns(DeprecationWarning, match="inject_trigger"):
        event_id = await process.fire("nightly", "cron", {"at": "02:00"})
    assert process.status()["queue_size"] == 1  # queued until the process starts
    await process.stop()
    [left] = process.dead_letters
    assert (left["event_id"], left["event"].trigger_type) == (event_id, "cron")
