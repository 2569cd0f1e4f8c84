"""The extension points a process offers each run (issue 6): ``model.for_run`` and
``prompt.render`` take the first non-None answer, ``tools.for_run`` collects every handler's
tools on top of the configured ones, and a plugin's answers end with the plugin."""

from __future__ import annotations

from typing import Any

from _process_support import completions, run_one_task, run_task
from tether import AgentProcess, Plugin, ProcessConfig, TriggerEvent, implements
from tether.models import ScriptedModel


async def test_model_for_run_takes_the_highest_priority_answer_and_asks_no_further() -> None:
    default, strong, weak = (ScriptedModel(reply=r) for r in ("default", "strong", "weak"))
    asked: list[str] = []

    def first(**kwargs: Any) -> ScriptedModel:
        asked.append("first")
        return strong

    def second(**kwargs: Any) -> ScriptedModel:
        asked.append("second")
        return weak

    process = AgentProcess("triage", ProcessConfig(model=default))
    process.hooks.register("model.for_run", second)
    process.hooks.register("model.for_run", first, priority=10)
    await run_one_task(process)

    assert asked == ["first"]
    assert [len(m.requests) for m in (strong, weak, default)] == [1, 0, 0]


async def test_model_for_run_passes_over_a_handler_that_answers_none() -> None:
    default, chosen = ScriptedModel(reply="default"), ScriptedModel(reply="chosen")
    process = AgentProcess("triage", ProcessConfig(model=default))
    process.hooks.register("model.for_run", lambda **kw: None, priority=10)
    process.hooks.register("model.for_run", lambda **kw: chosen)
    await run_one_task(process)

    assert [len(chosen.requests), len(default.requests)] == [1, 0]


async def test_model_for_run_is_told_the_event_and_the_process_name() -> None:
    seen: list[tuple[str, str]] = []

    def look(event: TriggerEvent, process: str) -> None:
        seen.append((event.event_id, process))

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    process.hooks.register("model.for_run", look)
    event_id = await run_one_task(process)

    assert seen == [(event_id, "triage")]


async def test_tools_for_run_adds_to_the_configured_tools() -> None:
    async def configured() -> str:
        """Always offered."""
        return "c"

    async def extra() -> str:
        """Offered by a plugin for this run."""
        return "e"

    class Extra(Plugin):
        name = "extra"

        @implements("tools.for_run")
        def tools(self, event: TriggerEvent, process: str) -> list[Any]:
            return [extra]

    model = ScriptedModel()
    process = AgentProcess(
        "triage", ProcessConfig(model=model, tools=[configured], plugins=[Extra()])
    )
    await run_one_task(process)

    offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert offered == {"configured", "extra"}


async def test_a_removed_plugins_answers_no_longer_shape_the_run() -> None:
    default, special = ScriptedModel(reply="default"), ScriptedModel(reply="special")

    class Routing(Plugin):
        name = "routing"

        @implements("model.for_run")
        def model(self, event: TriggerEvent, process: str) -> ScriptedModel:
            return special

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> str:
            return "rendered by routing"

    process = AgentProcess("triage", ProcessConfig(model=default, plugins=[Routing()]))
    rec = completions(process)
    async with process:
        await run_task(process, rec, "first ticket")
        process.plugins.remove("routing")
        await run_task(process, rec, "second ticket")

    assert special.prompts == ["rendered by routing"]
    assert len(default.prompts) == 1
    assert default.prompts[0].startswith("ticket: second ticket\n")


async def test_a_prompt_render_answer_that_is_not_text_falls_back_to_the_usual_prompt() -> None:
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    process.hooks.register("prompt.render", lambda **kw: {"not": "text"})
    rec = completions(process)
    async with process:
        await run_task(process, rec, "Printer jammed")

    assert rec.outcomes() == ["success"]
    assert model.prompts[0].startswith("ticket: Printer jammed\n")
