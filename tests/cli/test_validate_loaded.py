"""``tether validate`` shows what a manifest's tools and Claude Code hook files load."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from _cli_support import run_cli


def manifest(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "shop.agent"
    path.write_text(textwrap.dedent(body))
    return path


def test_validate_lists_the_claude_code_hooks_it_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    hooks = {
        "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "g"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify done"}]}],
    }
    settings.write_text(json.dumps({"hooks": hooks}))
    path = manifest(
        tmp_path,
        """\
        name: shop
        model: scripted
        tools: ["_tool_support:lookup_order"]
        claude_code_hooks: [.claude/settings.json]
        """,
    )
    done = run_cli(capsys, "validate", str(path))
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert lines[0] == (f"ok {path} (shop: 0 triggers, 0 hooks, 1 tool, 2 Claude Code hooks)")
    assert lines[1] == (
        "claude_code_hooks[0]: PreToolUse -> pre_tool_use matcher "
        "{'tool_name': ['Edit', 'Write']}: g"
    )
    assert lines[2] == "claude_code_hooks[0]: Stop -> agent_stop: notify done"


def test_validate_warns_of_what_a_claude_code_file_holds_that_tether_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    hooks = {
        "Setup": [{"hooks": [{"type": "command", "command": "init"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify done"}]}],
    }
    settings.write_text(json.dumps({"hooks": hooks}))
    path = manifest(
        tmp_path, "name: shop\nmodel: scripted\nclaude_code_hooks: [.claude/settings.json]\n"
    )
    done = run_cli(capsys, "validate", str(path))
    assert done.returncode == 0, done.stderr
    assert "1 Claude Code hook)" in done.stdout
    warning = " ".join(done.stderr.split())
    assert "warning: claude_code_hooks[0]: " in warning
    assert "hooks.Setup: Claude Code event 'Setup' has no tether counterpart (skipped)" in warning


def test_validate_reports_a_tool_that_cannot_be_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    path = manifest(tmp_path, 'name: shop\ntools: ["_tool_support:missing"]\n')
    done = run_cli(capsys, "validate", str(path))
    assert done.returncode == 1
    assert "tools[0]: tool '_tool_support:missing': module '_tool_support' has no attribute" in (
        " ".join(done.stderr.split())
    )
