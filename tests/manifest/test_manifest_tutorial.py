"""The tutorial's step 4 (manifest_hooks.py with triage.agent) runs and prints what it says.

The script serves the control API on the tutorial's port 9781, in a network namespace of its
own (see _tutorial_support; it skips where the host cannot give it one).
"""

from __future__ import annotations

import pytest

from _tutorial_support import run_step as run


def run_step(script: str) -> list[str]:
    done = run(script, python_args=("-W", "error"))
    assert done.stderr == ""
    return done.stdout.splitlines()


@pytest.mark.slow
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
