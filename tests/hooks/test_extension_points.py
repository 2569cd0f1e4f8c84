"""Extension points: plugins that implement them, and the three a process offers per run
(``prompt.render``, ``model.for_run``, ``tools.for_run``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.hooks import (
    HookErrorInfo,
    HookEvent,
    HookManager,
    Plugin,
    PluginContext,
    implements,
    register_plugin,
)
from tether.models import ScriptedModel

NAME = "ticket.classify"


class Classifier(Plugin):
    name = "classifier"

    @implements(NAME, priority=5)
    async def by_keyword(self, text: str) -> str | None:
        return "billing" if "invoice" in text else None

    @implements(NAME)
    def fallback(self, text: str) -> str:
        return "general"


def completions(process: AgentProcess) -> Recorder:
    return Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)


async def run_task(process: AgentProcess, rec: Recorder, event: TriggerEvent | None = None) -> str:
    before = len(rec.outcomes())
    event_id = await process.inject(event or ticket())
    await eventually(lambda: len(rec.outcomes()) > before, what="task_completed")
    return event_id


# -- calling extension points ----------------------------------------------------------------


async def test_call_returns_every_result_in_priority_order() -> None:
    manager = HookManager()
    register_plugin(manager, Classifier())

    def urgent(text: str) -> str:
        return "urgent" if "down" in text else "normal"

    manager.register(NAME, urgent, priority=10)

    assert await manager.call(NAME, text="invoice is down") == ["urgent", "billing", "general"]
    assert await manager.call(NAME, text="hello") == ["normal", None, "general"]


async def test_a_failed_handler_leaves_none_and_error_listeners_receive_the_error() -> None:
    class Flaky(Plugin):
        name = "flaky"

        @implements(NAME, priority=1)
        def broken(self, text: str) -> str:
            raise KeyError(text)

    manager = HookManager()
    errors: list[HookErrorInfo] = []
    manager.on_error(errors.append)
    register_plugin(manager, Classifier())
    register_plugin(manager, Flaky())

    assert await manager.call(NAME, text="invoice") == ["billing", None, "general"]
    (info,) = errors
    assert (info.event, info.hook_name, type(info.error)) == (
        NAME,
        "plugin:flaky.broken",
        KeyError,
    )


async def test_an_async_error_listener_receives_the_error_too() -> None:
    manager = HookManager()
    seen: list[str] = []

    async def listener(info: HookErrorInfo) -> None:
        await asyncio.sleep(0)
        seen.append(str(info.error))

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("classifier offline")

    manager.on_error(listener)
    manager.register(NAME, broken)

    assert await manager.call(NAME, text="x") == [None]
    assert seen == ["classifier offline"]


async def test_firstresult_stops_at_the_first_non_none_result() -> None:
    manager = HookManager()
    register_plugin(manager, Classifier())
    later: list[str] = []

    def never(text: str) -> str:
        later.append(text)
        return "never"

    manager.register(NAME, never, priority=-5)

    assert await manager.call(NAME, firstresult=True, text="invoice 7") == "billing"
    assert await manager.call(NAME, firstresult=True, text="hello") == "general"
    assert later == []


async def test_an_extension_point_without_handlers_returns_an_empty_list() -> None:
    manager = HookManager()

    assert await manager.call("nobody.listens", text="x") == []
    assert await manager.call("nobody.listens", firstresult=True) is None


async def test_implemented_says_whether_a_call_would_run_an_enabled_handler() -> None:
    manager = HookManager()
    assert manager.implemented(NAME) is False
    hook_id = manager.register(NAME, lambda text: "general")
    assert manager.implemented(NAME) is True
    manager.set_enabled(hook_id, False)
    assert manager.implemented(NAME) is False
    with pytest.raises(ValueError, match="lifecycle event"):
        manager.implemented("task_created")


async def test_call_later_fires_after_the_delay_and_returns_nothing() -> None:
    manager = HookManager()
    fired = asyncio.Event()
    seen: list[str] = []

    def handler(text: str) -> None:
        seen.append(text)
        fired.set()

    manager.register(NAME, handler)
    manager.call_later(0.01, NAME, text="later")
    assert seen == []

    await asyncio.wait_for(fired.wait(), timeout=5)
    assert seen == ["later"]
    await manager.aclose()


async def test_call_later_with_a_negative_delay_is_a_value_error_at_call_time() -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="delay must be a number of seconds >= 0"):
        manager.call_later(-0.5, NAME, text="x")


async def test_an_extension_point_is_separate_from_the_lifecycle_events() -> None:
    manager = HookManager()
    register_plugin(manager, Classifier())

    result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e1"})

    assert result.fired == 0


# -- plugins implement extension points -------------------------------------------------------


def test_a_plugin_registers_its_extension_points_owned_by_it() -> None:
    manager = HookManager()
    register_plugin(manager, Classifier())

    infos = manager.describe(NAME)

    assert [(i.name, i.priority, i.owner) for i in infos] == [
        ("plugin:classifier.by_keyword", 5, "classifier"),
        ("plugin:classifier.fallback", 0, "classifier"),
    ]


async def test_removing_the_plugin_removes_its_extension_points() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), plugins=[Classifier()]))
    assert await process.hooks.call(NAME, text="invoice") == ["billing", "general"]

    process.plugins.remove("classifier")

    assert await process.hooks.call(NAME, text="invoice") == []


async def test_a_plugin_can_implement_both_lifecycle_methods_and_extension_points() -> None:
    class Both(Classifier):
        name = "both"

        def __init__(self) -> None:
            self.labels: list[str | None] = []
            self.process: AgentProcess | None = None

        async def on_task_created(self, ctx: PluginContext) -> None:
            assert self.process is not None
            self.labels.append(
                await self.process.hooks.call(NAME, firstresult=True, text="invoice 12")
            )

    both = Both()
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), plugins=[both]))
    both.process = process
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert both.labels == ["billing"]


def test_registering_a_plugin_does_not_evaluate_its_properties() -> None:
    """Regression: registration looked at every attribute, running properties."""
    touched: list[str] = []

    class Lazy(Classifier):
        name = "lazy"

        @property
        def client(self) -> str:
            touched.append("client")
            raise RuntimeError("not connected yet")

    manager = HookManager()
    register_plugin(manager, Lazy())

    assert touched == []
    assert len(manager) == 2


async def test_a_static_method_can_implement_an_extension_point() -> None:
    class Static(Plugin):
        name = "static"

        @staticmethod
        @implements(NAME)
        def answer(text: str) -> str:
            return "static"

    manager = HookManager()
    register_plugin(manager, Static())

    assert await manager.call(NAME, text="x") == ["static"]


# -- the process's extension points -----------------------------------------------------------


async def test_prompt_render_changes_what_the_model_receives() -> None:
    class Render(Plugin):
        name = "render"

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> str:
            return f"[{process}] {event.payload['ticket']}"

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, plugins=[Render()]))
    rec = completions(process)
    async with process:
        await run_task(process, rec, ticket("Printer jammed"))

    assert model.prompts == ["[triage] Printer jammed"]


async def test_prompt_render_takes_the_first_answer_and_none_falls_back() -> None:
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    answers: list[str] = []

    def decline(**kwargs: Any) -> None:
        answers.append("decline")

    def render(event: TriggerEvent, process: str) -> str:
        answers.append("render")
        return "custom"

    def lower(**kwargs: Any) -> str:
        answers.append("lower")
        return "never used"

    process.hooks.register("prompt.render", decline, priority=2)
    process.hooks.register("prompt.render", render, priority=1)
    process.hooks.register("prompt.render", lower)
    rec = completions(process)
    async with process:
        await run_task(process, rec)
        process.hooks.clear("prompt.render")
        process.hooks.register("prompt.render", decline)
        await run_task(process, rec, ticket("Printer jammed"))

    assert answers == ["decline", "render", "decline"]
    assert model.prompts[0] == "custom"
    assert model.prompts[1].startswith("ticket: Printer jammed\n")


async def test_model_for_run_swaps_the_model_for_one_run() -> None:
    default = ScriptedModel(reply="default")
    strong = ScriptedModel(reply="strong")

    def pick(event: TriggerEvent, process: str) -> ScriptedModel | None:
        return strong if event.payload["ticket"].startswith("URGENT") else None

    process = AgentProcess("triage", ProcessConfig(model=default))
    process.hooks.register("model.for_run", pick)
    replies: list[str] = []

    async def reply(ctx: Any) -> None:
        replies.append(process.context.conversation.recent()[-1]["content"])

    process.hooks.register(HookEvent.TASK_COMPLETED, reply)
    rec = completions(process)
    async with process:
        await run_task(process, rec, ticket("URGENT: site down"))
        await run_task(process, rec, ticket("Printer jammed"))

    assert [len(strong.requests), len(default.requests)] == [1, 1]
    assert replies == ["strong", "default"]


async def test_a_model_for_run_answer_that_is_not_a_model_is_ignored() -> None:
    default = ScriptedModel()

    def pick(**kwargs: Any) -> str:
        return "gpt-4o"

    process = AgentProcess("triage", ProcessConfig(model=default))
    process.hooks.register("model.for_run", pick)
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert len(default.requests) == 1


async def test_tools_for_run_adds_tools_the_model_can_call() -> None:
    looked_up: list[str] = []

    async def lookup_customer(email: str) -> str:
        """Find a customer by email."""
        looked_up.append(email)
        return "customer 42"

    class Tools(Plugin):
        name = "tools"

        @implements("tools.for_run")
        def tools(self, event: TriggerEvent, process: str) -> list[Any]:
            return [lookup_customer]

    model = ScriptedModel(tool_calls=[("lookup_customer", {"email": "a@example.com"})])
    process = AgentProcess("triage", ProcessConfig(model=model, plugins=[Tools()]))
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert looked_up == ["a@example.com"]
    names = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert names == ["lookup_customer"]
    assert model.requests[1]["messages"][-1]["content"] == "customer 42"


async def test_tools_for_run_collects_the_tools_of_every_handler() -> None:
    async def first_tool() -> str:
        """One."""
        return "1"

    async def second_tool() -> str:
        """Two."""
        return "2"

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    process.hooks.register("tools.for_run", lambda **kw: [first_tool], priority=1)
    process.hooks.register("tools.for_run", lambda **kw: None)
    process.hooks.register("tools.for_run", lambda **kw: [second_tool])
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == [
        "first_tool",
        "second_tool",
    ]


async def test_extra_tools_are_for_one_run_only() -> None:
    async def special() -> str:
        """Only for urgent tickets."""
        return "ok"

    def tools(event: TriggerEvent, process: str) -> list[Any]:
        return [special] if event.payload["ticket"].startswith("URGENT") else []

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    process.hooks.register("tools.for_run", tools)
    rec = completions(process)
    async with process:
        await run_task(process, rec, ticket("URGENT: site down"))
        await run_task(process, rec, ticket("Printer jammed"))

    assert "tools" in model.requests[0]
    assert "tools" not in model.requests[1]


async def test_a_failing_extension_point_handler_never_fails_the_task() -> None:
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("tool registry offline")

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    for point in ("prompt.render", "model.for_run", "tools.for_run"):
        process.hooks.register(point, broken)
    errors: list[str] = []
    process.hooks.on_error(lambda info: errors.append(info.event))
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert errors == ["prompt.render", "model.for_run", "tools.for_run"]


async def test_a_malformed_tools_for_run_answer_never_fails_the_task() -> None:
    """Regression: a handler answering one tool (not a list) or a non-tool made the run
    raise, so a plugin's mistake became the task's failure."""

    async def single() -> str:
        """A tool answered on its own, not in a list."""
        return "ok"

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    process.hooks.register("tools.for_run", lambda **kw: single, priority=2)
    process.hooks.register("tools.for_run", lambda **kw: ["not a tool", 42], priority=1)
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["single"]
