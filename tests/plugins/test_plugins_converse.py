"""A plugin's converse and its context: a converse deadline that really bounds (checked where
it is given), text that is not a question refused, a context unusable once its handler ended."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from _process_support import Messages, Tools, completions, run_one_task, run_task
from _process_support import plugin_process as make_process
from tether.hooks import Plugin, PluginContext, PluginError
from tether.models import ModelReply, ScriptedModel
from tether.plugins.debrief import DebriefPlugin


class SwallowingModel:
    """Answers the run at once; a later call (a converse turn) swallows the cancellation its
    deadline sends and answers late, as a model client that ignores cancellation would."""

    name = "swallowing"

    def __init__(self) -> None:
        self.calls = 0
        self.late_replies = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            return ModelReply(content="done")
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # carries on regardless
        self.late_replies += 1
        return ModelReply(content="late")

    async def aclose(self) -> None:
        pass


# -- converse: a deadline that really bounds, checked where it is given ---------------------


async def test_converse_deadline_bounds_a_model_that_swallows_cancellation() -> None:
    seen: dict[str, Any] = {}

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                await ctx.converse("what happened?", timeout=0.2)
            except TimeoutError as exc:
                seen["error"] = exc
            seen["elapsed"] = loop.time() - started
            ctx.emit_artifact({"asked": True})

    model = SwallowingModel()
    process = make_process(Asker(), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert isinstance(seen["error"], TimeoutError)
    assert seen["elapsed"] < 0.45  # the deadline, not the model's late answer
    assert artifact["payload"] == {"asked": True, "tools_disabled": True, "timed_out": True}
    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings.get(event_id) is None


async def test_debrief_of_a_model_that_swallows_cancellation_records_the_time_out() -> None:
    model = SwallowingModel()
    process = make_process(DebriefPlugin(on="all", converse_timeout=0.2), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert artifact["payload"]["timed_out"] is True
    assert artifact["payload"]["reply"] is None


@pytest.mark.parametrize("timeout", [-1, 0, math.nan, math.inf, "5", True, 3601])
async def test_a_bad_converse_timeout_is_refused_naming_it(timeout: Any) -> None:
    errors: list[BaseException] = []

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                await ctx.converse("hi", timeout=timeout)
            except (TypeError, ValueError) as exc:
                errors.append(exc)

    model = ScriptedModel()
    process = make_process(Asker(), model=model)
    await run_one_task(process)

    [error] = errors
    assert "converse timeout" in str(error)
    assert repr(timeout) in str(error)
    assert "3600" in str(error)


@pytest.mark.parametrize("value", [-5, 0, math.nan, "30", None, False])
def test_a_bad_converse_timeout_attribute_is_refused_at_registration(value: Any) -> None:
    class Asker(Plugin):
        name = "asker"
        converse_timeout = value

        async def on_task_completed(self, ctx: PluginContext) -> None:
            pass

    with pytest.raises(PluginError, match="converse_timeout") as info:
        make_process(Asker())
    assert repr(value) in str(info.value)


# -- a context ends with its handler ----------------------------------------------------------


async def test_a_context_kept_past_its_handler_can_no_longer_be_used() -> None:
    kept: list[PluginContext] = []

    class Keeper(Plugin):
        name = "keeper"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            kept.append(ctx)

    model = ScriptedModel()
    process = make_process(Keeper(), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [ctx] = kept
        with pytest.raises(PluginError, match="has returned"):
            await ctx.converse("one more?")
        with pytest.raises(PluginError, match="has returned"):
            ctx.emit_artifact({"late": True})
        with pytest.raises(PluginError, match="has returned"):
            ctx.warn("late")

    assert process.plugins.artifacts.list(event_id) == []
    assert process.plugins.warnings.get(event_id) is None


async def test_a_converse_longer_than_its_handlers_timeout_ends_first_and_is_recorded() -> None:
    seen: list[BaseException] = []

    class Asker(Plugin):
        name = "asker"  # converse_timeout 30 s by default; the handler's timeout is 0.4 s

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                await ctx.converse("what happened?")
            except TimeoutError as exc:
                seen.append(exc)
            ctx.emit_artifact({"asked": True})

    process = make_process(Asker(), model=SwallowingModel(), hook_timeout=0.4)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert len(seen) == 1
    assert artifact["payload"]["timed_out"] is True
    assert process.plugins.warnings.get(event_id) is None  # the handler was not cut off
    runs = process.history.runs(event="task_completed")
    assert [r.outcome for r in runs if r.hook_name == "plugin:asker.on_task_completed"] == [
        "passed"
    ]


async def test_converse_refuses_text_that_is_not_a_question() -> None:
    errors: list[str] = []

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            for text in (None, "", "   ", {"q": 1}):
                try:
                    await ctx.converse(text)  # type: ignore[arg-type]
                except PluginError as exc:
                    errors.append(str(exc))

    model = SwallowingModel()
    process = make_process(Asker(), model=model)
    await run_one_task(process)

    assert errors == [
        "converse text must be a non-empty str, got None",
        "converse text must be a non-empty str, got ''",
        "converse text must be a non-empty str, got '   '",
        "converse text must be a non-empty str, got {'q': 1}",
    ]
    assert model.calls == 1  # the run only: the model was never asked
