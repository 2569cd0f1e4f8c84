"""Review: rewind(timeout=...) bounds everything it waits for, not only the runs in flight.

While a rewind waits, no new run starts; a rewind stuck behind an earlier rewind or behind a
configuration change whose hook hangs held every run of the process well past its timeout.
"""

from __future__ import annotations

import asyncio

import pytest

from _process_support import GatedModel, HeldRewind, Recorder, eventually, hold_a_second_run, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessBusyError, ProcessConfig
from tether.models import ScriptedModel


def finished(rec: Recorder) -> int:
    return len(rec.of(HookEvent.TASK_COMPLETED))


async def test_a_rewind_behind_another_rewind_gives_up_at_its_own_timeout() -> None:
    """Regression: the second rewind waited for the first one, however long it took."""
    model = GatedModel(reply="Noted.")
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.CONFIG_CHANGE)
    async with process:
        await hold_a_second_run(process, model, rec)
        first = asyncio.create_task(process.rewind(2, timeout=60))
        await eventually(
            lambda: process._rewinder.held is not None, what="the first rewind to begin"
        )
        with pytest.raises(ProcessBusyError, match="another rewind"):
            await asyncio.wait_for(process.rewind(1, timeout=0.05), 10)
        model.gate.set()
        assert await first is True
    [change] = rec.of(HookEvent.CONFIG_CHANGE)
    assert (change["dropped"], change["size_before"]) == (2, 4)
    assert len(process.context.conversation) == 2


async def test_a_rewind_behind_a_change_whose_hook_hangs_gives_up_and_lets_runs_go_on() -> None:
    """Regression: the rewind waited for the change lock with no deadline, holding every new
    run until the other change's config_change hook was done (its timeout: 30 s by default)."""
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(reply="Noted.")))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    in_hook, release = asyncio.Event(), asyncio.Event()

    async def slow_review(ctx: HookContext) -> None:
        if ctx.data["change"] == "mission":
            in_hook.set()
            await release.wait()

    process.hooks.register(HookEvent.CONFIG_CHANGE, slow_review)
    async with process:
        await process.inject(ticket("first"))
        await eventually(lambda: finished(rec) == 1, what="the first run")
        mission = asyncio.create_task(process.set_mission("Keep the queue short."))
        await in_hook.wait()
        with pytest.raises(ProcessBusyError, match="another configuration change"):
            await asyncio.wait_for(process.rewind(2, timeout=0.05), 10)
        assert len(process.context.conversation) == 2
        await process.inject(ticket("second"))  # runs are not held any more
        await eventually(lambda: finished(rec) == 2, what="the second run")
        release.set()
        assert await mission is True
    assert process.config.mission == "Keep the queue short."


async def test_an_event_a_worker_holds_during_a_rewind_still_counts_as_queued() -> None:
    """Regression: an event a worker took while a rewind's hooks ran was in neither
    queue_size nor in_flight, so a process waiting to run it looked idle (``tether run
    --until-idle`` then stopped it, dead-lettering the event instead of running it)."""
    audit = HeldRewind()
    entered, release = audit.entered, audit.release

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(reply="Noted.")))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    async with process:
        await process.inject(ticket("first"))
        await eventually(lambda: finished(rec) == 1, what="the first run")
        rewinding = asyncio.create_task(process.rewind(2))
        await entered.wait()
        await process.inject(ticket("second"))
        await eventually(lambda: process._live.queue.empty(), what="a worker to take it")
        status = process.status()
        assert (status["queue_size"], status["in_flight"]) == (1, 0)
        release.set()
        assert await rewinding is True
        await eventually(lambda: finished(rec) == 2, what="the second run")
        assert process.status()["queue_size"] == 0
