"""claude_code_settings(): a project's Claude Code settings scopes merged as Claude Code does
(managed > local > project > user, then plugins), identical handlers once, disableAllHooks and
allowManagedHooksOnly honoured; plugin hooks.json with ${CLAUDE_PLUGIN_ROOT} and
${CLAUDE_PLUGIN_DATA}; ``~`` expanded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _process_support import completions, run_task
from tether import AgentProcess, ProcessConfig, claude_code_settings
from tether.models import ScriptedModel


def write_json(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def hooks_of(command: str, event: str = "PreToolUse") -> dict[str, Any]:
    return {event: [{"hooks": [{"type": "command", "command": command}]}]}


class Scopes:
    """A project, a user home and a managed settings file under one folder."""

    def __init__(self, root: Path) -> None:
        self.project = root / "project"
        self.home = root / "home"
        self.managed = root / "etc" / "managed-settings.json"
        self.project.mkdir(parents=True)

    def write(self, scope: str, **document: Any) -> None:
        path = {
            "managed": self.managed,
            "local": self.project / ".claude" / "settings.local.json",
            "project": self.project / ".claude" / "settings.json",
            "user": self.home / ".claude" / "settings.json",
        }[scope]
        write_json(path, document)

    def load(self, **options: Any) -> Any:
        return claude_code_settings(
            self.project,
            user_settings=self.home / ".claude" / "settings.json",
            managed_settings=self.managed,
            **options,
        )


@pytest.fixture
def scopes(tmp_path: Path) -> Scopes:
    return Scopes(tmp_path)


def commands(hooks: Any) -> list[tuple[str, str]]:
    return [(h.claude_origin["scope"], h.command) for h in hooks]


def test_every_scope_loads_in_precedence_order(scopes: Scopes) -> None:
    for scope in ("user", "project", "local", "managed"):
        scopes.write(scope, hooks=hooks_of(f"echo {scope}"))
    assert commands(scopes.load()) == [
        ("managed", "echo managed"),
        ("local", "echo local"),
        ("project", "echo project"),
        ("user", "echo user"),
    ]


def test_an_identical_handler_in_two_scopes_is_kept_once_from_the_higher(scopes: Scopes) -> None:
    scopes.write("project", hooks=hooks_of("./guard.sh"))
    scopes.write("user", hooks={**hooks_of("./guard.sh"), **hooks_of("notify", "Stop")})
    assert commands(scopes.load()) == [("project", "./guard.sh"), ("user", "notify")]


async def test_a_deduplicated_handler_is_spawned_once_per_call(scopes: Scopes) -> None:
    spawns = scopes.project / "spawns"
    counter = f"cat >/dev/null; echo x >> {spawns}"
    scopes.write("project", hooks=hooks_of(counter))
    scopes.write("local", hooks=hooks_of(counter))

    async def Bash(command: str) -> str:  # Claude Code's tool name
        """Run a command."""
        return "ok"

    model = ScriptedModel(reply="Done.", tool_calls=[("Bash", {"command": "ls"})])
    process = AgentProcess(
        "dev", ProcessConfig(model=model, tools=[Bash], hooks=list(scopes.load()))
    )
    rec = completions(process)
    async with process:
        await run_task(process, rec)
    assert spawns.read_text().splitlines() == ["x"]


@pytest.mark.parametrize(
    ("disabled", "kept"),
    [
        ({"managed": True}, []),
        ({"local": True}, ["managed"]),
        ({"user": True}, ["managed"]),
        ({"project": False, "user": True}, ["managed", "local", "project", "user"]),
        ({"local": True, "managed": False}, ["managed", "local", "project", "user"]),
    ],
)
def test_disable_all_hooks_is_decided_by_the_highest_scope_that_sets_it(
    scopes: Scopes, disabled: dict[str, bool], kept: list[str]
) -> None:
    for scope in ("user", "project", "local", "managed"):
        document: dict[str, Any] = {"hooks": hooks_of(f"echo {scope}")}
        if scope in disabled:
            document["disableAllHooks"] = disabled[scope]
        scopes.write(scope, **document)
    assert [scope for scope, _ in commands(scopes.load())] == kept


def test_allow_managed_hooks_only_keeps_the_managed_ones(scopes: Scopes) -> None:
    scopes.write("managed", allowManagedHooksOnly=True, hooks=hooks_of("audit"))
    scopes.write("project", hooks=hooks_of("mine"))
    assert commands(scopes.load()) == [("managed", "audit")]


def test_missing_scopes_have_no_hooks(scopes: Scopes) -> None:
    scopes.write("project", hooks=hooks_of("guard"))
    assert commands(scopes.load()) == [("project", "guard")]


def test_the_user_scope_is_found_under_a_home_given_with_a_tilde(
    scopes: Scopes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(scopes.home))
    scopes.write("user", hooks=hooks_of("mine"))
    loaded = claude_code_settings(scopes.project, managed_settings=None)
    assert commands(loaded) == [("user", "mine")]


async def test_a_plugins_hooks_run_with_its_root_and_data_folders(
    scopes: Scopes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(scopes.home))
    plugin = scopes.project.parent / "plugins" / "formatter"
    script = plugin / "scripts" / "count.sh"
    script.parent.mkdir(parents=True)
    script.write_text(
        '#!/bin/sh\ncat >/dev/null\necho "$CLAUDE_PLUGIN_ROOT" >> "${CLAUDE_PLUGIN_DATA}/runs"\n'
    )
    script.chmod(0o755)
    write_json(
        plugin / "hooks" / "hooks.json",
        {
            "description": "counts tool calls",
            "hooks": hooks_of('"${CLAUDE_PLUGIN_ROOT}/scripts/count.sh"', "PostToolUse"),
        },
    )
    loaded = claude_code_settings(scopes.project, managed_settings=None, plugins=[plugin])
    assert commands(loaded) == [("plugin", '"${CLAUDE_PLUGIN_ROOT}/scripts/count.sh"')]

    async def Bash(command: str) -> str:  # Claude Code's tool name
        """Run a command."""
        return "ok"

    model = ScriptedModel(reply="Done.", tool_calls=[("Bash", {"command": "ls"})])
    process = AgentProcess("dev", ProcessConfig(model=model, tools=[Bash], hooks=list(loaded)))
    rec = completions(process)
    async with process:
        await run_task(process, rec)
    runs = scopes.home / ".claude" / "plugins" / "data" / "formatter" / "runs"
    assert runs.read_text().splitlines() == [str(plugin)]
