"""The tutorial's step 4 (manifest_hooks.py with triage.agent) runs and prints what it says.

The script serves the control API on the tutorial's port 9781; something else may hold that
port for a moment (another run of the tutorial), so the step waits for it, boundedly.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

TUTORIAL = Path(__file__).parents[1] / "tutorial"
PORT = 9781


def port_is_free() -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", PORT))
        except OSError:
            return False
    return True


def run_step(script: str, *, patience: float = 60.0) -> list[str]:
    deadline = time.monotonic() + patience
    while True:
        while not port_is_free() and time.monotonic() < deadline:
            time.sleep(0.1)
        done = subprocess.run(
            [sys.executable, "-W", "error", script],
            cwd=TUTORIAL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        busy = "cannot listen on" in done.stderr
        if done.returncode == 0 or not busy or time.monotonic() > deadline:
            break
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr}"
    assert done.stderr == ""
    return done.stdout.splitlines()


def test_step_4_loads_manifest_hooks_and_the_api_refuses_to_deploy_commands() -> None:
    assert run_step("manifest_hooks.py") == [
        "user_prompt_submit  command=['python3', 'hooks/gate.py'] timeout=5.0 fail_closed=True",
        "task_completed      command=python3 hooks/notify.py --channel ops timeout=None "
        "fail_closed=False",
        "allow_command_deploys=False: HTTP 403 COMMANDS_NOT_ALLOWED",
        "   Refusing to deploy hooks[0], a command hook: anyone holding the API token could run "
        "any program on the runtime's host ...",
        "allow_command_deploys=True: HTTP 201 triage",
    ]
