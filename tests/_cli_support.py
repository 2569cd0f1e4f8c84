"""Running the ``tether`` command line in the test's own process, and a port nobody uses."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

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
