"""Running the reference tutorial's scripts, which serve on fixed ports (8781, 9781).

Each script runs in a network namespace of its own when this host allows it (``unshare``: root,
or unprivileged user namespaces): there its fixed port is free whatever the host runs on it
(a user's ``tether serve`` on 9781, a FakeLLM on 8781). Where it cannot, the script runs on the
host's loopback, and a port another program holds is waited for, boundedly.
"""

from __future__ import annotations

import functools
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parent / "tutorial"
#: What a script prints when its fixed port is taken (the fake model, the control API).
BUSY = ("Address already in use", "cannot listen on")


@functools.cache
def _isolating_prefix() -> tuple[str, ...]:
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


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_step(
    script: str, *, port: int, python_args: tuple[str, ...] = (), patience: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run one tutorial script with this interpreter; return what it printed (exit 0 checked)."""
    prefix = _isolating_prefix()
    deadline = time.monotonic() + patience
    while True:
        while not prefix and not _port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        done = subprocess.run(
            [*prefix, sys.executable, *python_args, script],
            cwd=TUTORIAL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        busy = any(text in done.stderr for text in BUSY)
        if done.returncode == 0 or not busy or prefix or time.monotonic() > deadline:
            break
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr}"
    return done
