"""Running a program and reaping its whole process tree.

A hook's program (command and persistent hooks) is started and ended here; an MCP server's
(process/_mcp_stdio.py, which drives it through anyio) takes its environment and the signalling
of its group from here too. A program gets a minimal environment (:data:`SAFE_ENV_VARS` of the
host, see :func:`minimal_env`) unless its hook says otherwise.

The program runs in a process group of its own. When it must go (timeout, output overflow,
cancellation) the whole group gets SIGTERM and, after a short grace, SIGKILL, so no grandchild
outlives its hook; the direct child is always reaped (no zombie) and every pipe is closed.

A descendant may leave the group (``setsid cmd &``). On Linux the runtime is made a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so such a process, orphaned when the hook's
program exits, becomes the runtime's child instead of init's; each program gets a
``TETHER_HOOK_RUN`` marker in its environment, and at the hook's end every descendant of the
program, and every adopted orphan carrying its marker, is signalled with the group (SIGTERM,
then SIGKILL) and reaped. A process that exited before it could be looked at is a zombie with
no environment left to read: see _run_zombies for those reaped as the run's. Elsewhere only the
process group is guaranteed. A persistent hook's co-process gets the same (see RunProcesses):
its run is the program's whole life.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple

__all__ = [
    "SAFE_ENV_VARS",
    "Completed",
    "RunProcesses",
    "marked",
    "minimal_env",
    "run_program",
    "signal_group",
]

#: Host variables a program (a hook's, an MCP server's) receives when they are set.
# fmt: off
SAFE_ENV_VARS: Final[frozenset[str]] = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
    "LC_MESSAGES", "TZ", "TMPDIR", "TEMP", "TMP", "TERM", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR",
    "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES",
})
# fmt: on


def minimal_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The host's SAFE_ENV_VARS that are set, then ``extra``."""
    env = {name: value for name in SAFE_ENV_VARS if (value := os.environ.get(name)) is not None}
    env.update(extra)
    return env


#: Seconds between SIGTERM and SIGKILL of the hook's process group.
KILL_GRACE: Final = 0.5
#: Seconds to wait for stdout/stderr EOF after the program exited (a grandchild may hold them).
EOF_GRACE: Final = 0.25
#: Seconds to wait, beyond KILL_GRACE, for a killed program to be reaped before giving up on it.
REAP_GRACE: Final = 1.0
#: Most stderr kept; the rest is read and discarded so the program never blocks on it.
STDERR_LIMIT: Final = 64 * 1024
_READ_CHUNK: Final = 65536
_HAS_PIDFD: Final = hasattr(os, "pidfd_open")
#: Where this process's open descriptors are listed (Linux; /dev/fd elsewhere).
_FD_DIR: Final = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
#: The exit code reported when the program's status could not be read (reaped elsewhere).
UNKNOWN_EXIT: Final = -(2**16)
#: The environment variable that marks every process a hook program starts (its run's token).
RUN_MARKER: Final = "TETHER_HOOK_RUN"
_PR_SET_CHILD_SUBREAPER: Final = 36
_LINUX: Final = sys.platform.startswith("linux") and _HAS_PIDFD and os.path.isdir("/proc/self")


class _Subreaper:
    """Whether this process adopts its descendants' orphans (set once, on the first spawn)."""

    tried = False
    active = False


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); True if it is one. Idempotent."""
    if not _Subreaper.tried:
        _Subreaper.tried = True
        if _LINUX:
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                _Subreaper.active = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
                _Subreaper.active = False
    return _Subreaper.active


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (of every thread of it), from /proc."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                found.extend(int(part) for part in f.read().split())
        except OSError:
            continue
    return found


def _carries(pid: int, marker: bytes) -> bool | None:
    """Whether the process ``pid`` was started with ``marker`` (``NAME=token``) in its env;
    None when that cannot be told now: its environment reads empty while it is no zombie (in
    the middle of an exec, the new one is not in place yet), or cannot be read while it exits
    (its memory already gone; a zombie soon)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        stat = _stat(pid)
        return None if stat is not None and stat.exiting and stat.state != b"Z" else False
    if not environ:
        return None if _state(pid) not in (None, b"Z", b"X") else False
    return environ.startswith(marker + b"\0") or (b"\0" + marker + b"\0") in environ


