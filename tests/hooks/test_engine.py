"""Review of the hook engine: contract deviations found by reading the reference, each pinned."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from _cancellation_support import swallows_its_cancellation

from _process_support import alive
from _shell_support import parent_of_a_stubborn_grandchild
from tether import HookConfig, HookContext, HookEvent, HookManager, HookTimeoutError, ShellHook
from tether.hooks._history import HistoryRecorder

CREATED = HookEvent.TASK_CREATED
TASK = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


async def test_a_command_hook_config_with_the_largest_allowed_timeout_can_be_registered() -> None:
    manager = HookManager()
    hook_id = manager.register_config(
        HookConfig(event="task_completed", command=["/bin/true"], timeout=3600)
    )
    assert manager.registered(HookEvent.TASK_COMPLETED) == [hook_id]


async def test_a_fail_closed_hook_that_swallows_its_timeout_cancellation_still_blocks() -> None:
    manager = HookManager()
    manager.register(CREATED, swallows_its_cancellation, timeout=0.1, fail_closed=True)
    result = await manager.dispatch(CREATED, TASK)
    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed)")
    assert [type(e) for _, e in result.errors] == [HookTimeoutError]


async def test_a_hook_that_swallows_its_timeout_cancellation_is_recorded_timed_out() -> None:
    manager = HookManager()
    manager.register(HookEvent.TASK_COMPLETED, swallows_its_cancellation, timeout=0.1)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(HookEvent.TASK_COMPLETED, {**TASK, "outcome": "success"})
    assert [run.outcome for run in history.runs()] == ["timed_out"]


async def test_an_async_hook_that_swallows_its_timeout_cancellation_is_recorded_timed_out() -> None:
    manager = HookManager()
    manager.register(CREATED, swallows_its_cancellation, timeout=0.1, mode="async")
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(CREATED, TASK)
    runs: list[Any] = []
    for _ in range(100):
        runs = history.runs()
        if runs:
            break
        await asyncio.sleep(0.02)
    assert [run.outcome for run in runs] == ["timed_out"]


def test_a_grandchild_ignoring_sigterm_is_killed_even_when_the_loop_closes_right_after(
    tmp_path: Path, make_script: Any
) -> None:
    parent, pidfile = parent_of_a_stubborn_grandchild(tmp_path, make_script)
    hook = ShellHook([parent], timeout=30)
    context = HookContext(HookEvent.TASK_COMPLETED, "p", {"outcome": "success"})

    asyncio.run(hook.run(context))  # the loop is closed as soon as the hook returns

    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert not alive(pid)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_command_hook_that_writes_the_data_back_unchanged_is_recorded_passed(
    make_script: Any,
) -> None:
    echo = make_script(
        """
        import json, sys
        print(json.dumps({"data": json.load(sys.stdin)["data"]}))
        """
    )
    manager = HookManager()
    manager.register_config(HookConfig(event="task_created", command=[echo]))
    manager.recorder = history = HistoryRecorder("p")
    result = await manager.dispatch(CREATED, TASK)
    assert result.data == TASK
    assert [(run.outcome, run.patch_applied) for run in history.runs()] == [("passed", False)]


async def test_a_hook_that_sets_ctx_data_to_a_non_dict_is_a_hook_error_and_is_undone() -> None:
    from tether import HookEvent, HookManager

    async def breaks(ctx: HookContext) -> None:
        ctx.data = None  # type: ignore[assignment]

    manager = HookManager()
    manager.register(HookEvent.TASK_COMPLETED, breaks)
    result = await manager.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})
    assert result.data == {"outcome": "success"}
    [(_, error)] = result.errors
    assert "not a dict" in str(error)


async def test_a_non_dict_is_undone_before_the_next_hook_and_blamed_on_its_hook() -> None:
    from tether import HookEvent, HookManager

    async def breaks(ctx: HookContext) -> None:
        ctx.data = "oops"  # type: ignore[assignment]

    async def later(ctx: HookContext) -> None:
        ctx.set("seen", ctx.data["outcome"])  # the data it sees is a dict again

    manager = HookManager()  # no recorder: the same check as a recorded dispatch's
    bad = manager.register(HookEvent.TASK_COMPLETED, breaks, priority=1, name="breaks")
    manager.register(HookEvent.TASK_COMPLETED, later)
    result = await manager.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})
    assert result.data == {"outcome": "success", "seen": "success"}
    [(hook_id, error)] = result.errors
    assert hook_id == bad
    assert "left a str, not a dict, by hook 'breaks'" in str(error)


async def test_a_recorded_hook_that_sets_ctx_data_to_a_non_dict_is_recorded_failed() -> None:
    from tether import HookEvent, HookManager
    from tether.hooks._history import HistoryRecorder

    async def breaks(ctx: HookContext) -> None:
        ctx.data = ["not", "a", "dict"]  # type: ignore[assignment]

    async def later(ctx: HookContext) -> None:
        ctx.set("seen", sorted(ctx.data))

    manager = HookManager()
    manager.recorder = recorder = HistoryRecorder("p")
    manager.register(HookEvent.TASK_COMPLETED, breaks, priority=1)
    manager.register(HookEvent.TASK_COMPLETED, later)
    result = await manager.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})
    assert result.data == {"outcome": "success", "seen": ["outcome"]}
    assert [r.outcome for r in recorder.runs()] == ["failed", "applied"]
    assert len(result.errors) == 1


async def test_removing_by_a_tag_that_is_not_a_string_is_a_type_error() -> None:
    import pytest

    from tether import HookEvent, HookManager

    async def untagged(ctx: HookContext) -> None:
        return None

    manager = HookManager()
    manager.register(HookEvent.TASK_COMPLETED, untagged)
    with pytest.raises(TypeError, match="tag must be a string"):
        await manager.remove_by_tag(None)  # type: ignore[arg-type]
    assert len(manager) == 1
