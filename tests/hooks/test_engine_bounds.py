"""Review of the hook engine: a timeout really bounds a hook, and says so.

Whatever a hook makes of the cancellation its timeout throws into it (swallows it, turns it
into another error, refuses to be closed), the dispatch goes on at the timeout and the hook's
error is a HookTimeoutError: recorded ``timed_out``, and a fail_closed hook's block says it timed
out. Command hooks are real programs; their grandchildren are real processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from _cancellation_support import swallows_its_cancellation, wraps_its_cancellation

from _process_support import alive, read_pid
from tether.hooks import (
    CommandHookError,
    HookBlocked,
    HookConfig,
    HookContext,
    HookEvent,
    HookManager,
    HookTimeoutError,
)
from tether.hooks._background import drain
from tether.hooks._history import HistoryRecorder

CREATED = HookEvent.TASK_CREATED
TASK = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
PY = sys.executable


async def refuses_to_be_closed(ctx: HookContext) -> None:
    """Swallows its cancellation, then ignores the GeneratorExit that closes it."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(30)
    try:
        await asyncio.sleep(30)
    except GeneratorExit:
        await asyncio.sleep(30)


async def blocks_when_cancelled(ctx: HookContext) -> None:
    """A policy hook that refuses the action when it runs out of time (fail closed by hand)."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        raise HookBlocked("policy service too slow: refused") from None


@pytest.mark.parametrize("hook", [wraps_its_cancellation, refuses_to_be_closed])
async def test_a_hook_that_mishandles_its_timeout_cancellation_is_timed_out_and_bounded(
    hook: Any,
) -> None:
    """Regression: the hook's own error (or "coroutine ignored GeneratorExit") was recorded
    instead, as ``failed``, so a fail_closed block did not say the hook timed out."""
    manager = HookManager()
    manager.register(CREATED, hook, timeout=0.1, fail_closed=True)
    manager.recorder = history = HistoryRecorder("p")

    started = time.monotonic()
    result = await manager.dispatch(CREATED, TASK)

    assert time.monotonic() - started < 5  # bounded (the hook would sleep 30 s)
    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed): hook ")
    assert "timed out after 0.1s" in result.reason
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert [run.outcome for run in history.runs()] == ["timed_out"]


async def test_the_error_a_hook_made_of_its_cancellation_is_kept_as_the_cause() -> None:
    manager = HookManager()
    manager.register(CREATED, wraps_its_cancellation, timeout=0.1)
    result = await manager.dispatch(CREATED, TASK)
    ((_, error),) = result.errors
    assert isinstance(error, HookTimeoutError)
    assert isinstance(error.__cause__, RuntimeError)
    assert str(error.__cause__) == "request aborted"


async def test_a_hook_that_blocks_when_its_timeout_cancels_it_still_blocks() -> None:
    """A refusal is never turned into an error that lets the action through."""
    manager = HookManager()
    manager.register(CREATED, blocks_when_cancelled, timeout=0.1)
    result = await manager.dispatch(CREATED, TASK)
    assert (result.blocked, result.reason, result.errors) == (
        True,
        "policy service too slow: refused",
        [],
    )


async def test_an_async_hook_that_turns_its_timeout_cancellation_into_an_error_is_timed_out() -> (
    None
):
    manager = HookManager()
    manager.register(CREATED, wraps_its_cancellation, timeout=0.1, mode="async")
    manager.recorder = history = HistoryRecorder("p")
    errors: list[BaseException] = []
    manager.on_error(lambda info: errors.append(info.error))
    await manager.dispatch(CREATED, TASK)
    assert await drain(5)
    assert [run.outcome for run in history.runs()] == ["timed_out"]
    assert [type(e) for e in errors] == [HookTimeoutError]


@pytest.mark.parametrize(
    "mishandles",
    [
        pytest.param(wraps_its_cancellation, id="turns_it_into_an_error"),
        pytest.param(swallows_its_cancellation, id="swallows_it"),
    ],
)
async def test_an_extension_point_handler_that_mishandles_its_cancellation_timed_out_as_none(
    mishandles: Callable[[HookContext], Awaitable[None]],
) -> None:
    async def slow(**kwargs: Any) -> str:
        await mishandles(HookContext(CREATED))
        return "never"

    manager = HookManager()
    manager.register("ticket.classify", slow, timeout=0.1)
    errors: list[BaseException] = []
    manager.on_error(lambda info: errors.append(info.error))
    assert await manager.call("ticket.classify") == [None]
    assert [type(e) for e in errors] == [HookTimeoutError]


# -- command hooks: the program and what it started ----------------------------------------


async def _wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
async def test_a_command_hooks_timeout_bounds_the_dispatch_and_kills_the_grandchild_too(
    tmp_path: Path, make_script: Any
) -> None:
    """The program starts a grandchild that ignores SIGTERM and holds stdout open, then runs
    past its timeout: the dispatch ends at the timeout (plus the kill grace), not when either
    ends, and the whole process group is gone."""
    pidfile = tmp_path / "grandchild.pid"
    grandchild = make_script(
        f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        time.sleep(60)
        """,
        name="grandchild.py",
    )
    program = make_script(
        f"""
        import subprocess, time
        subprocess.Popen([{grandchild!r}])  # inherits stdout and keeps it open
        time.sleep(60)
        """,
        name="program.py",
    )
    manager = HookManager()
    manager.register_config(
        HookConfig(event="task_created", command=[program], timeout=1, fail_closed=True)
    )

    started = time.monotonic()
    result = await manager.dispatch(CREATED, TASK)
    took = time.monotonic() - started
    grandchild_pid = await read_pid(pidfile)

    try:
        assert took < 5  # far below the 60 s either process would run
        assert result.blocked
        assert result.reason is not None
        assert result.reason.startswith("hook failed (fail_closed): hook command ")
        assert result.reason.endswith("timed out after 1s and was killed")
        ((_, error),) = result.errors
        assert isinstance(error, CommandHookError)
        assert isinstance(error, HookTimeoutError)
        assert await _wait_dead(grandchild_pid)
    finally:
        if alive(grandchild_pid):
            os.kill(grandchild_pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
async def test_a_grandchild_in_a_session_of_its_own_holding_stdout_does_not_hold_the_dispatch(
    tmp_path: Path, make_script: Any
) -> None:
    """A grandchild that left the process group (setsid) does not hold the dispatch: the
    answer the program wrote before exiting is taken without waiting for the grandchild (which,
    on Linux, dies with the hook: see test_hook_strays)."""
    pidfile = tmp_path / "grandchild.pid"
    program = make_script(
        f"""
        import json, os, subprocess, sys, time
        subprocess.Popen(
            [sys.executable, "-c",
             "import os, time; open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid())); "
             "os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r}); time.sleep(60)"],
            start_new_session=True,  # stdout inherited: the pipe stays open
        )
        while not os.path.exists({str(pidfile)!r}):
            time.sleep(0.01)
        print(json.dumps({{"data": {{"prompt": "rewritten"}}}}))
        """,
    )
    manager = HookManager()
    manager.register_config(HookConfig(event="user_prompt_submit", command=[program], timeout=30))

    started = time.monotonic()
    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hello"})
    took = time.monotonic() - started
    grandchild_pid = await read_pid(pidfile)
    with contextlib.suppress(ProcessLookupError):  # gone with its hook where that is kept
        os.kill(grandchild_pid, signal.SIGKILL)

    assert took < 10  # far below both the hook's timeout and the grandchild's 60 s
    assert (result.errors, result.data) == ([], {"prompt": "rewritten"})


async def test_a_hooks_own_timeout_bounds_it_below_the_managers_default() -> None:
    manager = HookManager(default_timeout=30)
    manager.register(CREATED, wraps_its_cancellation, timeout=0.1)
    started = time.monotonic()
    result = await manager.dispatch(CREATED, TASK)
    assert time.monotonic() - started < 5
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert "timed out after 0.1s" in str(result.errors[0][1])


async def test_the_managers_default_timeout_bounds_a_hook_without_its_own() -> None:
    manager = HookManager(default_timeout=0.1)
    manager.register(CREATED, refuses_to_be_closed)
    result = await manager.dispatch(CREATED, TASK)
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert "timed out after 0.1s" in str(result.errors[0][1])


async def test_cancelling_a_dispatch_cancels_it_even_when_its_hook_swallows_the_cancellation() -> (
    None
):
    """Regression: a hook that swallowed its owner's cancellation and returned let the chain go
    on, so the dispatch (a worker being stopped) ignored its cancellation."""
    manager = HookManager()
    ran: list[str] = []

    async def swallows_then_returns(ctx: HookContext) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(30)
        await asyncio.sleep(0.05)  # carries on a little, then returns as if nothing happened

    async def later(ctx: HookContext) -> None:
        ran.append("later")

    manager.register(CREATED, swallows_then_returns, priority=1)
    manager.register(CREATED, later)
    task = asyncio.create_task(manager.dispatch(CREATED, TASK))
    await asyncio.sleep(0.05)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert ran == []


async def test_what_a_hook_changes_after_swallowing_its_timeout_is_not_kept() -> None:
    seen: list[dict[str, Any]] = []

    async def late_writer(ctx: HookContext) -> None:
        ctx.set("before", "kept: written within the timeout")
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(10)
        ctx.set("after", "written past the timeout")
        ctx.data["trigger_id"] = "rewritten past the timeout"

    async def later(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))

    manager = HookManager()
    manager.register(CREATED, late_writer, timeout=0.05)
    manager.register(CREATED, later)
    result = await manager.dispatch(CREATED, dict(TASK))
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]
    assert seen == [{**TASK, "before": "kept: written within the timeout"}]
    assert result.data == seen[0]