def _state(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


class _Stat(NamedTuple):
    """What /proc/<pid>/stat tells of a process (a zombie's too)."""

    state: bytes
    group: int
    session: int
    started: int  # clock ticks since boot
    exec_ed: bool  # whether it ran a program since its fork (no PF_FORKNOEXEC)
    exiting: bool  # PF_EXITING


_PF_EXITING: Final = 0x4
_PF_FORKNOEXEC: Final = 0x40


def _stat(pid: int) -> _Stat | None:
    """``pid``'s _Stat, None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # fields[0] is the stat file's field 3 (the state); flags is field 9, start time 22.
        flags, started = int(fields[6]), int(fields[19])
        group, session = int(fields[2]), int(fields[3])
        exec_ed, exiting = not flags & _PF_FORKNOEXEC, bool(flags & _PF_EXITING)
        return _Stat(fields[0], group, session, started, exec_ed, exiting)
    except (OSError, IndexError, ValueError):
        return None


def hook_descendants(
    program: int, marker: bytes, since: int | None = None
) -> tuple[list[int], bool]:
    """Every process of one hook run but ``program`` itself: ``program``'s descendants, and
    the orphans this (subreaper) process adopted that carry ``marker`` or are still in the
    program's process group, with theirs; the zombies among those orphans (no environment
    left to read) as _run_zombies tells them; and whether a child of this process could not
    be told apart (see ``_carries``): look again. ``since``: when the program started (clock
    ticks since boot), if known."""
    if not _LINUX:
        return [], False
    me = os.getpid()
    mine = {os.getsid(0), os.getpgid(0)}
    roots = []
    zombies: dict[int, _Stat] = {}
    sessions: set[int] = set()  # the sessions and groups of the run's live processes
    unsure = False
    for pid in _children(me):
        # The environment first: a process that exits in between is a zombie by its stat.
        carries = _carries(pid, marker)
        stat = _stat(pid)
        if stat is None:
            continue
        if pid == program or stat.group == program:
            roots.append(pid)
        elif carries:
            roots.append(pid)
            sessions |= {stat.group, stat.session} - mine
        elif stat.state in (b"Z", b"X"):
            zombies[pid] = stat
        elif carries is None:
            unsure = True
    roots += _run_zombies(zombies, sessions, os.getsid(0), since)
    found: list[int] = []
    seen = {me}
    while roots:
        pid = roots.pop()
        if pid in seen:
            continue
        seen.add(pid)
        if pid != program:
            found.append(pid)
        roots.extend(_children(pid))
    return found, unsure


def _run_zombies(
    zombies: dict[int, _Stat], sessions: set[int], mine: int, since: int | None
) -> list[int]:
    """The zombie children of this process to reap as a hook run's: an adopted orphan, a
    zombie leading or in a session of the run, and a daemon's session leader.

    An *adopted orphan* is in a session that is neither this process's nor its own: a process
    this process forked can only be in one of those two (a session is inherited at fork or
    made by setsid, never joined), so it is none of this process's own children, whose exit
    status asyncio or subprocess may be waiting to read, and nobody else can reap it. The
    session of one born during this run (after ``since``) is the run's too: it was made by
    the run's daemonizing process (``fork; setsid; fork``), whose zombie leads it.

    A *daemon's session leader* was born during this run, made a session and never ran a
    program (``fork; setsid``, daemon(3)): this process's own children (asyncio's,
    subprocess's) all run one, so none of them is taken for it.
    """
    found: list[int] = []
    changed = True
    while changed:
        changed = False
        for pid, stat in list(zombies.items()):
            born_here = since is not None and stat.started >= since
            adopted = stat.session not in (mine, pid)
            daemon = stat.session == pid and born_here and not stat.exec_ed
            if adopted or daemon or pid in sessions or stat.session in sessions:
                found.append(pid)
                del zombies[pid]
                changed = True
                if adopted and born_here:
                    sessions.add(stat.session)
    return found


class _Stray:
    """A descendant that left the hook's process group: signalled through a pidfd (no pid
    reuse can redirect a signal), and reaped here once it is this process's child."""

    __slots__ = ("pid", "pidfd", "started")

    def __init__(self, pid: int, pidfd: int, started: int | None) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.started = started

    @classmethod
    def open(cls, pid: int) -> _Stray | None:
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # gone already
            return None
        return cls(pid, pidfd, _start_time(pid))

    def exited(self) -> bool:
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return bool(readable)

    def signal(self, sig: int) -> None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, sig)

    def reap(self) -> bool:
        """True once it is dead and reaped (here, or by a parent of its own)."""
        try:
            # Through the pidfd: a pid reaped elsewhere and reused names another child.
            status = os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            # Not our child (yet): a parent of its own (also killed, soon gone) still holds it,
            # alive or a zombie, and it comes to us when that parent dies. Done only once it is
            # gone, or its pid names another process now.
            started = _start_time(self.pid)
            return started is None or started != self.started
        return status is not None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.pidfd)


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[19])  # field 22 of stat; fields[0] is field 3 (the state)
    except (OSError, IndexError, ValueError):
        return None


