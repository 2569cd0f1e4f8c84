"""Hook programs for the command-hook tests: one that notes what it was sent, a parent whose
grandchild outlives it."""

from __future__ import annotations

from pathlib import Path

from conftest import ScriptFactory


def parent_of_a_stubborn_grandchild(tmp_path: Path, make_script: ScriptFactory) -> tuple[str, Path]:
    """A hook program that starts a grandchild ignoring SIGTERM and holding its stdout open,
    waits until the grandchild wrote its pid, then answers ``{}``; (the program, the pid file)."""
    pidfile = tmp_path / "grandchild.pid"
    grandchild = make_script(
        f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open({str(pidfile)!r}, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(60)
        """,
        name="grandchild.py",
    )
    parent = make_script(
        f"""
        import os, subprocess, time
        subprocess.Popen([{grandchild!r}])  # inherits stdout and keeps it open
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.01)
        print("{{}}")
        """,
        name="parent.py",
    )
    return parent, pidfile


def appending_script(make_script: ScriptFactory, path: Path, line: str) -> str:
    """A hook program that appends ``line`` (a Python expression over the ``event`` it reads
    from stdin) as a line to ``path``."""
    return make_script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        with open({str(path)!r}, "a") as f:
            f.write({line} + "\\n")
        """
    )
