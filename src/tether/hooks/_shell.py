"""ShellHook: run an external program as a hook (JSON on stdin, JSON on stdout).

No shell runs the command unless ``shell=True`` is set in code; the program gets a minimal
environment (SAFE_ENV_VARS, ``env_passthrough``, ``env``, TETHER_HOOK_EVENT, TETHER_PROCESS).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from ._context import HookContext
from ._errors import CommandHookError, CommandHookTimeoutError, HookBlocked
from ._executor import COMMAND_BACKSTOP, HookObjectExecutor
from ._hook import _bump
from ._limits import check_output_limit, check_timeout
from ._programs import SAFE_ENV_VARS, UNKNOWN_EXIT, Completed, run_program

if TYPE_CHECKING:
    from pydantic import SecretStr

__all__ = [
    "SAFE_ENV_VARS",
    "CommandExecutor",
    "CommandFields",
    "ShellHook",
    "ShellHookResult",
    "resolve_refs",
]

logger = logging.getLogger("tether.hooks")

STDERR_IN_MESSAGE: Final = 500
#: The block reason of a program that answered {"block": true} without a "reason".
NO_REASON: Final = "blocked by a command hook (it gave no reason)"
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(slots=True)
class ShellHookResult:
    """A hook program's answer, parsed but not applied."""

    block: bool = False
    reason: str = ""
    data: dict[str, Any] | None = None
    log: str | None = None
    raw: str = ""
    #: What the program wrote to stderr (it never changes the answer; ``hooks test`` shows it).
    stderr: str = ""


ShellHookResult.__module__ = "tether"


def resolve_refs(value: str, environ: Mapping[str, str], where: str) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}``; a missing VAR without default is an error."""

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        found = environ.get(name)
        if found is not None and (found != "" or default is None):
            return found
        if default is not None:
            return default
        raise CommandHookError(f"{where}: environment variable {name!r} is not set")

    return _REF.sub(sub, value)


class CommandFields(Protocol):
    """What a command hook's declaration says of its program (a CommandHookConfig)."""

    @property
    def command(self) -> str | list[str]: ...

    @property
    def timeout(self) -> float | None: ...

    @property
    def cwd(self) -> str | None: ...

    @property
    def env(self) -> Mapping[str, SecretStr]: ...

    @property
    def env_passthrough(self) -> Sequence[str]: ...

    @property
    def max_output_bytes(self) -> int: ...

    @property
    def claude_origin(self) -> dict[str, Any]: ...


def _secret_value(value: str | SecretStr) -> str:
    get = getattr(value, "get_secret_value", None)
    return str(get()) if get is not None else str(value)


