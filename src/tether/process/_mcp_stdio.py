"""The stdio transport of an MCP server: its program, in a process group of its own.

The program gets a minimal environment (the host's SAFE_ENV_VARS, then the entry's ``env``)
and no inherited descriptors. Messages are newline-delimited JSON-RPC on its stdin and stdout;
its stderr is read and only its tail kept (for the error said when it exits).

On the way out (a stop, a removal, a reconnect) its stdin is closed, the program gets
STOP_GRACE seconds to exit, then the whole group gets SIGTERM and, KILL_GRACE later, SIGKILL;
whatever is left in the group after that (a grandchild of a program that exited) is killed
too, so nothing it started outlives it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import anyio
import mcp.types as mcp_types
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage

from ..errors import TetherError
from ..hooks import minimal_env, signal_group

if TYPE_CHECKING:
    from anyio.abc import Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = [
    "ProgramNotFoundError",
    "StdioProgram",
    "kill_group",
    "minimal_env",
    "program_argv",
    "stdio_transport",
]

#: Seconds a program gets to exit once its stdin is closed, before its group gets SIGTERM.
STOP_GRACE: Final = 1.0
#: Seconds between SIGTERM and SIGKILL of its group.
KILL_GRACE: Final = 0.5
#: Bytes of its stderr kept (the tail).
STDERR_TAIL: Final = 4096
#: Longest message line read from its stdout; past it the connection is over.
MAX_LINE: Final = 64 * 1024 * 1024


class ProgramNotFoundError(TetherError, OSError):
    """The program of a stdio MCP server cannot be found or run."""


def program_argv(command: str | list[str], args: list[str]) -> list[str]:
    """The program and its arguments: a string command is split as a command line would be
    (no shell runs it), a list is taken as it is; ``args`` follow."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    return [*argv, *args]


def _executable(program: str, env: Mapping[str, str], cwd: str | None) -> str:
    if os.sep in program:
        path = program if cwd is None else os.path.join(cwd, program)
        if not os.access(path, os.X_OK):
            raise ProgramNotFoundError(f"command {program!r} is not an executable file")
        return os.path.abspath(path)
    found = shutil.which(program, path=env.get("PATH", os.defpath))
    if found is None:
        raise ProgramNotFoundError(f"command {program!r} was not found on PATH")
    return found


@dataclass(slots=True)
class StdioProgram:
    """The running program of one connection: its pid (its process group's id too)."""

    pid: int
    stderr: bytearray = field(default_factory=bytearray)
    returncode: int | None = None

    def stderr_tail(self) -> str:
        """The last line it wrote to stderr, if any."""
        lines = bytes(self.stderr).decode("utf-8", "replace").strip().splitlines()
        return lines[-1].strip() if lines else ""


def kill_group(pgid: int) -> None:
    """SIGKILL the whole group now (the last resort of a close that could not finish)."""
    signal_group(pgid, signal.SIGKILL)


Streams = tuple[
    "MemoryObjectReceiveStream[SessionMessage | Exception]",
    "MemoryObjectSendStream[SessionMessage]",
    StdioProgram,
]


@asynccontextmanager
async def stdio_transport(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    on_end: Callable[[StdioProgram], None],
) -> AsyncIterator[Streams]:
    """Start the program and yield the session's streams and the program.

    ``on_end`` is called once its stdout ends (it exited, or closed it): the connection is
    over. ProgramNotFoundError (an OSError) when it cannot start.
    """
    executable = _executable(argv[0], env, cwd)
    process = await anyio.open_process(
        [executable, *argv[1:]], env=env, cwd=cwd, start_new_session=True
    )
    program = StdioProgram(process.pid)
    to_session, from_program = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_program, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout() -> None:
        assert process.stdout is not None
        try:
            async with to_session:
                buffer = ""
                async for chunk in TextReceiveStream(process.stdout, errors="replace"):
                    *lines, buffer = (buffer + chunk).split("\n")
                    for line in lines:
                        if line.strip():
                            await to_session.send(_message(line))
                    if len(buffer) > MAX_LINE:  # a message that never ends: the connection does
                        too_long = f"the server wrote a line of over {MAX_LINE} characters"
                        await to_session.send(ValueError(too_long))
                        return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # the session or the pipe is gone: the connection is over either way
        finally:
            on_end(program)

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    wire = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(f"{wire}\n".encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the program stopped reading: the session must see it

    async def read_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                program.stderr += chunk
                del program.stderr[:-STDERR_TAIL]

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_stdout)
            tasks.start_soon(write_stdin)
            tasks.start_soon(read_stderr)
            try:
                yield from_program, to_program, program
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, program)
                tasks.cancel_scope.cancel()
    finally:
        from_program.close()
        to_program.close()
        if program.returncode is None:  # it never got to the stop above (a task failed)
            kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            await _aclose(process)


def _message(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line))
    except ValueError as exc:  # the session reports it
        return exc


async def _stop(process: Process, program: StdioProgram) -> None:
    """Close stdin, give the program STOP_GRACE, then kill its group; the group is empty after."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    if not await _exited(process, STOP_GRACE):
        signal_group(process.pid, signal.SIGTERM)
        if not await _exited(process, KILL_GRACE):
            signal_group(process.pid, signal.SIGKILL)
            await _exited(process, KILL_GRACE)
    # The program is gone; anything it left in its group (a grandchild) goes too.
    if signal_group(process.pid, signal.SIGTERM):
        await anyio.sleep(0.05)
        signal_group(process.pid, signal.SIGKILL)
    program.returncode = process.returncode


async def _exited(process: Process, within: float) -> bool:
    with anyio.move_on_after(within):
        await process.wait()
    return process.returncode is not None


async def _aclose(process: Process) -> None:
    with contextlib.suppress(Exception):
        await process.aclose()
