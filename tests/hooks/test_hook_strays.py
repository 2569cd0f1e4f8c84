"""Detached grandchildren die with their hook: a process that leaves the hook's process group
(``setsid cmd &``) is still killed and reaped at the hook's end (Linux: the runtime is a child
subreaper and each hook run's processes carry its marker); a persistent hook's, when its
program is killed (closed, timed out, crashed)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _process_support import children, proc_state, read_pid
from conftest import ScriptFactory
from tether import CommandHookError, HookConfig, HookContext, HookEvent, HookManager, ShellHook
from tether.hooks import PersistentHook
from tether.hooks._errors import CommandHookTimeoutError

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"),
        reason="the subreaper guarantee is Linux's",
    ),
]


def ctx() -> HookContext:
    return HookContext(HookEvent.TASK_COMPLETED, "p", {"outcome": "success"})


def sh(script: str, timeout: float = 10.0) -> ShellHook:
    return ShellHook(["/bin/sh", "-c", script], timeout=timeout)


def is_subreaper() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(0)
    assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    return flag.value == 1


async def test_a_setsid_grandchild_is_gone_when_its_hook_returns(tmp_path: Path) -> None:
    pidfile = tmp_path / "stray.pid"
    result = await sh(f"setsid sleep 300 & echo $! > {pidfile}; exit 0").run(ctx())
    assert result is None or result is not False
    stray = await read_pid(pidfile, whole_line=True)
    assert proc_state(stray) is None, "the detached sleep outlived its hook (or is a zombie)"


async def test_a_setsid_grandchild_of_a_timed_out_hook_is_gone(tmp_path: Path) -> None:
    pidfile = tmp_path / "stray.pid"
    hook = sh(f"setsid sleep 300 & echo $! > {pidfile}; sleep 60", timeout=0.3)
    with pytest.raises(CommandHookError, match="timed out"):
        await hook.run(ctx())
    assert proc_state(await read_pid(pidfile, whole_line=True)) is None


async def test_a_detached_grandchild_ignoring_sigterm_is_killed_and_reaped(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "stray.pid"
    stubborn = f"trap '' TERM; echo $$ > {pidfile}; while :; do sleep 0.05; done"
    await sh(f'setsid /bin/sh -c "{stubborn}" & sleep 0.3; exit 0').run(ctx())
    assert proc_state(await read_pid(pidfile, whole_line=True)) is None


async def test_the_children_of_a_detached_grandchild_die_too(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer.pid", tmp_path / "inner.pid"
    nested = f"sleep 300 & echo $! > {inner}; echo $$ > {outer}; wait"
    await sh(f"setsid /bin/sh -c '{nested}' & sleep 0.3; exit 0").run(ctx())
    assert proc_state(await read_pid(outer, whole_line=True)) is None
    assert proc_state(await read_pid(inner, whole_line=True)) is None


async def test_the_runtime_becomes_a_child_subreaper_at_its_first_command_hook() -> None:
    await sh("exit 0").run(ctx())
    assert is_subreaper()


async def test_a_child_the_host_started_itself_survives_a_hooks_end() -> None:
    """Only the hook run's own processes are killed, not another child of the runtime."""
    own = await asyncio.create_subprocess_exec("sleep", "60")
    try:
        await sh("setsid sleep 300 & exit 0").run(ctx())
        assert own.returncode is None
        assert proc_state(own.pid) == "S"
    finally:
        own.kill()
        await own.wait()


async def test_a_hook_run_leaves_no_child_of_the_runtime_behind(tmp_path: Path) -> None:
    before = children()
    for i in range(5):
        with contextlib.suppress(CommandHookError):
            await sh(f"setsid sleep 300 & setsid sleep 300 & exit {i % 2}").run(ctx())
    assert children() <= before


#: A persistent hook's program (raw JSON lines): each request starts ``setsid sleep 300 &``
#: through a shell that exits at once (the sleep, orphaned, holds the program's stdout and
#: stderr), writes the sleep's pid to ``sleep-<id>.pid`` in its first argument, then answers,
#: hangs (``hang``) or exits (``crash``).
PERSISTENT_SPAWNER = """
import json, os, sys, time

folder = sys.argv[1]
for line in sys.stdin:
    request = json.loads(line)
    rid = request["id"]
    os.system(f"setsid sleep 300 & echo $! > {folder}/sleep-{rid}.pid")
    prompt = request["data"].get("prompt")
    if prompt == "hang":
        time.sleep(60)
    if prompt == "crash":
        os._exit(3)
    print(json.dumps({"id": rid}), flush=True)
"""


def alive(pid: int) -> bool:
    return proc_state(pid) not in (None, "Z")


def prompt(text: str) -> HookContext:
    return HookContext(HookEvent.USER_PROMPT_SUBMIT, "p", {"prompt": text})


