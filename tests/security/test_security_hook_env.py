"""Security review, by experiment: what a command hook program really receives.

The programs are real subprocesses that report what they can reach.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ScriptFactory
from tether import HookEvent, HookManager, ShellHook

SECRET = "fd-canary-secret-8d21"

#: Tries to read the descriptor named in the event data; answers what it read (or the error).
READS_FD = """
import json, os, sys
fd = json.load(sys.stdin)["data"]["fd"]
try:
    os.lseek(fd, 0, 0)
    got = os.read(fd, 100).decode()
except OSError as exc:
    got = type(exc).__name__
print(json.dumps({"data": {"got": got}}))
"""


@pytest.fixture
def inheritable_secret_fd(tmp_path: Path) -> Iterator[int]:
    """A descriptor of the host program, open on a file holding a secret, marked inheritable
    (as a socket or pipe handed down by a supervisor would be)."""
    path = tmp_path / "secret.txt"
    path.write_text(SECRET)
    fd = os.open(path, os.O_RDONLY)
    os.set_inheritable(fd, True)
    try:
        yield fd
    finally:
        os.close(fd)


@pytest.mark.parametrize("in_cwd", [False, True], ids=["default", "with-cwd"])
async def test_a_hook_program_inherits_no_descriptor_of_the_host(
    make_script: ScriptFactory, inheritable_secret_fd: int, tmp_path: Path, in_cwd: bool
) -> None:
    """Regression: hook programs are spawned with posix_spawn, which hands them every
    inheritable descriptor of the host program; only the path with a ``cwd`` closed them."""
    hooks = HookManager()
    shell = ShellHook([make_script(READS_FD)], cwd=tmp_path if in_cwd else None, timeout=10)
    hooks.register(HookEvent.USER_PROMPT_SUBMIT, shell.callback)
    result = await hooks.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"fd": inheritable_secret_fd})
    assert not result.errors, result.errors
    assert result.data == {"got": "OSError"}, json.dumps(result.data)