class ShellHook:
    """An external program run as a hook; ``callback`` registers it with a HookManager."""

    #: What the program reads and answers (HookInfo.protocol): tether's envelope.
    protocol: ClassVar[str] = "tether"

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        timeout: float = 5.0,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | SecretStr] | None = None,
        shell: bool = False,
        encoding: str = "utf-8",
        inherit_env: bool = False,
        env_passthrough: Sequence[str] = (),
        max_output_bytes: int = 65536,
    ) -> None:
        if isinstance(command, str):
            if not command.strip():
                raise ValueError("command must name a program, got an empty string")
        elif not command or not all(isinstance(a, str) for a in command):
            raise ValueError(
                f"command must be a string or a non-empty list of strings: {command!r}"
            )
        check_timeout(timeout)
        check_output_limit(max_output_bytes)
        "".encode(encoding)  # an unknown encoding fails here, not at run time
        self.command: str | list[str] = command if isinstance(command, str) else list(command)
        self.timeout = float(timeout)
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.env: dict[str, str | SecretStr] | None = dict(env) if env is not None else None
        self.shell = shell
        self.encoding = encoding
        self.inherit_env = inherit_env
        self.env_passthrough = list(env_passthrough)
        self.max_output_bytes = max_output_bytes
        #: Applied to the program's ``log`` text before it is logged (set by the manager).
        self.redact: Callable[[str], str] | None = None
        # Every value build_env has handed a program from env or env_passthrough: name by value.
        self._handed: dict[str, str] = {}
        if shell:
            text = command if isinstance(command, str) else shlex.join(command)
            self._argv = ["/bin/sh", "-c", text]
        else:
            self._argv = shlex.split(command) if isinstance(command, str) else list(command)
            if not self._argv:
                raise ValueError(f"command {command!r} names no program")

    @classmethod
    def from_config(cls, config: CommandFields) -> ShellHook:
        """The ShellHook a HookConfig with a ``command`` describes."""
        return cls(
            config.command,
            timeout=config.timeout if config.timeout is not None else 5.0,
            cwd=config.cwd,
            env=config.env,
            env_passthrough=config.env_passthrough,
            max_output_bytes=config.max_output_bytes,
        )

    @property
    def display_name(self) -> str:
        return self.command if isinstance(self.command, str) else shlex.join(self.command)

    def as_executor(self) -> CommandExecutor:
        """The executor that runs this program (registering ``callback`` in code uses it)."""
        return CommandExecutor(self)

    def __repr__(self) -> str:
        return f"ShellHook({self.display_name!r}, timeout={self.timeout:g})"

    def build_env(self, ctx: HookContext) -> dict[str, str]:
        """The environment the program gets for this event."""
        host = os.environ
        if self.inherit_env:
            env = dict(host)
        else:
            env = {k: v for k in SAFE_ENV_VARS if (v := host.get(k)) is not None}
        for name in self.env_passthrough:
            value = host.get(name)
            if value is not None:
                env[name] = value
        for name, raw in (self.env or {}).items():
            env[name] = resolve_refs(_secret_value(raw), host, f"env {name}")
        handed = self._handed
        for name in (*self._passed_secrets(), *self._secret_env()):
            value = env.get(name)
            if value and value not in handed:
                handed[value] = name
                _bump()  # a value not listed yet: caches of secrets() look again
        env["TETHER_HOOK_EVENT"] = ctx.event.value
        env["TETHER_PROCESS"] = str(ctx.metadata.get("process_name") or ctx.process_id)
        return env

    def secrets(self) -> list[tuple[str, str]]:
        """(variable, value) of each value this hook gives its program that may be a
        credential, for a redactor of what is recorded and logged.

        Those are: each ``env`` value given as a SecretStr or through a ``${VAR}`` reference
        (resolved against the host environment now; one that cannot be resolved is skipped),
        each ``env_passthrough`` variable that is set, and every such value a run already
        handed over (the host environment may have changed since). A plain ``str`` value
        given in code is configuration written out in the open (``OUTPUT_FORMAT="json"``),
        not a secret; a HookConfig (and so a manifest) makes every env value a SecretStr.
        """
        host = os.environ
        found = [(name, host[name]) for name in self._passed_secrets() if host.get(name)]
        env = self.env or {}
        for name in self._secret_env():
            try:
                value = resolve_refs(_secret_value(env[name]), host, "")
            except CommandHookError:
                continue
            if value:
                found.append((name, value))
        known = {value for _, value in found}
        found += [(name, value) for value, name in self._handed.items() if value not in known]
        return found

    def _secret_env(self) -> list[str]:
        """The ``env`` variables given as a SecretStr or through a ``${VAR}`` reference."""
        return [
            name
            for name, raw in (self.env or {}).items()
            if not isinstance(raw, str) or _REF.search(raw) is not None
        ]

    def _passed_secrets(self) -> list[str]:
        """The env_passthrough variables a program would not get anyway (SAFE_ENV_VARS)."""
        return [name for name in self.env_passthrough if name not in SAFE_ENV_VARS]

    def _executable(self, env: Mapping[str, str]) -> str:
        program = self._argv[0]
        if os.sep in program or (os.altsep and os.altsep in program):
            path = program if self.cwd is None else os.path.join(self.cwd, program)
            if not os.path.exists(path):
                raise CommandHookError(f"hook command not found: {program!r} (no such file)")
            if not os.access(path, os.X_OK):
                raise CommandHookError(f"hook command is not executable: {program!r}")
            return program if self.cwd is None else os.path.abspath(path)
        import shutil  # here: shutil imports bz2 and lzma, which importing tether need not

        found = shutil.which(program, path=env.get("PATH", os.environ.get("PATH")))
        if found is None:
            raise CommandHookError(f"hook command not found: {program!r} (looked up on PATH)")
        return found

    async def run(self, ctx: HookContext) -> ShellHookResult:
        """Run the program for ``ctx`` and return its parsed answer without applying it.

        Raises CommandHookError (a RuntimeError) for every hook error.
        """
        done = await self.spawn(ctx, json.dumps(ctx.envelope(), default=str))
        name = self.display_name
        if done.returncode != 0:
            stderr = done.stderr.decode(self.encoding, errors="replace").strip()
            said = f": {stderr[:STDERR_IN_MESSAGE]}" if stderr else " (nothing on stderr)"
            raise CommandHookError(f"hook command {name!r} exited {done.returncode}{said}")
        try:
            raw = done.stdout.decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise CommandHookError(
                f"hook command {name!r} wrote stdout that is not {self.encoding}: {exc}"
            ) from None
        result = self.parse(raw)
        result.stderr = done.stderr.decode(self.encoding, errors="replace")
        return result

    async def spawn(self, ctx: HookContext, stdin: str) -> Completed:
        """Run the program for ``ctx`` with ``stdin``; return what it did (returncode, stdout,
        stderr). Raises CommandHookError when it could not start, timed out, overflowed or
        its exit status is unknown; the exit status itself is the caller's to read."""
        env = self.build_env(ctx)
        executable = self._executable(env)
        payload = stdin.encode(self.encoding)
        name = self.display_name
        try:
            done = await run_program(
                executable,
                self._argv,
                env=env,
                cwd=self.cwd,
                stdin=payload,
                timeout=self.timeout,
                max_stdout=self.max_output_bytes,
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument or value
            raise CommandHookError(f"hook command {name!r} could not start: {exc}") from exc
        if done.timed_out:
            raise CommandHookTimeoutError(  # recorded as timed_out, not failed
                f"hook command {name!r} timed out after {self.timeout:g}s and was killed"
            )
        if done.overflowed:
            raise CommandHookError(
                f"hook command {name!r} wrote more than max_output_bytes="
                f"{self.max_output_bytes} bytes to stdout and was killed"
            )
        if done.returncode == UNKNOWN_EXIT:
            raise CommandHookError(
                f"hook command {name!r} ended but its exit status could not be read "
                "(was it reaped by someone else, e.g. with SIGCHLD ignored?)"
            )
        return done

    def parse(self, raw: str) -> ShellHookResult:
        """Interpret a program's stdout (empty: success, nothing changed)."""
        return parse_answer(raw, f"hook command {self.display_name!r}")

    async def callback(self, ctx: HookContext) -> None:
        """Run the program and apply its answer: block, replace the data, log."""
        apply_answer(await self.run(ctx), ctx, f"hook command {self.display_name}", self.redact)


ShellHook.__module__ = "tether"


def parse_answer(raw: str, who: str, wrote: str = "wrote stdout") -> ShellHookResult:
    """Interpret a hook's answer text by the command-hook rules (empty: success, nothing
    changed); ``who`` names the hook in errors ("hook command 'x'"), ``wrote`` says what it
    gave ("wrote stdout")."""
    if not raw.strip():
        return ShellHookResult(raw=raw)
    try:
        answer = json.loads(raw)
    except ValueError:
        raise CommandHookError(f"{who} {wrote} that is not a JSON object: {raw[:200]!r}") from None
    return answer_of(answer, raw, who)


def answer_of(answer: object, raw: str, who: str) -> ShellHookResult:
    """A decoded answer (a JSON object: ``block``, ``reason``, ``data``, ``log``) as a result."""
    if not isinstance(answer, dict):
        raise CommandHookError(f"{who} wrote a JSON {type(answer).__name__}, not a JSON object")
    data = answer.get("data")
    if data is not None and not isinstance(data, dict):
        raise CommandHookError(f"{who}: 'data' must be a JSON object, got {type(data).__name__}")
    log = answer.get("log")
    reason = answer.get("reason")
    return ShellHookResult(
        block=bool(answer.get("block", False)),
        reason="" if reason is None else str(reason),
        data=data,
        log=None if log is None else str(log) if not isinstance(log, str) else log,
        raw=raw,
    )


def apply_answer(
    result: ShellHookResult,
    ctx: HookContext,
    shown: str,
    redact: Callable[[str], str] | None,
    no_reason: str = NO_REASON,
) -> None:
    """Apply a parsed answer to ``ctx``: log its ``log`` (redacted) at debug level as
    ``shown``'s, raise HookBlocked for a block (``no_reason`` when it gave none), or replace
    the data."""
    if result.log:
        text = redact(result.log) if redact is not None else result.log
        logger.debug("%s: %s", redact(shown) if redact is not None else shown, text)
    if result.block:
        # A refusal always says why, so a dead letter never carries an empty error.
        raise HookBlocked(result.reason or no_reason)
    if result.data is not None:
        ctx.replace(result.data)


class CommandExecutor(HookObjectExecutor):
    """A program run once per event (ShellHook): JSON envelope on stdin, answer on stdout."""

    __slots__ = ()
    kind: ClassVar[str] = "command"
    backstop: ClassVar[float] = COMMAND_BACKSTOP
