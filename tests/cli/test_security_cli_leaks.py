"""What the command line prints never shows a value a hook program was handed in its
environment (``--env``, ``--env-passthrough``, a manifest hook's ``env``), as a process keeps
them out of its records and logs."""

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


#: Refuses every prompt, quoting the TOKEN it was given as its reason.
REFUSES = f"""#!{sys.executable}
import json, os, sys
sys.stdin.read()
print(json.dumps({{"block": True, "reason": "token " + os.environ["TOKEN"] + " refused"}}))
"""


def test_run_never_prints_what_a_manifest_hook_was_handed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: ``tether run`` printed each event's details from the data hooks see, which
    keeps a command hook's env values: the task_completed line of a refused event quoted the
    hook's block reason, credential and all (the hook and dead-letter lines were redacted)."""
    gate = tmp_path / "gate.py"
    gate.write_text(REFUSES)
    gate.chmod(0o755)
    agent = tmp_path / "vault.agent"
    agent.write_text(
        "name: vault\nmodel: scripted\nhooks:\n"
        f"  - {{event: user_prompt_submit, command: ['{gate}'], "
        "env: {TOKEN: '$${VAULT_TOKEN}'}}\n"
    )
    monkeypatch.setenv("VAULT_TOKEN", CANARY)
    done = run_cli(capsys, "run", str(agent), "--inject", '{"ticket": "hello"}', "--until-idle")

    assert done.returncode == 1, done.stdout + done.stderr  # --until-idle: it dead-lettered
    assert "outcome=blocked" in done.stdout
    assert "error=token [REDACTED:TOKEN] refused" in done.stdout
    assert CANARY not in done.stdout + done.stderr
