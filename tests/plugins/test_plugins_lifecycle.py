"""Plugins, sentence by sentence of issue 6 and references 002/003: activation order, name
resolution (built-ins first; an entry point may name a class or an instance), owner-bound
registrations (``register_hook`` and ``owner=``) drained on removal and reload, the default
converse deadline, and the converse stamp on artifacts."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import pytest

from _process_support import completions, run_one_task, run_task, task_warnings
from _process_support import plugin_process as make_process
from conftest import Install
from tether import AgentProcess
from tether.hooks import (
    HookEvent,
    Plugin,
    PluginContext,
    PluginError,
    hook_options,
    implements,
    resolve_plugin,
)
from tether.models import ScriptedModel
from tether.plugins.debrief import DebriefPlugin

POINT = "ticket.classify"


# -- activation order ------------------------------------------------------------------------


def ordered(order: list[str], name: str) -> Plugin:
    class Noting(Plugin):
        async def on_task_created(self, ctx: PluginContext) -> None:
            order.append(f"{self.name}.created")

        async def on_task_completed(self, ctx: PluginContext) -> None:
            order.append(f"{self.name}.completed")

    Noting.name = name
    return Noting()


@pytest.mark.parametrize("names", [["alpha", "beta", "gamma"], ["gamma", "alpha", "beta"]])
async def test_plugins_of_equal_priority_run_in_activation_order(names: list[str]) -> None:
    order: list[str] = []
    process = make_process(*(ordered(order, n) for n in names))
    await run_one_task(process)

    assert order == [f"{n}.created" for n in names] + [f"{n}.completed" for n in names]


async def test_a_plugin_added_later_runs_after_those_already_active() -> None:
    order: list[str] = []
    process = make_process(ordered(order, "first"))
    process.plugins.add(ordered(order, "second"))
    await run_one_task(process)

    assert order == ["first.created", "second.created", "first.completed", "second.completed"]


# -- name resolution -------------------------------------------------------------------------

ENTRY_MODULE = """
from tether import Plugin

SEEN = []


class Shadow(Plugin):
    name = "debrief"

    async def on_task_created(self, ctx):
        SEEN.append("shadow")


class Single(Plugin):
    name = "single"

    async def on_task_created(self, ctx):
        SEEN.append(ctx.data["event_id"])


