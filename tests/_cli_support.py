"""Running the ``tether`` command line: in the test's own process, or as a program."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tether.cli import main


class Done:
    """What one in-process run of the CLI did."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    """Run ``tether ARGS...`` through its entry point, which always exits."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    return Done(code if isinstance(code, int) else 0, out, err)


def cli_in_thread(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Awaitable[Done]]:
    """``tether ARGS...`` run in this process in a thread (so an API can serve in the loop),
    with a wide terminal and no colour."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")

    async def in_thread(*args: str) -> Done:
        return await asyncio.to_thread(run_cli, capsys, *args)

    return in_thread


#: ``tether`` run as a program with this interpreter.
CLI = [sys.executable, "-m", "tether.cli"]


def validate(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The real ``tether validate`` (``args`` after it) in a subprocess; a hang fails the test
    (after ``timeout`` seconds) instead of the run."""
    return subprocess.run(
        [*CLI, "validate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "500", "NO_COLOR": "1"},
    )


class Running:
    """A program running as a subprocess; the stdout lines read so far are in ``seen``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[str] = []

    async def read_until(self, text: str, *, what: str = "tether serve") -> None:
        """Read stdout lines into ``seen`` until one holds ``text`` (30 s at the most)."""
        assert self.proc.stdout is not None
        async with asyncio.timeout(30):
            while not any(text in line for line in self.seen):
                line = await self.proc.stdout.readline()
                assert line, f"{what} ended early: {self.seen}"
                self.seen.append(line.decode())

    async def stop(self, sig: int = signal.SIGINT) -> tuple[str, str]:
        """Send ``sig`` and wait (30 s at the most) for the program to end; its rest of stdout
        and its stderr (empty when not piped)."""
        self.proc.send_signal(sig)
        async with asyncio.timeout(30):
            out, err = await self.proc.communicate()
        return out.decode(), (err or b"").decode()


@contextlib.asynccontextmanager
async def running(
    *args: str, env: dict[str, str], stderr: int | None = asyncio.subprocess.PIPE
) -> AsyncIterator[Running]:
    """Run ``args`` with stdout piped; kill it on the way out if it still runs."""
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=stderr, env=env
    )
    try:
        yield Running(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.communicate()


@contextlib.asynccontextmanager
async def serving(manifests: list[Any], **options: Any) -> AsyncIterator[str]:
    """Serve ``manifests`` as ``tether serve`` does, in this loop on a free loopback port,
    until the block ends; yield the server's URL, and check that it then exits 0."""
    from tether.cli._run import _serve

    stop = asyncio.Event()
    urls: list[str] = []
    task = asyncio.create_task(
        _serve(manifests, host="127.0.0.1", port=0, stop=stop, ready=urls.append, **options)
    )
    try:
        async with asyncio.timeout(30):
            while not urls and not task.done():
                await asyncio.sleep(0.01)
        assert urls, f"serve ended before it served: {task.result()}"
        yield urls[0]
    finally:
        stop.set()
        assert await task == 0