#: How many looks a last sweep makes while a child of this process cannot be told apart.
_UNSURE_LOOKS: Final = 5
#: Killed strays not reaped yet (their parent was still dying): retried at every hook's end.
_UNREAPED: list[_Stray] = []


def _reap_strays() -> None:
    kept = []
    for stray in _UNREAPED:
        if stray.reap():
            stray.close()
        else:
            kept.append(stray)
    _UNREAPED[:] = kept


async def _settle_strays(program: int, marker: bytes, since: int | None, deadline: float) -> None:
    """Reap the killed strays, waiting (up to ``deadline``, loop time) for them to die, and
    kill the run's processes that turn up meanwhile: one forked by a stray just before it
    died, or caught between fork and exec by the first look."""
    loop = asyncio.get_running_loop()
    quiet = 0
    looks = 0
    while loop.time() < deadline:
        found, unsure = hook_descendants(program, marker, since)
        late = [s for pid in found if (s := _Stray.open(pid)) is not None]
        for stray in late:
            stray.signal(signal.SIGKILL)
        _UNREAPED.extend(late)
        _reap_strays()
        looks += 1
        quiet = 0 if late or _UNREAPED else quiet + 1
        # Two looks in a row found nothing left; a child that could not be told apart (in
        # an exec) gets a few more: an exec takes microseconds, not these 10 ms steps.
        if quiet >= 2 and (not unsure or looks >= _UNSURE_LOOKS):
            return
        await asyncio.sleep(0.01)


def marked(env: dict[str, str]) -> tuple[dict[str, str], bytes]:
    """``env`` with a fresh run marker for one program, and the marker (``NAME=token``), when
    this process is (made) a child subreaper; else ``env`` as it is and an empty marker."""
    if not become_subreaper():
        return env, b""
    token = os.urandom(8).hex()  # (secrets.token_hex, without importing secrets)
    return {**env, RUN_MARKER: token}, f"{RUN_MARKER}={token}".encode()


