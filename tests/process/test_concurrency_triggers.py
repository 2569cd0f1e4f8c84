"""Review: a trigger keeps firing, and its event is kept, when a hook raises a BaseException.

The hook engine isolates a hook's ``Exception``; a ``BaseException`` of the user's own goes
up to whoever dispatched. For a trigger that is its runner, which must not die of it (the
trigger would stop firing for good while the process still lists it).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from _process_support import Recorder, eventually, fire_until_completed, ticket
from tether import AgentProcess, CronTrigger, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.process._triggers import CronRunner


class Abort(BaseException):
    """A BaseException of the user's own (not an Exception: the engine does not isolate it)."""


def every_minute_at_once() -> Callable[[], datetime]:
    """A clock that reads 10 ms before the next minute each time the runner looks at it, so an
    every-minute schedule fires every 10 ms of real time."""
    first = datetime(2030, 1, 1, 11, 59, 59, 980_000, tzinfo=UTC)
    readings = itertools.chain(
        [first],
        (first + timedelta(seconds=60 * n, milliseconds=10) for n in itertools.count()),
    )
    return lambda: next(readings)


def abort_first_task_created(process: AgentProcess) -> None:
    calls: list[str] = []

    async def abort(ctx: HookContext) -> None:
        calls.append(ctx.data["event_id"])
        if len(calls) == 1:
            raise Abort("the ticket system is gone")

    process.hooks.register(HookEvent.TASK_CREATED, abort)


async def test_a_cron_trigger_keeps_firing_after_a_task_created_hook_raises_a_base_exception() -> (
    None
):
    """Regression: the runner died with the first firing; the cron trigger never fired again."""
    process = AgentProcess("exporter", ProcessConfig(model=ScriptedModel()))
    abort_first_task_created(process)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    runner = CronRunner(
        "nightly", CronTrigger(cron_expression="* * * * *"), clock=every_minute_at_once()
    )
    async with process:
        await fire_until_completed(process, runner, rec, "a later firing")
    assert rec.outcomes()[0] == "success"


async def test_an_event_whose_task_created_hook_raises_a_base_exception_is_dead_lettered(
    tmp_path: Path,
) -> None:
    """Regression: inject() raised and the event was nowhere: not queued, not a dead letter.
    It now raises and keeps the event, journaled, to redeliver."""
    db = str(tmp_path / "tether.db")
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=db))
    abort_first_task_created(process)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    event = ticket()
    async with process:
        with pytest.raises(Abort):
            await process.inject(event)
        [dead] = process.dead_letters
        assert (dead["event_id"], dead["reason"], dead["attempts"]) == (
            event.event_id,
            "process failed",
            0,
        )
        assert dead["error"] == "a task_created hook raised Abort: the ticket system is gone"
        assert await process.redeliver_dead_letters() == 1
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the redelivered run")
    assert rec.outcomes() == ["success"]
    assert process.dead_letters == []
