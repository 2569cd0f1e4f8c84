"""A plugin's handlers: declared (refused at registration when they could never be called,
ties in definition order), bounded (priority and timeout on extension points too, a handler
ignoring its timeout closed) and their warnings kept (bounded in a loop, in the journal across
processes), and the deferred calls a stop ends."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from _process_support import (
    Messages,
    Tools,
    completions,
    eventually,
    run_one_task,
    run_task,
    task_warnings,
)
from _process_support import plugin_process as make_process
from tether import TriggerEvent
from tether.hooks import (
    HookEvent,
    HookManager,
    Plugin,
    PluginContext,
    PluginError,
    implements,
    register_plugin,
)
from tether.models import ModelReply, ScriptedModel

# -- declaration: handlers that could never be called, and the order of ties ----------------


def test_a_lifecycle_method_that_cannot_take_the_context_is_refused_at_registration() -> None:
    class NoCtx(Plugin):
        name = "noctx"

        async def on_task_completed(self) -> None:  # type: ignore[override]
            pass

    class TwoArgs(Plugin):
        name = "twoargs"

        async def on_task_created(self, ctx: PluginContext, extra: int) -> None:
            pass

    for plugin in (NoCtx(), TwoArgs()):
        with pytest.raises(PluginError, match="must take the context as its one argument"):
            make_process(plugin)


async def test_register_hook_refuses_a_lifecycle_handler_that_cannot_take_the_context() -> None:
    class Runtime(Plugin):
        name = "runtime"

    plugin = Runtime()
    process = make_process(plugin)

    async def no_ctx() -> None:
        pass

    with pytest.raises(PluginError, match="must take the context"):
        plugin.register_hook("task_completed", no_ctx)
    assert process.hooks.describe() == []


async def test_a_plugins_handlers_of_one_point_at_one_priority_run_in_definition_order() -> None:
    class Ordered(Plugin):
        name = "ordered"

        @implements("ticket.classify")
        def zeta(self) -> str:
            return "zeta"

        @implements("ticket.classify")
        def alpha(self) -> str:
            return "alpha"

        @implements("ticket.classify")
        def mid(self) -> str:
            return "mid"

    class Later(Ordered):
        name = "later"

        @implements("ticket.classify")
        def aardvark(self) -> str:
            return "aardvark"

    hooks = HookManager()
    register_plugin(hooks, Later())

    assert await hooks.call("ticket.classify") == ["zeta", "alpha", "mid", "aardvark"]


# -- extension points: handlers are shown data, not the live event ---------------------------


async def test_a_point_handler_changing_the_event_never_changes_the_task() -> None:
    shown: list[dict[str, Any]] = []

    class Meddler(Plugin):
        name = "meddler"

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> None:
            event.payload["ticket"] = "rm -rf /"
            event.payload["extra"] = ["injected"]

        @implements("model.for_run")
        def model(self, event: TriggerEvent, process: str) -> None:
            shown.append(dict(event.payload))
            event.payload.clear()

        @implements("tools.for_run")
        def tools(self, event: TriggerEvent, process: str) -> None:
            shown.append(dict(event.payload))
            event.trigger_id = "forged"

    model = ScriptedModel()
    process = make_process(Meddler(), model=model)
    rec = completions(process)
    event = TriggerEvent("helpdesk", "webhook", {"ticket": "VPN is down", "tags": ["net"]})
    async with process:
        await process.inject(event)
        await eventually(lambda: rec.outcomes() == ["success"], what="task_completed")

    assert event.payload == {"ticket": "VPN is down", "tags": ["net"]}
    assert event.trigger_id == "helpdesk"
    assert shown == [event.payload, event.payload]  # each point saw the event as it was
    [completed] = rec.of(HookEvent.TASK_COMPLETED)
    assert completed["trigger_id"] == "helpdesk"


# -- a plugin raising in __init__, a plugin warning in a loop --------------------------------


class Unbuildable(Plugin):
    name = "unbuildable"

    def __init__(self) -> None:
        raise RuntimeError("no config file")

    async def on_task_completed(self, ctx: PluginContext) -> None:
        pass


def test_a_plugin_class_raising_in_init_is_a_plugin_error_naming_it() -> None:
    with pytest.raises(PluginError, match=r"Unbuildable could not be built.*no config file"):
        make_process(Unbuildable)

    process = make_process()
    with pytest.raises(PluginError, match="Unbuildable could not be built"):
        process.plugins.add(Unbuildable)
    assert process.plugins.names == []
    assert process.hooks.describe() == []


async def test_a_plugin_warning_in_a_loop_keeps_a_bounded_count_and_size() -> None:
    class Chatty(Plugin):
        name = "chatty"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            ctx.warn("y" * 1_000_000)
            for i in range(5_000):
                ctx.warn(f"warning {i}")

    process = make_process(Chatty())
    event_id = await run_one_task(process)

    kept = process.plugins.warnings[event_id]
    assert len(kept) == 101
    assert kept[0].startswith("plugin:chatty: yyy")
    assert kept[0].endswith("(1000015 characters in all)")
    assert len(kept[0]) < 4100
    assert kept[1] == "plugin:chatty: warning 0"
    assert kept[-1] == "plugin warnings: 4901 more for this task not kept (see the log)"


async def test_a_plugin_method_calling_sys_exit_is_a_warning_of_the_task() -> None:
    class Exiter(Plugin):
        name = "exiter"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            raise SystemExit(3)

    assert await task_warnings(make_process(Exiter())) == [
        "plugin:exiter: on_task_completed failed: SystemExit(3)"
    ]


# -- deferred calls a stop ends are said, not silently forgotten ------------------------------


async def test_deferred_calls_a_stop_ends_are_logged_by_point(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fired: list[int] = []
    started = asyncio.Event()

    class Later(Plugin):
        name = "later"

        @implements("report.send")
        def send(self, n: int) -> None:
            fired.append(n)

        @implements("report.slow")
        async def slow(self) -> None:
            started.set()
            await asyncio.sleep(30)

    process = make_process(Later())
    async with process:
        process.hooks.call_later(0, "report.send", n=1)
        process.hooks.call_later(60, "report.send", n=2)
        process.hooks.call_later(60, "audit.flush")
        process.hooks.call_later(0, "report.slow")
        await asyncio.wait_for(started.wait(), 5)
        caplog.clear()

    assert fired == [1]
    [line] = [r.getMessage() for r in caplog.records if "deferred" in r.getMessage()]
    dropped = "2 deferred extension-point call(s) not yet due dropped (audit.flush, report.send)"
    assert dropped in line
    assert "1 running cancelled (deferred call of report.slow)" in line


# -- a plugin's priority and timeout apply to its extension-point handlers too ---------------


async def test_a_plugins_priority_and_timeout_apply_to_its_extension_point_handlers() -> None:
    class Slow(Plugin):
        name = "slow"
        priority = 10
        timeout = 0.2

        @implements("ticket.classify")
        async def classify(self) -> str:
            await asyncio.sleep(5)
            return "late"

        @implements("ticket.classify", priority=-5, timeout=1)
        def own(self) -> str:
            return "own"

    class Quick(Plugin):
        name = "quick"

        @implements("ticket.classify")
        def classify(self) -> str:
            return "quick"

    hooks = HookManager()
    errors: list[Any] = []
    hooks.on_error(errors.append)
    register_plugin(hooks, Quick())
    register_plugin(hooks, Slow())
    loop = asyncio.get_running_loop()
    started = loop.time()

    assert await hooks.call("ticket.classify") == [None, "quick", "own"]
    assert loop.time() - started < 1.5
    [error] = errors
    assert isinstance(error.error, TimeoutError)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": -1}, "timeout must be > 0"),
        ({"timeout": "1"}, "timeout must be a number"),
        ({"priority": 1.5}, "priority must be an int"),
    ],
)
def test_implements_refuses_bad_options_where_declared(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        implements("ticket.classify", **options)


def test_a_bad_plugin_timeout_is_refused_for_its_extension_point_handlers_too() -> None:
    class Bad(Plugin):
        name = "bad"
        timeout = -3

        @implements("ticket.classify")
        def classify(self) -> str:
            return "x"

    with pytest.raises(PluginError, match=r"bad.*classify.*timeout must be > 0.*-3"):
        register_plugin(HookManager(), Bad())


def test_one_plugin_registered_twice_on_one_manager_is_refused() -> None:
    class Once(Plugin):
        name = "once"

        @implements("ticket.classify")
        def classify(self) -> str:
            return "x"

    hooks = HookManager()
    plugin = Once()
    register_plugin(hooks, plugin)
    with pytest.raises(PluginError, match="already registered"):
        register_plugin(hooks, plugin)
    assert len(hooks) == 1
    register_plugin(HookManager(), plugin)  # another manager: fine


# -- first-result points of the process: a wrong answer does not silence the next handler ---


class EchoModel:
    """Answers with the last user message it was sent (to see the prompt a run used)."""

    name = "echo"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.prompts.append(messages[-1]["content"])
        return ModelReply(content="ok")

    async def aclose(self) -> None:
        pass


async def test_a_wrong_first_answer_lets_the_next_handler_of_a_process_point_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chosen = EchoModel()

    class Wrong(Plugin):
        name = "wrong"
        priority = 10

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> int:
            return 42

        @implements("model.for_run")
        async def model(self, event: TriggerEvent, process: str) -> str:
            return "gpt-9"

    class Right(Plugin):
        name = "right"

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> str:
            return f"Ticket: {event.payload['ticket']}"

        @implements("model.for_run")
        def model(self, event: TriggerEvent, process: str) -> EchoModel:
            return chosen

    process = make_process(Wrong(), Right(), model=EchoModel())
    errors: list[Any] = []
    process.hooks.on_error(errors.append)
    await run_one_task(process, "VPN is down")

    assert chosen.prompts == ["Ticket: VPN is down"]
    assert sorted(str(e.error) for e in errors) == [
        "model.for_run answered 'gpt-9', which is not a model",
        "prompt.render answered 42, which is not text (a str)",
    ]
    assert "which is not text" in caplog.text


# -- a handler that swallows its timeout's cancellation is timed out, and that is a warning ---


async def test_a_plugin_handler_swallowing_its_timeout_is_timed_out_and_warned_about() -> None:
    class Stubborn(Plugin):
        name = "stubborn"
        timeout = 0.2

        async def on_task_completed(self, ctx: PluginContext) -> None:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(10)
            ctx.set("outcome", "rewritten after its timeout")

        @implements("prompt.render")
        async def render(self, event: TriggerEvent, process: str) -> str:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(10)
            return "an answer given after its timeout"

    process = make_process(Stubborn())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings[event_id] == [
        "plugin:stubborn: prompt.render (render) timed out or was cancelled, and ignored it",
        "plugin:stubborn: on_task_completed timed out or was cancelled, and ignored it",
    ]
    runs = process.history.runs()
    [run] = [r for r in runs if r.hook_name == "plugin:stubborn.on_task_completed"]
    assert run.outcome == "timed_out"


# -- plugin warnings outlive the process where its artifacts do ------------------------------


async def test_plugin_warnings_are_kept_in_the_journal_across_processes(tmp_path: Path) -> None:
    where = "journal_path"

    class Noisy(Plugin):
        name = "noisy"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            ctx.warn("the ticket had no priority")
            ctx.emit_artifact({"seen": True})

    place = str(tmp_path / "journal.db")
    first = make_process(Noisy(), **{where: place})
    rec = completions(first)
    async with first:
        event_id = await run_task(first, rec)

    again = make_process(**{where: place})  # the host restarted: nothing in memory
    assert again.plugins.warnings == {}
    assert again.plugins.task_warnings(event_id) == ["plugin:noisy: the ticket had no priority"]
    assert [a["name"] for a in again.plugins.artifacts.list(event_id)] == [f"{event_id}.noisy.json"]
    assert first.plugins.task_warnings(event_id) == again.plugins.task_warnings(event_id)
