"""Running the reference tutorial's scripts, which serve on fixed ports (8781, 9781).

Each script runs in a network namespace of its own (``unshare``: root, or unprivileged user
namespaces): there its fixed port is free whatever the host runs on it (a user's
``tether serve`` on 9781, a FakeLLM on 8781). Where the host cannot give it one, the test skips:
no test binds a fixed port on the host.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent / "tutorial"


@functools.cache
def isolating_prefix() -> tuple[str, ...]:
    """The command prefix that runs a program in a fresh network namespace, or () if none."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip") or "/usr/sbin/ip"
    if unshare is None:
        return ()
    for flags in (("--net",), ("--map-root-user", "--net")):
        prefix = (unshare, *flags, "sh", "-c", f'"{ip}" link set lo up && exec "$0" "$@"')
        probe = subprocess.run(
            [*prefix, sys.executable, "-c", ""], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return prefix
    return ()


def run_step(script: str, *, python_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run one tutorial script with this interpreter in a network namespace of its own; return
    what it printed (exit 0 checked). Skips where the host cannot isolate it."""
    prefix = isolating_prefix()
    if not prefix:
        pytest.skip(
            f"{script} serves on a fixed port and this host cannot run it in a network "
            "namespace of its own (unshare --net, or --map-root-user --net, failed)"
        )
    done = subprocess.run(
        [*prefix, sys.executable, *python_args, script],
        cwd=TUTORIAL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr}"
    return done