class RunProcesses:
    """The processes of one hook run besides its program (its strays): every descendant of
    the program and every adopted orphan carrying the run's ``marker`` (see hook_descendants),
    each signalled through a pidfd and reaped here once it is this process's child.

    The program itself is reaped by whoever started it; its process group is signalled by
    ``kill`` (the program's pid is its group's id)."""

    __slots__ = ("escaped", "marker", "program", "since", "strays")

    def __init__(self, program: int, marker: bytes) -> None:
        self.program = program
        self.marker = marker
        #: When the program started (taken while it runs: reaped, it has no /proc entry).
        self.since = _start_time(program) if _LINUX else None
        self.strays: dict[int, _Stray] = {}
        #: Whether a process of this run left its process group (then a last sweep is made).
        self.escaped = False

    def find(self) -> None:
        """Take note of the run's processes alive now (call it before the group dies: its
        members' children are still theirs then)."""
        found, unsure = hook_descendants(self.program, self.marker, self.since)
        self.escaped = self.escaped or unsure
        for pid in found:
            if pid not in self.strays and (stray := _Stray.open(pid)) is not None:
                self.strays[pid] = stray

    def signal(self, sig: int) -> bool:
        """Signal every stray still alive; whether there was one."""
        alive = False
        for stray in self.strays.values():
            if not stray.exited():
                stray.signal(sig)
                alive = True
        return alive

    def alive(self) -> bool:
        """Whether a member of the program's group or a stray is still running."""
        return signal_group(self.program, 0) or any(not s.exited() for s in self.strays.values())

    def kill(self) -> None:
        """SIGKILL the program's group and every process of the run, found again now."""
        signal_group(self.program, signal.SIGKILL)
        self.find()
        self.signal(signal.SIGKILL)

    def release(self) -> None:
        """Hand the strays (signalled) over to be reaped: now, or at a later hook's end."""
        self.escaped = self.escaped or bool(self.strays)
        _UNREAPED.extend(self.strays.values())
        self.strays = {}
        _reap_strays()

    async def settle(self) -> None:
        """After ``release``: reap the killed strays, and kill the run's processes that turn
        up meanwhile (see _settle_strays), within REAP_GRACE."""
        if self.escaped or _UNREAPED:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + REAP_GRACE
            await _settle_strays(self.program, self.marker, self.since, deadline)


