"""What ``tether hooks test`` prints never shows a value it handed the hook program from
``--env`` or ``--env-passthrough``, as a process keeps them out of its records and logs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from _cli_support import run_cli

CANARY = "cli-canary-3b8f1a"
PASSED = "cli-passthrough-canary-77d0"

#: Echoes the values it was given in its answer, its log and its stderr.
ECHOES = """
import json, os, sys
sys.stdin.read()
token, passed = os.environ["TOKEN"], os.environ["HOST_TOKEN"]
if len(sys.argv) > 1:
    sys.stderr.write("rejected " + token + " " + passed)
    sys.exit(1)
answer = {"data": {"prompt": "use " + token}, "log": "saw " + passed}
print(json.dumps({**answer, "block": False}))
"""


@pytest.mark.parametrize("fails", [False, True], ids=["answers", "fails"])
def test_hooks_test_never_prints_what_it_handed_the_program(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fails: bool,
) -> None:
    """Regression: the program's answer, log and stderr were printed as they came, so a hook
    echoing its credentials put them on the terminal (and in the CI log it ends up in)."""
    script = tmp_path / "hook.py"
    script.write_text(ECHOES)
    monkeypatch.setenv("HOST_TOKEN", PASSED)
    command = f"{sys.executable} {script}" + (" fail" if fails else "")
    done = run_cli(
        capsys,
        *("hooks", "test", "user_prompt_submit", "--command", command),
        *("--env", f"TOKEN={CANARY}", "--env-passthrough", "HOST_TOKEN"),
    )

    assert done.returncode == (1 if fails else 0), done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "[REDACTED:TOKEN]" in output
    assert "[REDACTED:HOST_TOKEN]" in output
    assert CANARY not in output
    assert PASSED not in output
