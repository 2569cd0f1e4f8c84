"""A Claude Code session's files (CLAUDE_ENV_FILE, the transcript) last as long as the process
runs: its SessionEnd hooks still find them, a restart keeps them, its stop removes them, and a
start after a stop is a fresh session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _process_support import completions, run_task
from tether import AgentProcess, ProcessConfig, claude_code_hooks
from tether.models import ScriptedModel


def settings(project: Path, hooks: dict[str, Any]) -> Path:
    file = project / ".claude" / "settings.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"hooks": hooks}))
    return file


def group(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command}]}


def desk(tmp_path: Path) -> AgentProcess:
    """A process whose SessionStart hook notes its session folder and what an earlier hook of
    the session exported, then exports one more start; its SessionEnd hook keeps a copy of
    the transcript, as the backup packs do."""
    notes, kept = tmp_path / "notes", tmp_path / "kept.jsonl"
    start = (
        f'echo "$(dirname "$CLAUDE_ENV_FILE") starts=$STARTS" >> {notes}; '
        'echo "export STARTS=${STARTS}x" >> "$CLAUDE_ENV_FILE"'
    )
    end = f"jq -r .transcript_path | xargs -I{{}} cp {{}} {kept}"
    file = settings(tmp_path, {"SessionStart": [group(start)], "SessionEnd": [group(end)]})
    config = ProcessConfig(model=ScriptedModel(reply="Done."), hooks=claude_code_hooks(file))
    return AgentProcess("desk", config)


def started(tmp_path: Path) -> list[tuple[Path, str]]:
    """Each start's session folder and what the session had exported before it."""
    lines = (tmp_path / "notes").read_text().splitlines()
    return [(Path(folder), starts) for folder, starts in (line.split(" ") for line in lines)]


async def test_a_stop_removes_the_session_s_files_after_its_session_end_hooks(
    tmp_path: Path,
) -> None:
    process = desk(tmp_path)
    rec = completions(process)
    async with process:
        await run_task(process, rec, "Reset my password")
        [(folder, _)] = started(tmp_path)
        assert sorted(p.name for p in folder.iterdir()) == ["env.sh", "transcript.jsonl"]
    kept = (tmp_path / "kept.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in kept] == ["user", "assistant"]
    assert not folder.exists()
    assert not folder.parent.exists() or "desk" not in {p.name for p in folder.parent.iterdir()}


async def test_a_restart_keeps_the_session_and_a_start_after_a_stop_is_a_fresh_one(
    tmp_path: Path,
) -> None:
    process = desk(tmp_path)
    async with process:
        await process.restart()  # resumed: the session's exports are there
    await process.start()  # a stop came between: nothing of the earlier session
    starts = started(tmp_path)
    assert [exported for _, exported in starts] == ["starts=", "starts=x", "starts="]
    first, resumed, fresh = (folder for folder, _ in starts)
    assert first == resumed == fresh
    assert (fresh / "transcript.jsonl").exists()  # there from the new session's start
    await process.stop()
    assert not fresh.exists()
