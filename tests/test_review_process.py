"""Review findings on agent processes, the runtime and the control API: one behaviour per test."""

from __future__ import annotations

import asyncio

from _process_support import Recorder, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel


async def test_a_finished_run_is_not_dead_lettered_when_stop_cuts_its_completion_hook() -> None:
    """A slow task_completed hook still running at stop_timeout must not undo a finished run."""
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.05))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=10)
    in_hook = asyncio.Event()

    async def slow_notifier(ctx: HookContext) -> None:
        in_hook.set()
        await asyncio.sleep(5)

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_notifier)
    await process.start()
    event = ticket()
    await process.inject(event)
    await asyncio.wait_for(in_hook.wait(), 5)
    await process.stop()
    assert len(model.requests) == 1
    assert process.dead_letters == []
    assert rec.outcomes() == ["success"]