INSTANCE = Single()
"""


def test_a_built_in_name_wins_over_an_entry_point_of_the_same_name(
    install_plugin: Install,
) -> None:
    module = install_plugin(ENTRY_MODULE, "debrief = {module}:Shadow\n")

    assert isinstance(resolve_plugin("debrief"), DebriefPlugin)
    assert module not in sys.modules  # the shadowing entry point is never even imported


async def test_an_entry_point_may_name_a_plugin_instance(
    install_plugin: Install,
) -> None:
    module = install_plugin(ENTRY_MODULE, "single = {module}:INSTANCE\n")
    process = make_process("single")
    event_id = await run_one_task(process)

    assert process.plugins.names == ["single"]
    assert process.plugins.get("single") is sys.modules[module].INSTANCE
    seen = sys.modules[module].SEEN
    assert seen == [event_id]


# -- owner-bound registrations ---------------------------------------------------------------


class Router(Plugin):
    """Registers an extension-point handler and a lifecycle handler at run time."""

    name = "router"

    def __init__(self) -> None:
        self.kinds: list[type] = []

    async def on_session_start(self, ctx: PluginContext) -> None:
        self.register_hook(POINT, self.classify, priority=5)
        self.register_hook(HookEvent.TASK_CREATED, self.created)

    def classify(self, text: str) -> str:
        return f"routed by {id(self)}"

    async def created(self, ctx: PluginContext) -> None:
        self.kinds.append(type(ctx))


async def test_register_hook_binds_a_run_time_handler_to_the_plugin() -> None:
    router = Router()
    process = make_process(router)
    rec = completions(process)
    async with process:
        await run_task(process, rec)
        assert await process.hooks.call(POINT, text="x") == [f"routed by {id(router)}"]

    assert router.kinds == [PluginContext]
    assert {(i.owner, i.source) for i in process.hooks.describe() if i.owner} == {
        ("router", "plugin")
    }
    assert sorted(i.name for i in process.hooks.describe() if i.owner) == [
        "plugin:router.classify",
        "plugin:router.created",
        "plugin:router.on_session_start",
    ]


async def test_removing_a_plugin_removes_its_run_time_handlers_too() -> None:
    router = Router()
    process = make_process(router)
    async with process:
        assert len(await process.hooks.call(POINT, text="x")) == 1
        assert process.plugins.remove("router") is True
        assert await process.hooks.call(POINT, text="x") == []

    assert [i.name for i in process.hooks.describe() if i.owner] == []


async def test_reload_drains_the_old_instances_run_time_handlers() -> None:
    router = Router()
    process = make_process(router)
    async with process:
        assert await process.hooks.call(POINT, text="x") == [f"routed by {id(router)}"]
        fresh = process.plugins.reload("router")
        # The fresh instance declared no extension point; the old one's run-time handler is gone.
        assert await process.hooks.call(POINT, text="x") == []
        assert fresh is not router


async def test_a_failed_reload_keeps_the_old_instance_whole_with_its_run_time_handlers() -> None:
    """Regression: a reload whose fresh instance could not register put the old instance's
    declared handlers back, but not those it had registered at run time (register_hook)."""
    router = Router()
    process = make_process(router)
    async with process:
        assert await process.hooks.call(POINT, text="x") == [f"routed by {id(router)}"]
        before = [(i.event, i.priority) for i in process.hooks.describe() if i.owner is router]
        broken = Router()
        broken.timeout = -1  # cannot be registered
        with pytest.raises(PluginError, match="timeout"):
            process.plugins.reload("router", broken)
        assert process.plugins.get("router") is router
        assert await process.hooks.call(POINT, text="x") == [f"routed by {id(router)}"]
        after = [(i.event, i.priority) for i in process.hooks.describe() if i.owner is router]
        assert sorted(map(str, after)) == sorted(map(str, before))
        process.plugins.remove("router")  # and they go with it again
        assert await process.hooks.call(POINT, text="x") == []


@pytest.mark.parametrize("key", [POINT, HookEvent.TASK_CREATED])
async def test_a_handler_that_is_not_callable_is_a_type_error_at_registration(
    key: str | HookEvent,
) -> None:
    router = Router()
    process = make_process(router)
    async with process:
        with pytest.raises(TypeError, match="must be callable, got int") as caught:
            router.register_hook(key, 42)  # type: ignore[arg-type]
    assert isinstance(caught.value, PluginError)


async def test_a_failing_run_time_lifecycle_handler_is_a_plugin_warning() -> None:
    class Late(Plugin):
        name = "late"

        async def on_session_start(self, ctx: PluginContext) -> None:
            self.register_hook(HookEvent.USER_PROMPT_SUBMIT, self.check)

        async def check(self, ctx: PluginContext) -> None:
            raise RuntimeError("policy store offline")

    assert await task_warnings(make_process(Late())) == [  # named as registered: check, not on_…
        "plugin:late: check failed: RuntimeError('policy store offline')"
    ]


async def test_a_failing_run_time_extension_point_handler_is_a_plugin_warning() -> None:
    class Late(Plugin):
        name = "late"

        async def on_session_start(self, ctx: PluginContext) -> None:
            self.register_hook("prompt.render", self.render)

        def render(self, event: Any, process: Any) -> str:
            raise KeyError("template")

    assert await task_warnings(make_process(Late())) == [
        "plugin:late: prompt.render (render) failed: KeyError('template')"
    ]


async def test_a_dry_run_names_a_run_time_handler_as_registered_in_what_it_withheld() -> None:
    class Late(Plugin):
        name = "late"

        async def on_session_start(self, ctx: PluginContext) -> None:
            self.register_hook(HookEvent.TASK_COMPLETED, self.audit)

        async def audit(self, ctx: PluginContext) -> None:
            ctx.warn("looked at it")

    process = make_process(Late())
    async with process:
        answer = await process.dry_run("task_completed", {"event_id": "sample-1"})

    [note] = answer["withheld"]
    assert (note["hook_name"], note["action"]) == ("plugin:late.audit", "warn")
    assert [run["hook_name"] for run in answer["trace"]] == ["plugin:late.audit"]


def test_register_hook_on_a_plugin_that_is_not_active_is_an_error() -> None:
    router = Router()

    with pytest.raises(PluginError, match="plugin 'router' is not active"):
        router.register_hook(POINT, router.classify)


def test_register_hook_after_removal_is_an_error() -> None:
    router = Router()
    process = make_process(router)
    process.plugins.remove("router")

    with pytest.raises(PluginError, match="plugin 'router' is not active"):
        router.register_hook(POINT, router.classify)
    assert len(process.hooks) == 0


def test_register_hook_refuses_a_sync_lifecycle_handler_naming_it() -> None:
    router = Router()
    make_process(router)

    def created(ctx: PluginContext) -> None:
        pass

    with pytest.raises(PluginError, match="'router': created for task_created must be an async"):
        router.register_hook(HookEvent.TASK_CREATED, created)


async def test_a_handler_registered_with_the_plugin_as_owner_goes_with_the_plugin() -> None:
    class Quiet(Plugin):
        name = "quiet"

        @implements(POINT)
        def declared(self, text: str) -> str:
            return "declared"

    quiet = Quiet()
    process = make_process(quiet)
    process.hooks.register(POINT, lambda text: "by hand", owner=quiet, priority=-1)
    assert await process.hooks.call(POINT, text="x") == ["declared", "by hand"]

    process.plugins.remove("quiet")

    assert await process.hooks.call(POINT, text="x") == []


async def test_a_removed_plugin_can_be_activated_again() -> None:
    order: list[str] = []
    plugin = ordered(order, "again")
    process = make_process(plugin)
    process.plugins.remove("again")
    process.plugins.add(plugin)
    await run_one_task(process)

    assert order == ["again.created", "again.completed"]


# -- converse: its default deadline and its stamp on artifacts --------------------------------


def test_the_default_converse_deadline_is_30_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TETHER_DEBRIEF_TIMEOUT_S", raising=False)

    assert Plugin.converse_timeout == 30.0
    assert DebriefPlugin().converse_timeout == 30.0


async def lookup_order(order: str) -> str:
    """Look up an order by its number."""
    raise RuntimeError("upstream 502")


def failing_process(*plugins: Any) -> tuple[AgentProcess, ScriptedModel]:
    model = ScriptedModel(reply="I saw a 502", tool_calls=[("lookup_order", {"order": "A-1"})])
    process = make_process(*plugins, model=model, tools=[lookup_order], max_turns=1, max_retries=0)
    return process, model


class Asks(Plugin):
    """Conversing (unless ``ask`` is False) and then emitting what it was told to."""

    name = "asks"

    def __init__(self, payload: Any, *, ask: bool = True, timeout: float | None = None) -> None:
        self.payload = payload
        self.ask = ask
        self.ask_timeout = timeout

    async def on_task_completed(self, ctx: PluginContext) -> None:
        if self.ask:
            with contextlib.suppress(TimeoutError):
                await ctx.converse("what went wrong?", timeout=self.ask_timeout)
        ctx.emit_artifact(self.payload)


def artifact_of(process: AgentProcess, event_id: str) -> Any:
    [item] = process.plugins.artifacts.list(event_id)
    return item["payload"]


async def test_an_artifact_of_a_plugin_that_conversed_records_tools_disabled() -> None:
    process, _ = failing_process(Asks({"summary": "502", "tools_disabled": False}))
    event_id = await run_one_task(process)

    assert artifact_of(process, event_id) == {
        "summary": "502",
        "tools_disabled": True,
        "timed_out": False,
    }


async def test_an_artifact_of_a_plugin_whose_converse_timed_out_records_it() -> None:
    plugin = Asks({"summary": "slow"}, timeout=0.05)
    process, model = failing_process(plugin)

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    event_id = await run_one_task(process)

    assert artifact_of(process, event_id) == {
        "summary": "slow",
        "tools_disabled": True,
        "timed_out": True,
    }


async def test_an_artifact_of_a_plugin_that_did_not_converse_is_stored_as_emitted() -> None:
    process, _ = failing_process(Asks({"summary": "quiet"}, ask=False))
    event_id = await run_one_task(process)

    assert artifact_of(process, event_id) == {"summary": "quiet"}


async def test_an_artifact_that_is_not_an_object_is_never_stamped() -> None:
    process, _ = failing_process(Asks(["a", "list"]))
    event_id = await run_one_task(process)

    assert artifact_of(process, event_id) == ["a", "list"]


# -- options that would never apply --------------------------------------------------------------


def test_hook_options_on_an_extension_point_handler_is_refused_naming_the_method() -> None:
    class Timed(Plugin):
        name = "timed"

        @hook_options(timeout=1.0)
        @implements(POINT)
        def classify(self, text: str) -> str:
            return "billing"

    process = make_process()

    with pytest.raises(PluginError, match="'timed': hook_options on classify would never apply"):
        process.plugins.add(Timed())
    assert len(process.hooks) == 0
    assert process.plugins.names == []


def test_hook_options_on_a_helper_method_is_refused() -> None:
    class Helper(Plugin):
        name = "helper"

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

        @hook_options(priority=5)
        async def summarise(self, ctx: PluginContext) -> None:
            pass

    with pytest.raises(PluginError, match="hook_options on summarise would never apply"):
        make_process(Helper())


async def test_the_stamp_says_timed_out_when_any_of_several_converse_calls_timed_out() -> None:
    replies: list[str] = []

    class Twice(Plugin):
        name = "twice"

        def __init__(self, model: ScriptedModel) -> None:
            self.model = model

        async def on_task_completed(self, ctx: PluginContext) -> None:
            self.model.latency = 30.0
            with contextlib.suppress(TimeoutError):
                await ctx.converse("first question", timeout=0.05)
            self.model.latency = 0.0
            replies.append(await ctx.converse("second question"))
            ctx.emit_artifact({"asked": 2})

    model = ScriptedModel(reply="I saw a 502", tool_calls=[("lookup_order", {"order": "A-1"})])
    process = make_process(
        Twice(model), model=model, tools=[lookup_order], max_turns=1, max_retries=0
    )
    event_id = await run_one_task(process)

    assert replies == ["I saw a 502"]
    assert artifact_of(process, event_id) == {"asked": 2, "tools_disabled": True, "timed_out": True}