async def gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` is gone and reaped within ``within`` seconds (a timeout's kill runs in
    the background)."""
    deadline = time.monotonic() + within
    while proc_state(pid) is not None and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return proc_state(pid) is None


@pytest.fixture
def spawner(make_script: ScriptFactory, tmp_path: Path) -> list[str]:
    return [make_script(PERSISTENT_SPAWNER, name="spawner.py"), str(tmp_path)]


async def test_a_persistent_hooks_setsid_grandchildren_are_gone_when_it_closes(
    spawner: list[str], tmp_path: Path
) -> None:
    before = children()
    hook = PersistentHook(spawner)
    for text in ("a", "b", "c"):
        await hook.run(prompt(text))
    sleeps = [await read_pid(tmp_path / f"sleep-{n}.pid", whole_line=True) for n in (1, 2, 3)]
    assert all(alive(pid) for pid in sleeps)  # while the program runs

    await hook.aclose()

    assert [proc_state(pid) for pid in sleeps] == [None, None, None]
    assert children() <= before


async def test_closing_the_manager_kills_its_persistent_programs_setsid_grandchildren(
    spawner: list[str], tmp_path: Path
) -> None:
    before = children()
    manager = HookManager()
    manager.register_config(
        HookConfig(event="user_prompt_submit", command=spawner, persistent=True)
    )
    for text in ("a", "b"):
        result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": text})
        assert result.errors == []
    sleeps = [await read_pid(tmp_path / f"sleep-{n}.pid", whole_line=True) for n in (1, 2)]

    await manager.aclose()

    assert [proc_state(pid) for pid in sleeps] == [None, None]
    assert children() <= before


async def test_a_timeout_restart_kills_the_old_programs_setsid_grandchildren(
    spawner: list[str], tmp_path: Path
) -> None:
    before = children()
    hook = PersistentHook(spawner, timeout=0.5, restart_backoff=0)
    try:
        await hook.run(prompt("a"))
        with pytest.raises(CommandHookTimeoutError):
            await hook.run(prompt("hang"))
        await hook.run(prompt("b"))  # a new program
        assert hook.starts == 2
        old = [await read_pid(tmp_path / f"sleep-{n}.pid", whole_line=True) for n in (1, 2)]
        new = await read_pid(tmp_path / "sleep-3.pid", whole_line=True)

        assert [await gone(pid) for pid in old] == [True, True]
        assert alive(new)  # the running program's own are left alone
    finally:
        await hook.aclose()
    assert proc_state(new) is None
    assert children() <= before


async def test_a_crashed_program_whose_setsid_grandchild_holds_its_stdout_is_seen_and_swept(
    spawner: list[str], tmp_path: Path
) -> None:
    """The orphaned sleep keeps the program's stdout open: no EOF says it crashed, its exit
    does, and the sleep is killed with it."""
    before = children()
    hook = PersistentHook(spawner, timeout=10, restart_backoff=0)
    try:
        await hook.run(prompt("a"))
        with pytest.raises(CommandHookError, match="exited 3"):
            await hook.run(prompt("crash"))
        sleeps = [await read_pid(tmp_path / f"sleep-{n}.pid", whole_line=True) for n in (1, 2)]
        assert [await gone(pid) for pid in sleeps] == [True, True]
    finally:
        await hook.aclose()
    assert children() <= before


# -- daemons: re-parented descendants are reaped ------------------------------------------------

#: A hook program that daemonizes as ``MODE`` says, each process writing its pid to PIDS; the
#: daemon lives NAP seconds (it is killed at the hook's end if it still runs).
DAEMONIZING = """
import os, sys, time
sys.stdin.read()
mode, nap, pids = sys.argv[1], float(sys.argv[2]), sys.argv[3]

def note():
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\\n")

def daemon():
    note()
    time.sleep(nap)
    os._exit(0)

if os.fork() == 0:
    note()
    if mode == "double-fork":  # fork; setsid; fork (the classic daemonization)
        os.setsid()
        if os.fork() == 0:
            daemon()
    elif mode == "daemon(3)":  # fork; setsid, and the child is the daemon
        os.setsid()
        daemon()
    elif mode == "setsid-in-grandchild":  # fork; fork; setsid
        if os.fork() == 0:
            os.setsid()
            daemon()
    os._exit(0)
print("{}")
"""


@pytest.mark.parametrize(
    ("mode", "nap"),
    [
        ("double-fork", 30),
        ("double-fork", 0),
        ("daemon(3)", 0),
        ("setsid-in-grandchild", 0),
    ],
)
async def test_a_daemonizing_hook_program_leaves_no_zombie(
    make_script: ScriptFactory, tmp_path: Path, mode: str, nap: float
) -> None:
    """Regression: a hook program that daemonized (double fork) left a zombie of the runtime
    at most events (7 after 10): the first child, a session leader orphaned and adopted by
    the runtime (a subreaper), was a zombie with no environment left to tell its run by."""
    pids = tmp_path / "pids"
    program = make_script(DAEMONIZING, "daemonize.py")
    manager = HookManager()
    manager.register_config(
        HookConfig(event="task_created", command=[program, mode, str(nap), str(pids)])
    )
    for i in range(10):
        result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": f"e{i}"})
        assert not result.errors, result.errors
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) >= 10
    left = {pid: proc_state(pid) for pid in started if proc_state(pid) is not None}
    assert left == {}, f"{mode}: processes left behind (Z: a zombie)"


def _exited_children() -> list[subprocess.Popen[bytes]]:
    """Two children of this process, exited and not waited for (zombies): one in a session
    of its own (as start_new_session makes), one in this process's."""
    own = [
        subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"], start_new_session=True),
        subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"]),
    ]
    deadline = time.monotonic() + 10
    while any(proc_state(p.pid) != "Z" for p in own):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return own


async def test_the_hosts_own_exited_children_keep_their_exit_status(
    make_script: ScriptFactory, tmp_path: Path
) -> None:
    """The zombies reaped as a hook run's are never children the host started itself: their
    exit status stays for whoever waits for them."""
    own = _exited_children()
    program = make_script(DAEMONIZING, "daemonize.py")
    manager = HookManager()
    for mode in ("double-fork", "daemon(3)"):
        manager.register_config(
            HookConfig(event="task_created", command=[program, mode, "0", str(tmp_path / "p")])
        )
    for i in range(5):
        await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": f"e{i}"})
    assert [p.wait(timeout=5) for p in own] == [7, 3]