@dataclass(slots=True)
class Completed:
    """How a hook program ended."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    overflowed: bool
    stdout_truncated_by_grandchild: bool


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; False when no process of it is left to signal."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _Child:
    """One spawned program: its pipes, its exit, and the clean-up of all of it."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pid: int,
        stdin_fd: int,
        stdout_fd: int,
        stderr_fd: int,
        stdin_data: bytes,
        max_stdout: int,
        marker: bytes = b"",
    ) -> None:
        self.loop = loop
        self.pid = pid
        self.run = RunProcesses(pid, marker)
        self.returncode: int | None = None
        self.exited: asyncio.Future[int] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()
        self.max_stdout = max_stdout
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.overflowed = False
        self._open_readers = 2
        self._fds: set[int] = {stdin_fd, stdout_fd, stderr_fd}
        self._kill_handle: asyncio.TimerHandle | None = None
        for fd in self._fds:
            os.set_blocking(fd, False)
        self._pidfd = -1
        if _HAS_PIDFD:
            try:
                self._pidfd = os.pidfd_open(pid)
            except OSError:
                self._pidfd = -1
        if self._pidfd >= 0:
            loop.add_reader(self._pidfd, self._on_exit)
        else:  # pragma: no cover - kernels without pidfd
            loop.run_in_executor(None, self._wait_blocking)
        loop.add_reader(stdout_fd, self._on_stdout, stdout_fd)
        loop.add_reader(stderr_fd, self._on_stderr, stderr_fd)
        self._stdin_fd = stdin_fd
        self._stdin_data = memoryview(stdin_data)
        self._write_stdin()

    # -- stdin -----------------------------------------------------------------------------

    def _write_stdin(self) -> None:
        fd = self._stdin_fd
        try:
            while self._stdin_data:
                n = os.write(fd, self._stdin_data)
                self._stdin_data = self._stdin_data[n:]
        except BlockingIOError:
            self.loop.add_writer(fd, self._on_writable)
            return
        except OSError:  # the program closed stdin early (EPIPE): it does not want it
            pass
        self._close_fd(fd)

    def _on_writable(self) -> None:
        self.loop.remove_writer(self._stdin_fd)
        self._write_stdin()

    # -- stdout / stderr -------------------------------------------------------------------

    def _read(self, fd: int) -> bytes | None:
        try:
            return os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _on_stdout(self, fd: int) -> None:
        chunk = self._read(fd)
        if chunk is not None:
            self._take_stdout(fd, chunk)

    def _on_stderr(self, fd: int) -> None:
        chunk = self._read(fd)
        if chunk is not None:
            self._take_stderr(fd, chunk)

    def _take_stdout(self, fd: int, chunk: bytes) -> None:
        if not chunk:
            self._reader_done(fd)
            return
        self.stdout += chunk
        if len(self.stdout) > self.max_stdout and not self.overflowed:
            self.overflowed = True
            del self.stdout[self.max_stdout :]
            self._reader_done(fd)
            self.terminate()

    def _take_stderr(self, fd: int, chunk: bytes) -> None:
        if not chunk:
            self._reader_done(fd)
            return
        room = STDERR_LIMIT - len(self.stderr)
        if room > 0:
            self.stderr += chunk[:room]

    def drain(self, stdout_fd: int, stderr_fd: int) -> None:
        """Take what is already buffered in the pipes (without waiting for more)."""
        for fd, take in ((stdout_fd, self._take_stdout), (stderr_fd, self._take_stderr)):
            while fd in self._fds:
                chunk = self._read(fd)
                if chunk is None:
                    break
                take(fd, chunk)

    def _reader_done(self, fd: int) -> None:
        if fd in self._fds:
            self.loop.remove_reader(fd)
            self._close_fd(fd)
            self._open_readers -= 1
            if self._open_readers == 0 and not self.eof.done():
                self.eof.set_result(None)

    # -- exit ------------------------------------------------------------------------------

    def _on_exit(self) -> None:
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored?): the status is lost
            pid, status = self.pid, -1
        if pid == 0:
            return
        self.loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
        self._exited(UNKNOWN_EXIT if status == -1 else os.waitstatus_to_exitcode(status))

    def _wait_blocking(self) -> None:  # pragma: no cover - kernels without pidfd
        try:
            _, status = os.waitpid(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            code = UNKNOWN_EXIT
        self.loop.call_soon_threadsafe(self._exited, code)

    def _exited(self, code: int) -> None:
        self.returncode = code
        if not self.exited.done():
            self.exited.set_result(code)
        # Anything left in the group, or marked as this run's, is a grandchild: it must not
        # outlive the hook.
        self.run.find()
        if signal_group(self.pid, signal.SIGTERM) | self.run.signal(signal.SIGTERM):
            self._schedule_kill()

    # -- termination -----------------------------------------------------------------------

    def terminate(self) -> None:
        """SIGTERM the whole group (and every stray) now, SIGKILL it after KILL_GRACE."""
        self.run.find()  # before the group dies: its members' children are still theirs
        signal_group(self.pid, signal.SIGTERM)
        self.run.signal(signal.SIGTERM)
        self._schedule_kill()

    def _kill_all(self) -> None:
        self.run.kill()

    def _schedule_kill(self) -> None:
        if self._kill_handle is None:
            self._kill_handle = self.loop.call_later(KILL_GRACE, self._kill_all)

    async def settle_group(self) -> None:
        """Give what is left of a SIGTERMed group the rest of KILL_GRACE to exit.

        close() then SIGKILLs any survivor: a SIGKILL left to the loop timer would never come if
        the loop closes next, and a grandchild ignoring SIGTERM would outlive its hook.
        """
        handle = self._kill_handle
        while handle is not None and self.loop.time() < handle.when():
            if not self.run.alive():
                return
            await asyncio.sleep(0.02)

    def close(self) -> None:
        """Release every fd; a still-running program's group is killed, reaped when it dies."""
        for fd in list(self._fds):
            with contextlib.suppress(Exception):
                self.loop.remove_reader(fd)
            with contextlib.suppress(Exception):
                self.loop.remove_writer(fd)
            self._close_fd(fd)
        if self.returncode is None or self._kill_handle is not None:
            # Still running here means the caller could not wait out the grace period (the hook
            # coroutine was closed while cancelled); a pending kill means the group was sent
            # SIGTERM. A SIGKILL left to a loop timer would never come if the loop closes next,
            # and a program (or grandchild) ignoring SIGTERM would live on.
            self._kill_all()
            if self._kill_handle is not None:
                self._kill_handle.cancel()
        # Every stray was signalled; it is reaped here (or soon, at a later hook's end).
        self.run.release()

    def _close_fd(self, fd: int) -> None:
        if fd in self._fds:
            self._fds.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)


