"""A hook that blocks the event loop (a blocking call inside ``async def``) cannot be
interrupted, but it is seen: past its timeout it is timed out when it returns (recorded, its
error saying why, fail_closed blocking), logged once with its name; with
``HookManager(loop_block_warn=...)`` a shorter hold is warned of too."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from tether import HookBlocked, HookContext, HookErrorInfo, HookEvent, HookManager
from tether.hooks import HookTimeoutError
from tether.hooks._history import HistoryRecorder

UPS = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


async def sleeps_in_the_loop(ctx: HookContext) -> None:
    time.sleep(0.2)  # noqa: ASYNC251 (blocking on purpose)
    ctx.data["prompt"] = "rewritten while blocking"


async def suspends_then_blocks(ctx: HookContext) -> None:
    await asyncio.sleep(0)
    time.sleep(0.2)  # noqa: ASYNC251


def blocked_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "blocked the event loop" in r.getMessage()]


@pytest.mark.parametrize("hook", [sleeps_in_the_loop, suspends_then_blocks])
async def test_a_hook_holding_the_loop_past_its_timeout_is_timed_out_and_recorded(
    hook: object, caplog: pytest.LogCaptureFixture
) -> None:
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    manager.register(UPS, hook, name="sleepy", timeout=0.05)  # type: ignore[arg-type]
    result = await manager.dispatch(UPS, DATA)
    assert result.fired == 0
    [(hook_id, error)] = result.errors
    assert isinstance(error, HookTimeoutError)
    assert "'sleepy'" in str(error)
    assert "blocked the event loop" in str(error)
    assert "over its 0.05s timeout" in str(error)
    [run] = history.runs()
    assert (run.hook_id, run.outcome) == (hook_id, "timed_out")
    assert run.error is not None
    assert "blocked the event loop" in run.error


async def test_it_is_logged_once_with_the_hooks_name_however_often_it_blocks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = HookManager()
    manager.register(UPS, sleeps_in_the_loop, name="sleepy", timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        for _ in range(2):
            result = await manager.dispatch(UPS, DATA)
            assert len(result.errors) == 1
    [line] = blocked_lines(caplog)
    assert "sleepy" in line
    assert "user_prompt_submit" in line


async def test_a_fail_closed_hook_holding_the_loop_blocks_the_event() -> None:
    manager = HookManager()
    manager.register(UPS, sleeps_in_the_loop, name="gate", timeout=0.05, fail_closed=True)
    result = await manager.dispatch(UPS, DATA)
    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed): hook 'gate'")
    assert "blocked the event loop" in result.reason


async def test_the_error_listeners_hear_of_it() -> None:
    manager = HookManager()
    heard: list[HookErrorInfo] = []
    manager.on_error(heard.append)
    manager.register(UPS, sleeps_in_the_loop, name="sleepy", timeout=0.05)
    await manager.dispatch(UPS, DATA)
    [info] = heard
    assert (info.hook_name, info.event) == ("sleepy", "user_prompt_submit")
    assert isinstance(info.error, HookTimeoutError)


async def test_the_later_hooks_run_on_data_the_blocking_hook_cannot_reach() -> None:
    manager = HookManager()
    seen: list[str] = []

    async def later(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])

    manager.register(UPS, sleeps_in_the_loop, name="sleepy", timeout=0.05, priority=1)
    manager.register(UPS, later, name="later")
    result = await manager.dispatch(UPS, DATA)
    assert result.fired == 1
    assert seen == ["rewritten while blocking"]  # what it wrote before it returned stays


async def test_loop_block_warn_warns_of_a_hold_within_the_timeout_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = HookManager(loop_block_warn=0.05)
    manager.recorder = history = HistoryRecorder("p")
    manager.register(UPS, sleeps_in_the_loop, name="slow-but-allowed", timeout=10)
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        for _ in range(2):
            result = await manager.dispatch(UPS, DATA)
            assert (result.fired, result.errors) == (1, [])
    [line] = blocked_lines(caplog)
    assert "slow-but-allowed" in line
    assert [run.outcome for run in history.runs()] == ["applied", "applied"]


async def test_a_quick_hook_and_a_hook_that_awaits_are_never_flagged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = HookManager(default_timeout=0.05, loop_block_warn=0.05)

    async def quick(ctx: HookContext) -> None:
        ctx.data["seen"] = True

    async def awaits(ctx: HookContext) -> None:
        await asyncio.sleep(0.01)

    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked("no")

    manager.register(UPS, quick, name="quick", priority=2)
    manager.register(UPS, awaits, name="awaits", priority=1)
    manager.register(UPS, refuses, name="refuses")
    with caplog.at_level(logging.WARNING, logger="tether.hooks"):
        result = await manager.dispatch(UPS, DATA)
    assert (result.fired, result.errors, result.blocked) == (3, [], True)
    assert blocked_lines(caplog) == []


@pytest.mark.parametrize("bad", [0, -1.0, True, "1"])
def test_loop_block_warn_takes_a_positive_number_of_seconds(bad: object) -> None:
    with pytest.raises(ValueError, match=r"loop_block_warn must be a number of seconds > 0"):
        HookManager(loop_block_warn=bad)  # type: ignore[arg-type]


async def test_each_hold_is_counted_in_the_managers_loop_blocks_by_event_and_kind() -> None:
    manager = HookManager(loop_block_warn=0.05)
    manager.register(UPS, sleeps_in_the_loop, name="sleepy", timeout=0.05)
    manager.register(HookEvent.TASK_COMPLETED, sleeps_in_the_loop, name="slow", timeout=10)
    for _ in range(2):
        await manager.dispatch(UPS, DATA)
    await manager.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})
    assert manager.loop_blocks == {
        ("user_prompt_submit", "timed_out"): 2,
        ("task_completed", "warned"): 1,
    }
