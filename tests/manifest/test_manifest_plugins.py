"""Manifests and plugins: ``plugins:`` names are activated, manifest hooks carry matchers and
modes and are recorded with source "manifest", and a plugin whose lifecycle method is
misspelled is refused at registration with the closest name."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from _process_support import eventually, ticket
from conftest import Install
from tether import AgentProcess, AgentRuntime, ProcessConfig
from tether.hooks import (
    HookManager,
    Plugin,
    PluginContext,
    PluginError,
    implements,
    register_plugin,
)
from tether.manifest import (
    ManifestError,
    load_manifest,
    manifest_json_schema,
    manifest_to_process_config,
    parse_manifest,
    shipped_json_schema,
    spec_to_process_config,
)


def write(tmp_path: Path, text: str, name: str = "triage.agent") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
async def runtime() -> AsyncIterator[AgentRuntime]:
    runtime = AgentRuntime(hooks=HookManager())
    yield runtime
    await runtime.stop_all()


ACME = """\
from tether import Plugin

SEEN = []

class AcmePlugin(Plugin):
    name = "acme"

    async def on_task_created(self, ctx):
        SEEN.append(ctx.data["event_id"])
"""

MISSPELLED = """\
from tether import Plugin

class AcmePlugin(Plugin):
    name = "acme"

    async def on_task_complete(self, ctx):
        pass
