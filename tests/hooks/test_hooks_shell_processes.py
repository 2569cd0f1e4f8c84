"""Command hooks and the processes they leave: groups killed, children reaped, no fd leaked."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from _process_support import pid_in, proc_state, read_pid
from _shell_support import parent_of_a_stubborn_grandchild
from tether import CommandHookError, HookContext, HookEvent, HookManager, ShellHook

PY = sys.executable

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc"),
]


def ctx() -> HookContext:
    return HookContext(HookEvent.TASK_COMPLETED, "p", {"outcome": "success"})


def is_dead(pid: int) -> bool:
    return proc_state(pid) in (None, "Z")


async def wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not is_dead(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def wait_gone(pid: int, within: float = 5.0) -> bool:
    """Wait until the process is gone from /proc: dead and reaped."""
    deadline = time.monotonic() + within
    while proc_state(pid) is not None:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def children() -> set[int]:
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        text = Path(f"/proc/self/task/{task}/children").read_text()
        found.update(int(pid) for pid in text.split())
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def is_our_child(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


async def test_a_timed_out_hooks_grandchild_is_killed_with_its_process_group(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    hook = ShellHook(["/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], timeout=0.5)

    with pytest.raises(CommandHookError, match="timed out"):
        await hook.run(ctx())

    grandchild = await read_pid(pidfile)
    assert await wait_dead(grandchild)


async def test_a_program_ignoring_sigterm_is_killed_and_reaped_before_run_returns(
    tmp_path: Path,
) -> None:
    """Regression: run() used to return right after SIGTERM and leave the kill to the loop."""
    pidfile = tmp_path / "program.pid"
    hook = ShellHook(stubborn_program(pidfile), timeout=0.5)

    with pytest.raises(CommandHookError, match="timed out"):
        await hook.run(ctx())

    pid = pid_in(pidfile)
    assert pid is not None
    assert proc_state(pid) is None  # killed and already reaped: no zombie either
    assert not is_our_child(pid)


async def test_a_grandchild_holding_stdout_open_does_not_hang_the_hook(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = f'sleep 60 & echo $! > {pidfile}; echo \'{{"data": {{"ok": true}}}}\''
    hook = ShellHook(["/bin/sh", "-c", script], timeout=30)

    started = time.monotonic()
    result = await hook.run(ctx())

    assert time.monotonic() - started < 10  # bounded: far below the hook's own timeout
    assert result.data == {"ok": True}
    assert await wait_dead(await read_pid(pidfile))


async def test_a_grandchild_ignoring_sigterm_that_holds_stdout_is_killed(
    tmp_path: Path, make_script: Any
) -> None:
    parent, pidfile = parent_of_a_stubborn_grandchild(tmp_path, make_script)

    started = time.monotonic()
    result = await ShellHook([parent], timeout=30).run(ctx())

    assert time.monotonic() - started < 10
    assert result.data is None
    assert await wait_dead(await read_pid(pidfile))


async def test_a_program_over_the_output_limit_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "program.pid"
    program = (
        f"import os, sys; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
        "sys.stdout.write('x' * 100_000); sys.stdout.flush(); import time; time.sleep(60)"
    )
    hook = ShellHook([PY, "-c", program], max_output_bytes=1000, timeout=30)

    started = time.monotonic()
    with pytest.raises(CommandHookError, match="max_output_bytes"):
        await hook.run(ctx())

    assert time.monotonic() - started < 10
    assert await wait_dead(await read_pid(pidfile))


async def test_a_flood_of_stderr_neither_blocks_the_program_nor_the_message() -> None:
    program = "import sys; sys.stderr.write('e' * 2_000_000); sys.stderr.flush(); print('{}')"

    result = await ShellHook([PY, "-c", program], timeout=30).run(ctx())

    assert result.data is None
    assert not result.block


async def test_a_program_that_ignores_a_large_stdin_still_succeeds() -> None:
    big = HookContext(HookEvent.TASK_COMPLETED, "p", {"blob": "x" * 2_000_000})

    result = await ShellHook(["/bin/true"]).run(big)

    assert result.data is None


async def test_a_program_reads_a_large_stdin_completely(make_script: Any) -> None:
    script = make_script(
        """
        import json, sys
        envelope = json.load(sys.stdin)
        print(json.dumps({"data": {"size": len(envelope["data"]["blob"])}}))
        """
    )
    big = HookContext(HookEvent.TASK_COMPLETED, "p", {"blob": "x" * 2_000_000})

    result = await ShellHook([script], timeout=30).run(big)

    assert result.data == {"size": 2_000_000}


def stubborn_program(pidfile: Path) -> list[str]:
    """A program that ignores SIGTERM and writes its pid to ``pidfile``."""
    code = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    return [PY, "-c", code]


async def test_cancelling_run_kills_and_reaps_the_program_before_it_returns(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "program.pid"
    hook = ShellHook(stubborn_program(pidfile), timeout=60)
    task = asyncio.create_task(hook.run(ctx()))
    pid = await read_pid(pidfile)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert proc_state(pid) is None
    assert not is_our_child(pid)


async def test_cancelling_a_dispatch_kills_the_running_program_at_once(tmp_path: Path) -> None:
    """Regression: the manager closes a cancelled hook, so the program was left to a loop timer."""
    pidfile = tmp_path / "program.pid"
    manager = HookManager()
    manager.register(HookEvent.TASK_COMPLETED, ShellHook(stubborn_program(pidfile)).callback)
    task = asyncio.create_task(manager.dispatch(HookEvent.TASK_COMPLETED))
    pid = await read_pid(pidfile)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while not is_dead(pid) and time.monotonic() < deadline:
        time.sleep(0.01)  # noqa: ASYNC251 - no await on purpose: the loop must not run a timer

    assert is_dead(pid)
    assert await wait_gone(pid)  # and the loop reaps it


async def test_a_program_started_with_cwd_is_reaped_too(tmp_path: Path) -> None:
    before = children()

    result = await ShellHook(["/bin/true"], cwd=tmp_path).run(ctx())

    assert result.data is None
    assert children() <= before


async def test_two_thousand_command_hooks_leave_no_fd_and_no_child_behind() -> None:
    manager = HookManager(default_timeout=30)
    for i in range(20):
        command = ["/bin/true"] if i % 2 else ["/bin/sh", "-c", "cat >/dev/null"]
        manager.register(HookEvent.TASK_COMPLETED, ShellHook(command).callback)
    await manager.dispatch(HookEvent.TASK_COMPLETED, {"warm": "up"})
    fds_before, children_before = open_fds(), children()
    limit = asyncio.Semaphore(8)

    async def one(n: int) -> int:
        async with limit:
            result = await manager.dispatch(HookEvent.TASK_COMPLETED, {"n": n})
            assert result.errors == []
            return result.fired

    fired = await asyncio.gather(*(one(n) for n in range(100)))

    assert sum(fired) == 2000
    assert open_fds() == fds_before
    assert children() <= children_before


async def test_a_shell_hooks_callback_in_code_gets_its_own_timeout_and_the_backstop() -> None:
    """The reference: a command hook's program is killed at its own timeout and the manager
    allows 5 s more. Regression: registered in code, it got the manager's default instead."""
    manager = HookManager(default_timeout=0.2)
    hook = ShellHook([sys.executable, "-c", "import time; time.sleep(0.5)"], timeout=2.0)
    hook_id = manager.register(HookEvent.TASK_CREATED, hook.callback)
    explicit = manager.register(HookEvent.TASK_COMPLETED, hook.callback, timeout=0.1)
    timeouts = {info.hook_id: info.timeout for info in manager.describe()}
    assert (timeouts[hook_id], timeouts[explicit]) == (2.0, 0.1)  # as declared
    result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    assert (result.fired, result.errors) == (1, [])
