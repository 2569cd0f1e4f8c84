"""The persistent command kind: PersistentHook, one long-lived co-process per hook speaking
JSON lines; its declaration (a command with ``persistent: true``) and executor are here too.

Each event is one line on the program's stdin: the command-hook envelope plus an ``id``
(``{"id": "7", "event": ..., "data": ...}``). The program answers with one line per request,
in any order: ``{"id": "7"}`` plus the command-hook answer keys (``block``, ``reason``,
``data``, ``log``), or ``{"id": "7", "error": "why"}`` for that event's hook error. Several
events may be in flight at once.

Lifecycle, kept by PersistentHook:

* started on first use, without a shell, in a process group of its own, with the same minimal
  environment a command hook gets (plus TETHER_HOOK_PERSISTENT=1);
* a crash (the program exits), a line it cannot take back (longer than ``max_output_bytes``)
  or a timeout kills the whole group, and every other process the program started, one that
  left the group (``setsid``) too, as for a spawned command hook (``_programs.RunProcesses``,
  whose run here is the program's life): every event in flight then is the hook's error, the
  next event starts a new program, after a backoff that doubles with each failure in a row
  (``restart_backoff`` up to ``max_restart_backoff``) and resets with the next good answer;
* :meth:`aclose` closes its stdin, gives it ``STOP_GRACE`` seconds to exit, then SIGTERMs and
  SIGKILLs the group and the rest of its processes, reaps them and closes its pipes. A manager
  closes the persistent hooks it built with itself.

A line the program writes that is not a JSON object with an ``id`` (a stray print) is logged
and skipped; an answer to an event no longer waited for (it timed out) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from pydantic import Field, StrictBool, model_validator

from .._context import HookContext
from .._errors import CommandHookError, CommandHookTimeoutError
from .._executor import HookObjectExecutor
from .._programs import RunProcesses, marked, signal_group
from .._resources import on_close, redactor_of
from .._shell import STDERR_IN_MESSAGE, ShellHook, ShellHookResult, answer_of, apply_answer
from ._command import CommandHookConfig

if TYPE_CHECKING:
    from pydantic import SecretStr

    from .._executor import Executor
    from .._hook import Engine

__all__ = ["PersistentExecutor", "PersistentHook", "PersistentHookConfig"]

logger = logging.getLogger("tether.hooks")

#: Seconds a program gets to exit after its stdin closed (aclose) before it is SIGTERMed.
STOP_GRACE: Final = 1.0
#: Seconds between SIGTERM and SIGKILL of the program's process group.
KILL_GRACE: Final = 0.5
#: Seconds to wait for the rest of a dead program's stderr (a grandchild may hold it open).
EOF_GRACE: Final = 0.25
#: Most of the program's stderr kept (its tail), for the error of a crash.
STDERR_TAIL: Final = 8192
#: Environment variable telling the program it runs as a persistent hook.
PERSISTENT_ENV: Final = "TETHER_HOOK_PERSISTENT"
#: The failure of a program stopped on purpose (aclose): no backoff follows it.
STOPPED: Final = "was stopped"


def _kill_run(run: RunProcesses) -> None:
    """SIGKILL the program's group and the rest of its processes, without waiting."""
    run.kill()
    run.release()


class _Pipe:
    """The read end of one of the program's output pipes, owned here (not by the asyncio
    process): it is closed when the program is, whoever else still holds its write end."""

    __slots__ = ("reader", "transport")

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.BaseTransport) -> None:
        self.reader = reader
        self.transport = transport

    @classmethod
    async def open(cls, fd: int, limit: int) -> _Pipe:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=limit, loop=loop)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(fd, "rb", 0)
        )
        return cls(reader, transport)

    def close(self) -> None:
        self.transport.close()


