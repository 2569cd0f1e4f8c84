"""Security review, by experiment: what a manifest's ``${VAR}`` may do to a hook's command line.

The hook program is a real subprocess that writes the arguments it got to a file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from _process_support import eventually, ticket
from tether import AgentRuntime

#: Appends its arguments (one JSON list a line) to the file ``out``.
RECORDS_ARGV = f"""#!{sys.executable}
import json, sys
sys.stdin.read()
with open({{out!r}}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
"""

#: Shell metacharacters that would run ``touch`` if any shell saw them.
HOSTILE = "a b; touch {p}1 $(touch {p}2) `touch {p}3` | tee {p}4 && 'x"


async def test_a_variable_in_a_string_command_stays_one_argument(
    runtime: AgentRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a manifest's string ``command`` had its ``${VAR}`` replaced first and was
    split into words afterwards, so a value with a space (the manifest's own folder, or a
    variable) became several arguments, and a quote in it broke the hook."""
    folder = tmp_path / "my agents"
    folder.mkdir()
    out = tmp_path / "argv.jsonl"
    script = folder / "hook.py"
    script.write_text(RECORDS_ARGV.format(out=str(out)))
    script.chmod(0o755)
    pwned = tmp_path / "pwned"
    monkeypatch.setenv("HOOK_ARG", HOSTILE.format(p=pwned))
    (folder / "a.agent").write_text(
        'version: "1.0"\n'
        "name: triage\n"
        "model: scripted\n"
        "hooks:\n"
        "  - event: user_prompt_submit\n"
        "    command: \"${TETHER_MANIFEST_DIR}/hook.py --arg=${HOOK_ARG} 'two words'\"\n"
    )
    process = await runtime.add_manifest(str(folder / "a.agent"))
    await process.inject(ticket())
    # The run record exists once the program has ended (the file may exist before it is written).
    await eventually(lambda: process.hook_runs(), what="the hook's run")
    assert [run.outcome for run in process.hook_runs()] == ["passed"]
    assert json.loads(out.read_text()) == [f"--arg={HOSTILE.format(p=pwned)}", "two words"]
    assert not any(p.name.startswith("pwned") for p in os.scandir(tmp_path))