"""


def problems(error: ManifestError) -> list[tuple[str, int | None, str]]:
    return [(e.path, e.line, e.message) for e in error.errors]


# -- plugins: --------------------------------------------------------------------------------------


def test_plugin_names_reach_the_process_config(tmp_path: Path) -> None:
    manifest = load_manifest(
        write(tmp_path, "name: triage\nmodel: scripted\nplugins: [debrief]\n"), environ={}
    )
    assert manifest_to_process_config(manifest).plugins == ["debrief"]


async def test_a_manifest_plugin_is_active_on_the_process(
    tmp_path: Path, runtime: AgentRuntime
) -> None:
    path = write(tmp_path, "name: triage\nmodel: scripted\nplugins: [debrief]\n")
    process = await runtime.add_manifest(path)
    assert process.plugins.names == ["debrief"]
    [info] = [i for i in process.hooks.describe() if i.source == "plugin"]
    assert (info.event, info.owner) == ("task_completed", "debrief")


async def test_a_third_party_plugin_named_in_a_manifest_is_activated_and_runs(
    tmp_path: Path, runtime: AgentRuntime, install_plugin: Install
) -> None:
    module = install_plugin(ACME)
    process = await runtime.add_manifest(
        write(tmp_path, "name: triage\nmodel: scripted\nplugins: [acme]\n")
    )
    await runtime.start_all()
    event_id = await process.inject(ticket())
    seen = sys.modules[module].SEEN
    assert seen == [event_id]


def test_an_unknown_plugin_name_is_a_manifest_error_listing_the_available_ones(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "name: triage\nmodel: scripted\nplugins:\n  - debrief\n  - debreif\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, environ={})
    assert problems(caught.value) == [
        ("plugins[1]", 5, "unknown plugin 'debreif'; available: debrief")
    ]


def test_a_plugin_named_twice_is_a_manifest_error(tmp_path: Path) -> None:
    path = write(tmp_path, "name: triage\nplugins: [debrief, debrief]\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, environ={})
    assert problems(caught.value) == [
        ("plugins[1]", 2, "plugin 'debrief' is already named by plugins[0]")
    ]


def test_an_installed_plugin_is_a_known_name_but_stays_unimported(
    tmp_path: Path, install_plugin: Install
) -> None:
    module = install_plugin(ACME)
    load_manifest(write(tmp_path, "name: triage\nplugins: [acme]\n"), environ={})
    assert module not in sys.modules  # validating a name imports nothing


# -- hooks: matcher, mode, source ------------------------------------------------------------------


async def test_manifest_hooks_take_a_matcher_and_a_mode_and_are_recorded_as_manifest(
    tmp_path: Path, runtime: AgentRuntime
) -> None:
    marker = tmp_path / "spawned"
    path = write(
        tmp_path,
        f"""\
        name: triage
        model: scripted
        hooks:
          - event: task_created
            command: ["{sys.executable}", "-c", "open({str(marker)!r}, 'w').close()"]
            name: only-cron
            matcher: {{trigger_type: cron}}
          - event: task_completed
            command: ["true"]
            name: notify
            mode: async
        """,
    )
    process = await runtime.add_manifest(path)
    catalog = {i.name: i for i in process.hooks.describe()}
    assert (catalog["only-cron"].source, catalog["only-cron"].matcher) == (
        "manifest",
        {"trigger_type": ["cron"]},
    )
    assert (catalog["notify"].source, catalog["notify"].mode) == ("manifest", "async")

    await runtime.start_all()
    await process.inject(ticket())  # a webhook ticket: the cron-only hook is never spawned
    await eventually(lambda: process.hook_runs(hook="notify"), what="the async hook")
    [skipped] = process.hook_runs(hook="only-cron")
    [notified] = process.hook_runs(hook="notify")
    assert (skipped.outcome, skipped.source) == ("skipped", "manifest")
    assert (notified.outcome, notified.source, notified.mode) == ("passed", "manifest", "async")
    assert not marker.exists()


def test_hooks_deployed_from_a_spec_over_the_api_stay_config(tmp_path: Path) -> None:
    manifest = parse_manifest(
        "name: triage\nhooks:\n  - {event: task_created, command: ['true']}\n", environ={}
    )
    process = AgentProcess("triage", spec_to_process_config(manifest))
    assert [i.source for i in process.hooks.describe()] == ["config"]


def test_the_source_mark_is_never_serialized(tmp_path: Path) -> None:
    manifest = parse_manifest(
        "name: triage\nhooks:\n  - {event: task_created, command: ['true']}\n", environ={}
    )
    [hook] = manifest_to_process_config(manifest).hooks
    assert "_source" not in hook.model_dump()
    assert "source" not in hook.model_dump_json()


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (
            "{event: task_created, command: ['true'], matcher: {tool_name: x}}",
            "matcher field 'tool_name' is not available for task_created; "
            "allowed: trigger_type, trigger_id",
        ),
        (
            "{event: task_created, command: ['true'], mode: async, fail_closed: true}",
            "mode 'async' cannot be fail_closed: a background hook cannot block",
        ),
        (
            "{event: task_created, command: ['true'], mode: later}",
            "Input should be 'sync' or 'async'",
        ),
    ],
)
def test_a_bad_matcher_or_mode_is_a_manifest_error_at_the_hook(
    tmp_path: Path, hook: str, message: str
) -> None:
    path = write(tmp_path, f"name: triage\nhooks:\n  - {hook}\n")
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, environ={})
    [(where, line, text)] = problems(caught.value)
    assert where.startswith("hooks[0]")
    assert line == 3
    assert message in text


def test_the_shipped_schema_describes_matcher_mode_and_plugins() -> None:
    assert shipped_json_schema() == manifest_json_schema()
    hook = shipped_json_schema()["$defs"]["ManifestHook"]["properties"]
    assert {"matcher", "mode", "name"} <= set(hook)
    assert hook["mode"]["enum"] == ["sync", "async"]
    plugins = shipped_json_schema()["properties"]["plugins"]
    assert plugins["items"] == {"type": "string"}
    assert "tether.plugins" in plugins["description"]


# -- a misspelled plugin method --------------------------------------------------------------------


class Misspelled(Plugin):
    name = "audit"

    async def on_task_complete(self, ctx: PluginContext) -> None:
        pass


def test_a_misspelled_lifecycle_method_is_refused_naming_the_closest_event() -> None:
    manager = HookManager()
    with pytest.raises(PluginError) as caught:
        register_plugin(manager, Misspelled())
    assert str(caught.value) == (
        "plugin 'audit': on_task_complete is not a lifecycle method and would never run; "
        "did you mean on_task_completed?"
    )
    assert len(manager) == 0


def test_a_method_far_from_any_event_lists_the_lifecycle_methods() -> None:
    class Odd(Plugin):
        name = "odd"

        async def on_lunch(self, ctx: PluginContext) -> None:
            pass

    with pytest.raises(PluginError, match=r"on_lunch is not a lifecycle method.*on_session_start"):
        AgentProcess("triage", ProcessConfig(model="scripted", plugins=[Odd()]))


def test_on_attributes_that_are_data_or_extension_points_are_allowed() -> None:
    class Fine(Plugin):
        name = "fine"
        on_call_limit = 3  # data, not a method

        @implements("ticket.classify")
        def on_classify(self, text: str) -> str:
            return "billing"

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

    manager = HookManager()
    assert len(register_plugin(manager, Fine())) == 2


async def test_a_misspelled_entry_point_plugin_named_in_a_manifest_is_refused(
    tmp_path: Path, runtime: AgentRuntime, install_plugin: Install
) -> None:
    install_plugin(MISSPELLED)
    path = write(tmp_path, "name: triage\nmodel: scripted\nplugins: [acme]\n")
    with pytest.raises(PluginError, match="did you mean on_task_completed"):
        await runtime.add_manifest(path)
    assert "triage" not in runtime


# -- the docs ------------------------------------------------------------------------------------


def test_the_plugin_example_in_the_docs_runs() -> None:
    import re
    import subprocess

    doc = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
    section = doc.read_text(encoding="utf-8").split("# Plugins and extension points", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None
    done = subprocess.run(
        [sys.executable, "-c", found.group(1)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        r"[0-9a-f]{32}\.audit\.json \{'trigger': 'helpdesk', 'outcome': 'success'\}\n",
        done.stdout,
    )
