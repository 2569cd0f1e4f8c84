"""spawn_process from runs side by side (concurrency > 1) while subagent_start hooks wait."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, HookContext, HookEvent, OpenModeConfig, ProcessConfig
from tether.models import ScriptedModel


def spawner(
    *calls: tuple[str, dict[str, Any]], **config: Any
) -> tuple[AgentProcess, ScriptedModel]:
    model = ScriptedModel(reply="Done.", tool_calls=list(calls))
    process = AgentProcess(
        "triage", ProcessConfig(model=model, execution_mode="open", concurrency=2, **config)
    )

    async def slow_review(ctx: HookContext) -> None:
        await asyncio.sleep(0.1)  # the other run asks for its spawn meanwhile

    process.hooks.register(HookEvent.SUBAGENT_START, slow_review)
    return process, model


async def run_two(process: AgentProcess) -> None:
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.inject(ticket("first"))
    await process.inject(ticket("second"))
    await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="both runs")


def tool_answers(model: ScriptedModel) -> list[str]:
    return sorted(
        m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"
    )


@pytest.mark.slow
async def test_two_runs_spawning_one_name_at_once_start_one_child() -> None:
    """Regression: both spawns passed the name check before either's subagent_start hooks
    were done; the second child replaced the first in `children`, and the first ran on
    after its parent stopped, supervised by nothing."""
    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    process, model = spawner(spawn, spawn)
    async with process:
        await run_two(process)
        [child] = process.children.values()
    assert tool_answers(model) == [
        "error: a process named 'bugs' already exists",
        "process 'bugs' started",
    ]
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, AgentProcess) and o.name == "bugs"]
    assert alive
    assert {o.state.value for o in alive} == {"stopped"}  # none left running
    assert child.state.value == "stopped"


async def test_spawns_under_way_count_towards_max_children() -> None:
    """Regression: two spawns at once each saw no child yet and both started, one more than
    open_mode.max_children allows."""
    process, model = spawner(
        ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."}),
        ("spawn_process", {"name": "docs", "instructions": "You fix the docs."}),
        open_mode=OpenModeConfig(max_children=1),
    )
    async with process:
        await run_two(process)
        assert len(process.children) == 1
    assert tool_answers(model)[1:] == ["refused: this process may run at most 1 spawned processes"]


async def test_a_process_stops_its_children_together() -> None:
    """Each child's session_end hook waits until all three children are stopping: stopped one
    after another, the first would wait alone until its hook timed out."""
    parent = AgentProcess(
        "lead", ProcessConfig(model=ScriptedModel(reply="ok"), execution_mode="open")
    )
    arrived: set[str] = set()
    everyone = asyncio.Event()
    met: list[str] = []

    async def meet(ctx: HookContext) -> None:
        if ctx.process_id == "lead":
            return
        arrived.add(ctx.process_id)
        if len(arrived) == 3:
            everyone.set()
        await everyone.wait()
        met.append(ctx.process_id)

    parent.hooks.register(HookEvent.SESSION_END, meet, timeout=2)
    await parent.start()
    for name in ("c0", "c1", "c2"):
        assert isinstance(await parent._spawner.spawn(name, "You help."), AgentProcess)
    await parent.stop()
    assert sorted(met) == ["c0", "c1", "c2"]
    assert parent.children == {}
