"""Hook plugins: introspection, validation, activation (instances, names, entry points),
owner-bound removal, reload, and failure containment, driven through real processes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

from _process_support import completions, run_one_task, run_task, run_tasks
from _process_support import plugin_process as make_process
from conftest import Install
from tether.hooks import (
    HookContext,
    HookManager,
    Plugin,
    PluginContext,
    PluginError,
    available_plugins,
    hook_options,
    implements,
    register_plugin,
    resolve_plugin,
)
from tether.models import ScriptedModel
from tether.plugins.debrief import DebriefPlugin


class Audit(Plugin):
    """Opens a record at task_created and closes it at task_completed (shared state)."""

    name = "audit"

    def __init__(self) -> None:
        self.open: dict[str, str] = {}
        self.closed: list[tuple[str, str]] = []

    async def on_task_created(self, ctx: PluginContext) -> None:
        self.open[ctx.data["event_id"]] = "open"

    async def on_task_completed(self, ctx: PluginContext) -> None:
        self.open.pop(ctx.data["event_id"])
        self.closed.append((ctx.data["event_id"], ctx.data["outcome"]))

    def helper(self) -> str:  # not a lifecycle method: never registered
        return "help"


# -- introspection and validation ---------------------------------------------------------


def test_only_the_lifecycle_methods_a_plugin_defines_are_registered() -> None:
    process = make_process(Audit())

    infos = process.hooks.describe()

    assert sorted((i.event, i.name) for i in infos) == [
        ("task_completed", "plugin:audit.on_task_completed"),
        ("task_created", "plugin:audit.on_task_created"),
    ]
    assert {(i.owner, i.source) for i in infos} == {("audit", "plugin")}


async def test_one_plugin_instance_keeps_state_across_events() -> None:
    audit = Audit()
    process = make_process(audit)
    event_id = await run_one_task(process)

    assert audit.open == {}
    assert audit.closed == [(event_id, "success")]


@pytest.mark.parametrize("name", ["", "Audit", "my plugin", "acme.audit", "audit!", "ä"])
def test_a_plugin_name_that_is_not_a_slug_is_rejected_at_registration(name: str) -> None:
    class Named(Audit):
        pass

    Named.name = name
    manager = HookManager()

    with pytest.raises(PluginError, match=r"name must be a slug matching \[a-z0-9_-\]\+"):
        register_plugin(manager, Named())
    assert len(manager) == 0


def test_a_plugin_without_a_name_cannot_be_added_to_a_process() -> None:
    class Nameless(Plugin):
        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

    with pytest.raises(PluginError, match="Nameless: name must be a slug"):
        make_process(Nameless())


def test_a_sync_lifecycle_method_is_rejected_with_the_method_named() -> None:
    class Sync(Plugin):
        name = "sync"

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

        def on_task_completed(self, ctx: PluginContext) -> None:
            pass

    process = make_process()

    with pytest.raises(PluginError, match="'sync': on_task_completed must be an async method"):
        process.plugins.add(Sync())
    assert len(process.hooks) == 0
    assert process.plugins.names == []


def test_plugin_wide_priority_timeout_and_fail_closed_apply_to_every_method() -> None:
    class Strict(Plugin):
        name = "strict"
        priority = 7
        timeout = 2.5
        fail_closed = True

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            pass

    infos = make_process(Strict()).hooks.describe()

    assert {(i.priority, i.timeout, i.fail_closed) for i in infos} == {(7, 2.5, True)}


def test_hook_options_override_the_plugin_settings_for_one_method() -> None:
    class Mixed(Plugin):
        name = "mixed"
        priority = 7
        timeout = 2.5

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

        @hook_options(priority=-3, timeout=0.5, fail_closed=True)
        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            pass

    infos = {i.event: i for i in make_process(Mixed()).hooks.describe()}

    created, prompt = infos["task_created"], infos["user_prompt_submit"]
    assert (created.priority, created.timeout, created.fail_closed) == (7, 2.5, False)
    assert (prompt.priority, prompt.timeout, prompt.fail_closed) == (-3, 0.5, True)


def test_a_plugin_without_a_timeout_gets_the_process_hook_timeout() -> None:
    (info,) = make_process(Audit(), hook_timeout=12.0).hooks.describe("task_created")

    assert info.timeout == 12.0


async def test_plugins_run_in_priority_order_and_hook_options_can_reorder_one_method() -> None:
    order: list[str] = []

    class First(Plugin):
        name = "first"
        priority = 10

        async def on_task_created(self, ctx: PluginContext) -> None:
            order.append("first.created")

        @hook_options(priority=-10)
        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            order.append("first.prompt")

    class Second(Plugin):
        name = "second"

        async def on_task_created(self, ctx: PluginContext) -> None:
            order.append("second.created")

        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            order.append("second.prompt")

    process = make_process(Second(), First())
    await run_one_task(process)

    assert order == ["first.created", "second.created", "second.prompt", "first.prompt"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"priority": "high"}, "priority must be an int"),
        ({"priority": True}, "priority must be an int"),
        ({"timeout": 0}, "timeout must be > 0"),
        ({"timeout": -1.0}, "timeout must be > 0"),
        ({"timeout": "5s"}, "timeout must be a number"),
        ({"fail_closed": "yes"}, "fail_closed must be a bool"),
    ],
)
def test_bad_hook_options_fail_where_they_are_declared(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        hook_options(**options)


def test_a_bad_plugin_setting_names_the_plugin_and_registers_nothing() -> None:
    """Regression: the methods registered before the bad one stayed live, owned by a plugin
    that process.plugins did not know, so they could never be removed."""

    class Broken(Plugin):
        name = "broken"
        timeout = -1.0

        @hook_options(timeout=1.0)  # registered first (session_start comes first), valid
        async def on_session_start(self, ctx: PluginContext) -> None:
            pass

        async def on_task_completed(self, ctx: PluginContext) -> None:  # inherits -1.0
            pass

    process = make_process()

    with pytest.raises(PluginError, match=r"plugin 'broken': on_task_completed: timeout must be"):
        process.plugins.add(Broken())
    assert len(process.hooks) == 0
    assert "broken" not in process.plugins


@pytest.mark.parametrize(
    ("name", "priority", "message"),
    [
        ("classify", 0, "extension point names are dotted"),
        ("ticket classify.x", 0, "extension point names are dotted"),
        (".ticket", 0, "extension point names are dotted"),
        ("ticket.classify", "high", "priority must be an int"),
    ],
)
def test_bad_implements_arguments_fail_where_they_are_declared(
    name: str, priority: Any, message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        implements(name, priority=priority)


# -- activation -----------------------------------------------------------------------------


async def test_plugins_in_the_process_config_are_active_from_the_first_task() -> None:
    audit = Audit()
    process = make_process(audit)
    rec = completions(process)

    assert process.plugins.names == ["audit"]
    assert process.plugins.get("audit") is audit
    async with process:
        event_id = await run_task(process, rec)
    assert audit.closed == [(event_id, "success")]


async def test_a_plugin_class_in_the_config_is_instantiated() -> None:
    process = make_process(Audit)

    plugin = process.plugins.get("audit")

    assert isinstance(plugin, Audit)


async def test_plugins_add_activates_a_plugin_on_a_running_process() -> None:
    process = make_process()
    rec = completions(process)
    audit = Audit()
    async with process:
        await run_task(process, rec)
        assert process.plugins.add(audit) is audit
        event_id = await run_task(process, rec)

    assert audit.closed == [(event_id, "success")]


def test_a_plugin_name_can_be_active_only_once_per_process() -> None:
    process = make_process(Audit())

    with pytest.raises(PluginError, match="'audit' is already active on 'triage'"):
        process.plugins.add(Audit())
    assert len(process.hooks) == 2


def test_a_built_in_plugin_is_activated_by_its_name() -> None:
    process = make_process("debrief")

    assert isinstance(process.plugins.get("debrief"), DebriefPlugin)
    assert [i.name for i in process.hooks.describe()] == ["plugin:debrief.on_task_completed"]


def test_an_unknown_plugin_name_is_an_error_listing_the_available_names() -> None:
    with pytest.raises(PluginError, match=r"unknown plugin 'audti'; available: .*debrief"):
        make_process("audti")
    assert "debrief" in available_plugins()


# -- third-party plugins through a real entry point ------------------------------------------

PLUGIN_MODULE = """
from tether import Plugin