def _inheritable_fds() -> list[int]:
    """This process's inheritable descriptors past stderr, which posix_spawn would hand to
    the program (a socket of the host application, a pipe to a secret store); Popen with
    close_fds=True closes them in its child."""
    try:
        names = os.listdir(_FD_DIR)
    except OSError:  # pragma: no cover - no descriptor listing on this system
        return []
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            try:
                if os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # closed since, or listdir's own descriptor
                continue
    return found


def _spawn(
    executable: str,
    argv: list[str],
    env: dict[str, str],
    cwd: str | None,
    fds: tuple[int, int, int],
) -> int:
    stdin_r, stdout_w, stderr_w = fds
    if cwd is None:
        # posix_spawn: no fork() of this (possibly multithreaded) interpreter.
        return os.posix_spawn(
            executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, stdin_r, 0),
                (os.POSIX_SPAWN_DUP2, stdout_w, 1),
                (os.POSIX_SPAWN_DUP2, stderr_w, 2),
                *((os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable_fds()),
            ],
            setpgroup=0,
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    proc = subprocess.Popen(
        argv,
        executable=executable,
        stdin=stdin_r,
        stdout=stdout_w,
        stderr=stderr_w,
        cwd=cwd,
        env=env,
        process_group=0,
        close_fds=True,
    )
    # We reap the child ourselves; tell Popen it is none of its business any more.
    proc.returncode = 0
    return proc.pid


async def _reaped(child: _Child) -> None:
    """Wait out the grace period and the SIGKILL of a terminated program, so it is reaped here.

    Returning earlier would leave the kill and the reaping to the event loop: a loop closed in
    the meantime would leak a program that ignores SIGTERM, its pidfd and, later, a zombie.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_GRACE + REAP_GRACE):
            await asyncio.shield(child.exited)


async def run_program(
    executable: str,
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    stdin: bytes,
    timeout: float,
    max_stdout: int,
) -> Completed:
    """Run one program to completion (or to its timeout); raise OSError if it cannot start."""
    loop = asyncio.get_running_loop()
    env, marker = marked(env)
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    try:
        pid = _spawn(executable, argv, env, cwd, (stdin_r, stdout_w, stderr_w))
    except BaseException:
        for fd in (stdin_w, stdout_r, stderr_r):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
    child = _Child(loop, pid, stdin_w, stdout_r, stderr_r, stdin, max_stdout, marker)
    timed_out = False
    held_open = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(child.exited)
                if not child.eof.done() and not child.overflowed:
                    try:
                        async with asyncio.timeout(EOF_GRACE):
                            await asyncio.shield(child.eof)
                    except TimeoutError:
                        held_open = True
        except TimeoutError:
            timed_out = True
            child.terminate()
            await _reaped(child)
        except asyncio.CancelledError:
            child.terminate()
            await _reaped(child)
            raise
        child.drain(stdout_r, stderr_r)
        await child.settle_group()
    finally:
        child.close()
    await child.run.settle()
    return Completed(
        returncode=child.returncode,
        stdout=bytes(child.stdout),
        stderr=bytes(child.stderr),
        timed_out=timed_out,
        overflowed=child.overflowed,
        stdout_truncated_by_grandchild=held_open,
    )