class _CoProcess:
    """One running program: its pipes, the answers awaited, and its reader tasks.

    Its run (``RunProcesses``) holds every process it starts: they are killed with it, and
    only then are its pipes closed (a live grandchild could write to them still)."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        name: str,
        on_fail: Callable[[_CoProcess], None],
        run: RunProcesses,
        stdout: _Pipe,
        stderr: _Pipe,
    ) -> None:
        self.proc = proc
        self.on_fail = on_fail
        self.pid = proc.pid
        self.name = name
        self.run = run
        self.pipes = (stdout, stderr)
        self.loop = asyncio.get_running_loop()
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.stderr = bytearray()
        self.failure: str | None = None  # why it is gone, once it is
        self.killing: asyncio.Task[None] | None = None
        # If the hook is dropped without aclose (or the interpreter exits), its processes die
        # too (the finalizer holds the run, not this object).
        self._finalizer = weakref.finalize(self, _kill_run, run)
        self.reader = asyncio.create_task(self._read_answers(), name=f"{name} answers")
        self.err_reader = asyncio.create_task(self._read_stderr(), name=f"{name} stderr")
        self.waiter = asyncio.create_task(self._wait_exit(), name=f"{name} exit")

    @property
    def alive(self) -> bool:
        return self.failure is None

    def stderr_said(self) -> str:
        text = self.stderr.decode("utf-8", errors="replace").strip()
        return f": {text[-STDERR_IN_MESSAGE:]}" if text else " (nothing on stderr)"

    async def _read_answers(self) -> None:
        stdout = self.pipes[0].reader
        try:
            while True:
                try:
                    line = await stdout.readline()
                except ValueError:  # longer than the stream's limit (max_output_bytes)
                    self.fail("wrote a line longer than max_output_bytes and was killed")
                    return
                if not line:
                    try:
                        async with asyncio.timeout(KILL_GRACE):
                            code = await self.proc.wait()
                    except TimeoutError:
                        self.fail("closed its stdout and was killed")
                        return
                    with contextlib.suppress(TimeoutError):  # what it said before it died
                        async with asyncio.timeout(EOF_GRACE):
                            await asyncio.shield(self.err_reader)
                    self.fail(f"exited {code}{self.stderr_said()}", exited=True)
                    return
                self._take(line)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never leave the events waiting on a dead reader
            self.fail(f"could not be read: {type(exc).__name__}: {exc}")

    def _take(self, line: bytes) -> None:
        try:
            answer = json.loads(line)
            rid = answer["id"] if isinstance(answer, dict) else None
        except (ValueError, KeyError):
            rid = None
        if rid is None:
            logger.warning(
                "persistent hook %s wrote a line that is not an answer (a JSON object with an "
                "'id'); skipped: %r",
                self.name,
                line[:200],
            )
            return
        future = self.pending.pop(str(rid), None)
        if future is not None and not future.done():
            future.set_result(answer)

    async def _wait_exit(self) -> None:
        """A program that exits while a process it started holds its stdout open (no EOF for
        the answer reader) is still seen to have exited: the reader gets KILL_GRACE to say
        so (with its stderr), then it is said here."""
        code = await self.proc.wait()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(KILL_GRACE):
                await asyncio.shield(self.reader)
        self.fail(f"exited {code}{self.stderr_said()}", exited=True)

    async def _read_stderr(self) -> None:
        stderr = self.pipes[1].reader
        while chunk := await stderr.read(65536):
            self.stderr += chunk
            if len(self.stderr) > STDERR_TAIL:
                del self.stderr[: len(self.stderr) - STDERR_TAIL]

    def fail(self, why: str, *, exited: bool = False, kill: bool = True) -> None:
        """It is gone (or must go): every event in flight gets the error; unless it ``exited``
        already, its group is killed (in the background, when ``kill``)."""
        if self.failure is not None:
            return
        self.failure = why
        if exited:  # what is left of its group (a grandchild) must not outlive it
            self.run.find()
            signal_group(self.pid, signal.SIGKILL)
            self.run.signal(signal.SIGKILL)
            # Reaped and its group emptied: a later kill could hit a reused process group.
            self._finalizer.detach()
        if exited or kill:  # the rest of its processes reaped, its pipes closed
            self.killing = self.loop.create_task(self.terminate(), name=f"{self.name} kill")
        # Before the events in flight hear of it: the next event must see the backoff.
        self.on_fail(self)
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(CommandHookError(f"persistent hook {self.name!r} {why}"))

    async def terminate(self, grace: float = 0.0) -> None:
        """End the program: stdin closed, ``grace`` seconds to exit, SIGTERM, then SIGKILL,
        of its group and every other process it started; all of them reaped, then the
        readers stopped and the pipes closed."""
        proc, run = self.proc, self.run
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        if grace > 0 and proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace):
                    await proc.wait()
        run.find()  # before the group dies: its members' children are still theirs
        signal_group(self.pid, signal.SIGTERM)
        run.signal(signal.SIGTERM)
        deadline = self.loop.time() + KILL_GRACE
        while run.alive() and self.loop.time() < deadline:
            await asyncio.sleep(0.02)
        run.kill()
        await proc.wait()
        run.release()
        await run.settle()
        self._finalizer.detach()
        # Nothing of the run holds the pipes now: the readers end at their EOF (an answer
        # line or stderr the program wrote last is still read), else they are stopped here.
        readers = (self.reader, self.err_reader, self.waiter)
        current = asyncio.current_task()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(EOF_GRACE):
                await asyncio.wait([t for t in readers if t is not current])
        for task in readers:
            if task is not current:
                task.cancel()
        await asyncio.gather(*(t for t in readers if t is not current), return_exceptions=True)
        for pipe in self.pipes:
            pipe.close()

    def abandon(self) -> None:
        """Kill it now without waiting (its event loop is gone: nothing can be awaited)."""
        self.failure = self.failure or "was abandoned"
        self._finalizer()
        for pipe in self.pipes:  # its loop is closed: the descriptors go without it
            with contextlib.suppress(Exception):
                pipe.close()


class PersistentHook:
    """A command hook whose program keeps running between events; ``callback`` registers it.

    The command, environment and output limit work as for :class:`ShellHook` (no shell; a
    minimal environment; ``env`` values may be ``${VAR}`` references, resolved when the
    program starts). ``timeout`` bounds each event; ``max_output_bytes`` each answer line.
    """

    #: What the program reads and answers (HookInfo.protocol): tether's JSON lines.
    protocol: ClassVar[str] = "tether"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 5.0,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | SecretStr] | None = None,
        inherit_env: bool = False,
        env_passthrough: Sequence[str] = (),
        max_output_bytes: int = 65536,
        restart_backoff: float = 0.2,
        max_restart_backoff: float = 10.0,
    ) -> None:
        # The program's command, environment and limits are checked (and built) as a ShellHook's.
        self._shell = ShellHook(
            command,
            timeout=timeout,
            cwd=cwd,
            env=env,
            inherit_env=inherit_env,
            env_passthrough=env_passthrough,
            max_output_bytes=max_output_bytes,
        )
        for field, value in (
            ("restart_backoff", restart_backoff),
            ("max_restart_backoff", max_restart_backoff),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{field} must be a number of seconds >= 0, got {value!r}")
        if max_restart_backoff < restart_backoff:
            raise ValueError(
                f"max_restart_backoff ({max_restart_backoff!r}) must be at least "
                f"restart_backoff ({restart_backoff!r})"
            )
        self.restart_backoff = float(restart_backoff)
        self.max_restart_backoff = float(max_restart_backoff)
        #: Applied to the program's ``log`` text before it is logged (set by the manager).
        self.redact: Callable[[str], str] | None = None
        #: How many times a program was started (the first start included).
        self.starts = 0
        self._co: _CoProcess | None = None
        self._starting: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._ids = itertools.count(1)
        self._failures = 0  # in a row, since the last good answer
        self._not_before = 0.0  # loop time before which no new program starts (backoff)
        self._killing: set[asyncio.Task[None]] = set()

    @classmethod
    def from_config(cls, config: PersistentHookConfig) -> PersistentHook:
        """The PersistentHook a HookConfig with ``command`` and ``persistent: true`` describes."""
        return cls(
            config.command,
            timeout=config.timeout if config.timeout is not None else 5.0,
            cwd=config.cwd,
            env=config.env,
            env_passthrough=config.env_passthrough,
            max_output_bytes=config.max_output_bytes,
        )

    @property
    def command(self) -> str | list[str]:
        return self._shell.command

    @property
    def timeout(self) -> float:
        return self._shell.timeout

    @property
    def display_name(self) -> str:
        return self._shell.display_name

    @property
    def pid(self) -> int | None:
        """The running program's process id (its process group's too), or None."""
        co = self._co
        return co.pid if co is not None and co.alive else None

    def __repr__(self) -> str:
        return f"PersistentHook({self.display_name!r}, timeout={self.timeout:g})"

    def secrets(self) -> list[tuple[str, str]]:
        """What ShellHook.secrets() says of the same command and environment."""
        return self._shell.secrets()

    # -- the program -----------------------------------------------------------------------

    async def _program(self, ctx: HookContext) -> _CoProcess:
        """The running program, started if there is none (after the backoff, if one is due)."""
        co = self._co
        loop = asyncio.get_running_loop()
        if co is not None and co.alive and co.loop is loop:
            return co
        if self._starting is None or self._starting[0] is not loop:
            self._starting = (loop, asyncio.Lock())
        async with self._starting[1]:
            co = self._co
            if co is not None and co.loop is not loop:  # its loop is gone: so is it
                co.abandon()
                self._co = co = None
            if co is not None and co.alive:
                return co
            wait = self._not_before - loop.time()
            if wait > 0:
                if wait >= self.timeout:
                    raise CommandHookError(
                        f"persistent hook {self.display_name!r} is restarting after "
                        f"{self._failures} failure(s) in a row; next start in {wait:.1f}s"
                    )
                await asyncio.sleep(wait)
            self._co = co = await self._start(ctx)
            return co

    async def _start(self, ctx: HookContext) -> _CoProcess:
        shell = self._shell
        env = shell.build_env(ctx)
        env[PERSISTENT_ENV] = "1"
        # Every process the program starts carries the marker: the runtime (a child
        # subreaper) adopts one that leaves the group, and kills it with the program.
        env, marker = marked(env)
        executable = shell._executable(env)
        name = self.display_name
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                executable,
                *shell._argv[1:],
                stdin=asyncio.subprocess.PIPE,
                stdout=stdout_w,
                stderr=stderr_w,
                env=env,
                cwd=shell.cwd,
                process_group=0,
                close_fds=True,
            )
        except (OSError, ValueError) as exc:
            os.close(stdout_r)
            os.close(stderr_r)
            raise CommandHookError(f"hook command {name!r} could not start: {exc}") from exc
        finally:
            os.close(stdout_w)
            os.close(stderr_w)
        self.starts += 1
        run = RunProcesses(proc.pid, marker)
        try:
            stdout = await _Pipe.open(stdout_r, shell.max_output_bytes + 1)  # + the newline
            stderr = await _Pipe.open(stderr_r, 2**16)
        except BaseException:
            _kill_run(run)
            raise
        return _CoProcess(proc, name, self._failed, run, stdout, stderr)

    def _failed(self, co: _CoProcess) -> None:
        """A program is gone: the next start waits the backoff (not after a close)."""
        if co.killing is not None:
            self._killing.add(co.killing)
            co.killing.add_done_callback(self._killing.discard)
        if co.failure == STOPPED:
            return
        self._failures += 1
        delay = min(self.max_restart_backoff, self.restart_backoff * 2 ** (self._failures - 1))
        self._not_before = co.loop.time() + delay
        logger.warning(
            "persistent hook %s %s; the next event restarts it (in %.1fs at the earliest)",
            self.display_name if self.redact is None else self.redact(self.display_name),
            co.failure if self.redact is None else self.redact(co.failure or ""),
            delay,
        )

    # -- running ---------------------------------------------------------------------------

    async def run(self, ctx: HookContext) -> ShellHookResult:
        """Send the event to the program and return its parsed answer without applying it.

        Raises CommandHookError for every hook error (CommandHookTimeoutError, also a
        TimeoutError, when no answer came within ``timeout``: the program is then killed).
        """
        name = self.display_name
        rid = str(next(self._ids))
        envelope = ctx.envelope()
        line = json.dumps({"id": rid, **envelope}, default=str).encode(self._shell.encoding)
        co: _CoProcess | None = None
        try:
            async with asyncio.timeout(self.timeout):
                co = await self._program(ctx)
                future: asyncio.Future[dict[str, Any]] = co.loop.create_future()
                co.pending[rid] = future
                stdin = co.proc.stdin
                assert stdin is not None
                try:
                    stdin.write(line + b"\n")
                    await stdin.drain()
                except (ConnectionError, RuntimeError):  # it died meanwhile: the reader says why
                    pass
                answer = await future
        except TimeoutError:
            if co is not None and co.alive:
                co.fail(f"timed out after {self.timeout:g}s (event {rid}) and was killed")
            raise CommandHookTimeoutError(
                f"persistent hook {name!r} timed out after {self.timeout:g}s and was killed"
            ) from None
        finally:
            if co is not None:
                co.pending.pop(rid, None)
        self._failures = 0
        error = answer.get("error")
        if error is not None:
            raise CommandHookError(f"persistent hook {name!r} failed: {error}")
        return answer_of(answer, "", f"persistent hook {name!r}")

    def as_executor(self) -> PersistentExecutor:
        """What runs this hook when its ``callback`` is registered in code (its kind, its own
        timeout and the secrets it sends, for the catalog and the redactor)."""
        return PersistentExecutor(self)

    async def callback(self, ctx: HookContext) -> None:
        """Send the event and apply the answer: block, replace the data, log."""
        result = await self.run(ctx)
        apply_answer(result, ctx, f"persistent hook {self.display_name}", self.redact)

    async def aclose(self) -> None:
        """Stop the program (stdin closed, STOP_GRACE to exit, then the group killed), and
        wait for any killed one to be reaped. The hook stays usable: a later event starts a
        new program."""
        loop = asyncio.get_running_loop()
        co, self._co = self._co, None
        if co is not None and co.loop is not loop:
            co.abandon()
        elif co is not None:
            co.fail(STOPPED, kill=False)
            await co.terminate(grace=STOP_GRACE)
        killing = [t for t in self._killing if t.get_loop() is loop]
        self._killing.clear()
        await asyncio.gather(*killing, return_exceptions=True)
        self._failures = 0
        self._not_before = 0.0


PersistentHook.__module__ = "tether"


class PersistentExecutor(HookObjectExecutor):
    """Runs a PersistentHook: each event is bounded by the hook's own timeout (the program is
    killed at it), the engine's bound allows ``backstop`` seconds more."""

    __slots__ = ()
    kind: ClassVar[str] = "persistent"
    backstop: ClassVar[float] = 5.0


# -- the declaration ---------------------------------------------------------------------------


class PersistentHookConfig(CommandHookConfig):
    """A command hook whose program is started once and kept: each event is one JSON line on
    its stdin, each answer one line on its stdout. ``persistent: false`` is a plain command."""

    kind: ClassVar[str] = "persistent"
    default_timeout: ClassVar[float] = 5.0

    persistent: StrictBool = Field(
        default=True, description="Keep one program running for every event (JSON lines)"
    )

    @classmethod
    def selects(cls, data: dict[str, Any]) -> bool:
        return "persistent" in data

    @model_validator(mode="after")
    def _tethers_lines(self) -> PersistentHookConfig:
        if self.persistent and getattr(self, "protocol", "tether") != "tether":
            raise ValueError(
                "a persistent hook speaks tether's JSON lines; protocol 'claude-code' runs its "
                "program once per event, as Claude Code does (drop persistent)"
            )
        return self

    def executor(self, manager: Engine) -> Executor:
        if not self.persistent:
            return super().executor(manager)
        hook = PersistentHook.from_config(self)
        hook.redact = redactor_of(manager)
        on_close(manager, hook.aclose)
        return PersistentExecutor(hook)