SEEN = []


class AcmePlugin(Plugin):
    name = "{name}"

    async def on_task_created(self, ctx):
        SEEN.append(ctx.data["event_id"])
"""


def acme_module(name: str = "acme") -> str:
    """The source of a plugin module whose AcmePlugin is named ``name``."""
    return PLUGIN_MODULE.format(name=name)


async def test_installing_a_plugin_package_activates_nothing(install_plugin: Install) -> None:
    module = install_plugin(acme_module())
    process = make_process()
    rec = completions(process)

    assert "acme" in available_plugins()
    async with process:
        await run_task(process, rec)

    assert [i.name for i in process.hooks.describe() if i.source == "plugin"] == []
    assert module not in sys.modules  # not even imported


async def test_a_third_party_plugin_is_activated_by_its_entry_point_name(
    install_plugin: Install,
) -> None:
    module = install_plugin(acme_module())
    process = make_process("acme")
    event_id = await run_one_task(process)

    assert process.plugins.names == ["acme"]
    seen = sys.modules[module].SEEN
    assert seen == [event_id]


def test_the_unknown_name_error_lists_entry_point_plugins_too(install_plugin: Install) -> None:
    install_plugin(acme_module())

    with pytest.raises(PluginError, match=r"available: acme, debrief"):
        resolve_plugin("acne")


def test_an_entry_point_must_carry_the_name_of_the_plugin_it_loads(install_plugin: Install) -> None:
    install_plugin(acme_module("acme-audit"))

    with pytest.raises(PluginError, match="entry point 'acme' loads plugin 'acme-audit'"):
        make_process("acme")


def test_an_entry_point_that_cannot_be_imported_is_a_plugin_error_naming_it(
    install_plugin: Install,
) -> None:
    install_plugin("raise ImportError('needs acme-sdk')\n")

    with pytest.raises(PluginError, match=r"plugin 'acme' could not be loaded.*needs acme-sdk"):
        resolve_plugin("acme")


# -- removal and reload -----------------------------------------------------------------------


async def test_removing_a_plugin_removes_all_of_its_handlers_at_once() -> None:
    class Wide(Audit):
        name = "wide"

        @implements("ticket.classify")
        def classify(self, text: str) -> str:
            return "billing"

    wide = Wide()
    process = make_process(wide)
    rec = completions(process)
    assert len(process.hooks) == 4

    assert process.plugins.remove("wide") is True

    assert [(i.event, i.source) for i in process.hooks.describe()] == [("task_completed", "code")]
    assert await process.hooks.call("ticket.classify", text="x") == []
    async with process:
        await run_task(process, rec)
    assert wide.closed == []
    assert process.plugins.names == []


def test_removing_a_plugin_that_is_not_active_returns_false() -> None:
    assert make_process().plugins.remove("audit") is False


async def test_reload_swaps_in_a_fresh_instance() -> None:
    process = make_process(Audit())
    old = process.plugins.get("audit")

    fresh = process.plugins.reload("audit")

    assert isinstance(fresh, Audit)
    assert fresh is not old
    assert process.plugins.get("audit") is fresh
    assert len(process.hooks) == 2


async def test_reload_never_has_the_old_and_new_instance_registered_together() -> None:
    instances: list[Probe] = []
    seen: list[list[int]] = []
    process = make_process()

    class Probe(Plugin):
        name = "probe"

        def __init__(self) -> None:
            instances.append(self)

        @implements("probe.who")
        def who(self) -> int:
            return id(self)

        async def on_task_created(self, ctx: PluginContext) -> None:
            # Which instances answer right now, seen from inside the new instance's handler.
            seen.append(await process.hooks.call("probe.who"))

    process.plugins.add(Probe())
    process.plugins.reload("probe")
    await run_one_task(process)

    _, new = instances
    assert seen == [[id(new)]]
    assert sorted(i.event for i in process.hooks.describe() if i.owner == "probe") == [
        "probe.who",
        "task_created",
    ]


def test_reload_of_a_plugin_that_is_not_active_is_an_error() -> None:
    with pytest.raises(PluginError, match="plugin 'audit' is not active on 'triage'"):
        make_process().plugins.reload("audit")


def takes_a_bad_setting(plugin: Plugin) -> None:
    plugin.timeout = -1.0


def refuses_to_be_made(plugin: Plugin) -> None:
    raise RuntimeError("only one, please")


@pytest.mark.parametrize(
    ("spoil", "error", "match"),
    [
        pytest.param(
            takes_a_bad_setting,
            PluginError,
            "timeout must be > 0",
            id="the_fresh_one_cannot_register",
        ),
        pytest.param(refuses_to_be_made, RuntimeError, "only one", id="a_fresh_one_cannot_be_made"),
    ],
)
def test_reload_keeps_the_old_instance_when(
    spoil: Callable[[Plugin], None], error: type[Exception], match: str
) -> None:
    class Moody(Audit):
        name = "moody"
        made = 0

        def __init__(self) -> None:
            type(self).made += 1
            if type(self).made > 1:
                spoil(self)  # only the fresh instance
            super().__init__()

    old = Moody()
    process = make_process(old)

    with pytest.raises(error, match=match):
        process.plugins.reload("moody")
    assert process.plugins.get("moody") is old
    assert len(process.hooks) == 2


class Configured(Audit):
    name = "configured"

    def __init__(self, channel: str) -> None:
        self.channel = channel
        super().__init__()


def test_reload_takes_a_fresh_instance_for_a_plugin_built_with_arguments() -> None:
    """Regression: reload() called the plugin's class with no arguments, so a plugin built
    with some could not be reloaded (or lost its settings)."""
    process = make_process(Configured("#ops"))

    with pytest.raises(PluginError, match=r"Configured\(\) cannot be built without arguments"):
        process.plugins.reload("configured")
    assert process.plugins.get("configured").channel == "#ops"  # type: ignore[union-attr]

    fresh = process.plugins.reload("configured", Configured("#alerts"))
    assert process.plugins.get("configured") is fresh
    assert len(process.hooks) == 2


def test_reload_refuses_a_fresh_instance_of_another_plugin() -> None:
    process = make_process(Audit())
    with pytest.raises(PluginError, match="the fresh instance is named 'configured'"):
        process.plugins.reload("audit", Configured("#ops"))
    assert isinstance(process.plugins.get("audit"), Audit)


# -- failure containment ----------------------------------------------------------------------


class Boom(Plugin):
    name = "boom"

    async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
        raise RuntimeError("audit database unreachable")


async def test_a_failing_plugin_never_fails_the_task() -> None:
    model = ScriptedModel()
    process = make_process(Boom(), model=model)
    rec = await run_tasks(process)

    assert rec.outcomes() == ["success"]
    assert len(model.requests) == 1


async def test_a_plugin_failure_is_recorded_as_a_warning_with_the_task() -> None:
    process = make_process(Boom())
    event_id = await run_one_task(process)

    assert process.plugins.warnings == {
        event_id: [
            "plugin:boom: on_user_prompt_submit failed: RuntimeError('audit database unreachable')"
        ]
    }


async def test_a_plugin_failure_shows_in_the_hook_run_history() -> None:
    process = make_process(Boom())
    await run_one_task(process)

    (run,) = process.hook_runs(outcome="failed")
    assert (run.hook_name, run.event) == ("plugin:boom.on_user_prompt_submit", "user_prompt_submit")
    assert run.error is not None
    assert "audit database unreachable" in run.error


async def test_a_plugin_that_overruns_its_timeout_is_contained_and_recorded() -> None:
    class Slow(Plugin):
        name = "slow"

        @hook_options(timeout=0.05)
        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            await asyncio.sleep(30)

    process = make_process(Slow())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings[event_id] == [
        "plugin:slow: on_user_prompt_submit timed out or was cancelled"
    ]
    assert [r.hook_name for r in process.hook_runs(outcome="timed_out")] == [
        "plugin:slow.on_user_prompt_submit"
    ]


async def test_a_fail_closed_plugin_failing_on_a_blockable_event_blocks_it() -> None:
    class Gate(Boom):
        name = "gate"
        fail_closed = True

    model = ScriptedModel()
    process = make_process(Gate(), model=model)
    rec = await run_tasks(process)

    assert rec.outcomes() == ["blocked"]
    assert model.requests == []
    assert "audit database unreachable" in (process.dead_letters[0]["error"] or "")


async def test_a_fail_closed_plugin_failing_on_task_completed_changes_nothing() -> None:
    class Late(Plugin):
        name = "late"
        fail_closed = True

        async def on_task_completed(self, ctx: PluginContext) -> None:
            raise RuntimeError("too late to block")

    process = make_process(Late())
    rec = await run_tasks(process)

    assert rec.outcomes() == ["success"]
    assert process.dead_letters == []


async def test_a_plugin_may_change_the_data_of_the_event_it_observes() -> None:
    class Redact(Plugin):
        name = "redact"

        async def on_user_prompt_submit(self, ctx: PluginContext) -> None:
            ctx.data["prompt"] = ctx.data["prompt"].replace("Login", "[component]")

    model = ScriptedModel()
    process = make_process(Redact(), model=model)
    await run_one_task(process)

    assert model.prompts[0].startswith("ticket: [component] is down")


async def test_a_plain_hook_context_plugin_method_receives_a_plugin_context() -> None:
    kinds: list[type[HookContext]] = []

    class Look(Plugin):
        name = "look"

        async def on_task_created(self, ctx: PluginContext) -> None:
            kinds.append(type(ctx))

    process = make_process(Look())
    await run_one_task(process)

    assert kinds == [PluginContext]
