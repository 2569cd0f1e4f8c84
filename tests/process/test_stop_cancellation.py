"""Review: a plugin handler cut off by its process's stop is not reported as the plugin's fault.

A stop cancels the runs still going at stop_timeout, the deferred extension-point calls and,
at its deadline, the task_completed hooks of its dead letters. A plugin handler cancelled so
failed at nothing: no "timed out or was cancelled" warning is kept with the task. A handler
that overruns its own timeout still is one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _process_support import completions, eventually, run_one_task, run_task, ticket
from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.hooks import Plugin, PluginContext, hook_options, implements
from tether.models import ScriptedModel
from tether.process._dead_letters import UNFIRED


class Stuck:
    """Counts the handlers of a plugin that entered, and those cancelled."""

    def __init__(self) -> None:
        self.entered = 0
        self.cancelled = 0

    async def hold(self) -> None:
        self.entered += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


def warnings_of(process: AgentProcess) -> list[str]:
    return [text for texts in process.plugins.warnings.values() for text in texts]


async def test_an_extension_point_handler_cut_off_by_the_stop_is_no_plugin_failure() -> None:
    """Regression: a prompt.render handler whose run stop() cancelled at stop_timeout was a
    warning of the task, "prompt.render (render) timed out or was cancelled"."""
    stuck = Stuck()

    class Rendering(Plugin):
        name = "rendering"

        @implements("prompt.render")
        async def render(self, event: TriggerEvent, process: str) -> str:
            await stuck.hold()
            return "never"

    process = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(), stop_timeout=0.05, plugins=[Rendering()])
    )
    await process.start()
    event_id = await process.inject(ticket())
    await eventually(lambda: stuck.entered == 1, what="prompt.render")
    await process.stop()
    assert stuck.cancelled == 1
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"]) == (event_id, "process stopped")
    assert warnings_of(process) == []


async def test_a_lifecycle_method_cut_off_by_the_stop_is_no_plugin_failure() -> None:
    """Regression: an on_user_prompt_submit whose run stop() cancelled at stop_timeout was a
    warning of the task, "on_user_prompt_submit timed out or was cancelled"."""
    stuck = Stuck()

    class Gate(Plugin):
        name = "gate"

        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            await stuck.hold()

    process = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(), stop_timeout=0.05, plugins=[Gate()])
    )
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: stuck.entered == 1, what="on_user_prompt_submit")
    await process.stop()
    assert stuck.cancelled == 1
    assert warnings_of(process) == []


async def test_a_deferred_call_cut_off_by_the_stop_is_no_plugin_failure() -> None:
    """Regression: a deferred extension-point call that stop() cancelled was a warning,
    "ticket.follow_up (follow_up) timed out or was cancelled"."""
    stuck = Stuck()

    class Later(Plugin):
        name = "later"

        @implements("ticket.follow_up")
        async def follow_up(self, event: TriggerEvent) -> None:
            await stuck.hold()

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), plugins=[Later()]))
    await process.start()
    process.hooks.call_later(0, "ticket.follow_up", event=ticket())
    await eventually(lambda: stuck.entered == 1, what="the deferred call")
    await process.stop()
    assert stuck.cancelled == 1
    assert warnings_of(process) == []


@pytest.mark.slow
async def test_a_task_completed_method_cut_off_at_the_stop_deadline_is_no_plugin_failure() -> None:
    """Regression: an on_task_completed of a dead letter that the stop's deadline cut off was
    a warning of the task, "on_task_completed timed out or was cancelled"."""
    stuck = Stuck()

    class Notify(Plugin):
        name = "notify"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            await stuck.hold()

    process = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(), stop_timeout=0.05, plugins=[Notify()])
    )
    await process.inject(ticket())  # never started: the stop dead-letters it
    await process.stop()
    assert stuck.cancelled == 1
    [dead] = process.dead_letters
    assert dead["error"].endswith(UNFIRED)
    assert warnings_of(process) == []


async def test_an_extension_point_handler_overrunning_its_timeout_is_still_a_warning() -> None:
    class Rendering(Plugin):
        name = "rendering"

        @implements("prompt.render")
        async def render(self, event: TriggerEvent, process: str) -> str:
            await asyncio.sleep(30)
            return "never"

    process = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(), hook_timeout=0.05, plugins=[Rendering()])
    )
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
    assert rec.outcomes() == ["success"]  # the usual rendering stood in
    assert process.plugins.warnings[event_id] == [
        "plugin:rendering: prompt.render (render) timed out or was cancelled"
    ]


async def test_a_lifecycle_method_overrunning_its_timeout_is_still_a_warning() -> None:
    class Slow(Plugin):
        name = "slow"

        @hook_options(timeout=0.05)
        async def on_user_prompt_submit(self, ctx: PluginContext) -> Any:
            await asyncio.sleep(30)

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), plugins=[Slow()]))
    event_id = await run_one_task(process)
    assert process.plugins.warnings[event_id] == [
        "plugin:slow: on_user_prompt_submit timed out or was cancelled"
    ]
