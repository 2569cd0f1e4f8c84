"""A manifest's claude_code_hooks: a file, or {project: ..., plugins, withhold_env,
inherit_env, strict} for a project's settings scopes merged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _manifest_support import problems, write
from _process_support import eventually
from tether import AgentProcess, load_manifest, manifest_to_process_config


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


def start_hook(command: str) -> dict[str, Any]:
    return {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}


async def test_a_project_entry_merges_scopes_and_plugins_and_withholds_what_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-0001")
    monkeypatch.setenv("PACK_MODE", "paranoid")
    seen = tmp_path / "seen"
    dump = f'echo "$PACK_MODE ${{AWS_SECRET_ACCESS_KEY:-withheld}}" >> {seen}'
    write_json(tmp_path / "repo" / ".claude" / "settings.json", {"hooks": start_hook(dump)})
    write_json(tmp_path / "repo" / ".claude" / "settings.local.json", {"hooks": start_hook(dump)})
    write_json(
        tmp_path / "plugins" / "audit" / "hooks" / "hooks.json",
        {"hooks": start_hook(f"echo plugin >> {seen}")},
    )
    path = tmp_path / "dev.agent"
    path.write_text(
        "name: dev\nmodel: scripted\nclaude_code_hooks:\n"
        "  - project: repo\n    plugins: [plugins/audit]\n"
        "    withhold_env: [AWS_SECRET_ACCESS_KEY]\n"
    )
    config = manifest_to_process_config(load_manifest(path, environ={}))
    assert [h.claude_origin["scope"] for h in config.hooks] == ["local", "plugin"]  # deduped
    async with AgentProcess("dev", config):
        await eventually(lambda: seen.exists() and len(seen.read_text().splitlines()) == 2)
    assert seen.read_text().splitlines() == ["paranoid withheld", "plugin"]


def test_an_entry_naming_both_a_file_and_a_project_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "name: dev\nclaude_code_hooks:\n  - file: a.json\n    project: .\n",
    )
    assert any(
        "claude_code_hooks[0]" in p and "exactly one of 'file' or 'project'" in p for p in found
    ), found


def test_a_strict_entry_refuses_what_cannot_be_mapped(tmp_path: Path) -> None:
    write_json(tmp_path / ".claude" / "settings.json", {"hooks": {"Setup": []}})
    body = "name: dev\nclaude_code_hooks:\n  - file: .claude/settings.json\n    strict: true\n"
    found = problems(tmp_path, body)
    assert any("'Setup' has no tether counterpart" in p for p in found), found
    relaxed = write(tmp_path, body.replace("    strict: true\n", ""))
    assert load_manifest(relaxed, environ={}).claude_code_hooks[0].strict is False
