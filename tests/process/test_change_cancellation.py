"""Review: a configuration change is atomic for the caller that made it.

A caller cancelled before its change commits (while the config_change hooks run) leaves the
configuration and the change history as they were; once the hooks let the change through, it
applies and is recorded in full even if its caller is cancelled meanwhile (say, while removing
a trigger waits for the trigger's runner to stop), so the configuration, ``config_history``
and what the config_change hooks were told always agree.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from _process_support import Recorder, eventually
from tether import AgentProcess, FileWatchTrigger, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel


class SlowConfigChange:
    """A config_change hook that waits until ``release`` is set; ``entered`` once it runs."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, ctx: HookContext) -> None:
        self.entered.set()
        await self.release.wait()


class SlowToLetGo:
    """A file_changed hook that holds its watcher until cancelled, then tidies up a while
    before it lets the cancellation through: stopping its trigger's runner takes that long."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.tidying = asyncio.Event()

    async def __call__(self, ctx: HookContext) -> None:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.tidying.set()
            await asyncio.sleep(0.3)
            raise


async def write_until(path: Path, condition: Callable[[], object]) -> None:
    """Rewrite ``path`` until ``condition`` holds: the watcher may start after a first write."""
    for n in range(20):
        await asyncio.to_thread(path.write_text, f"version {n}\n")
        with contextlib.suppress(AssertionError):
            await eventually(condition, timeout=0.5, what="the file_changed hook")
            return
    raise AssertionError(f"no file_changed for {path.name}")


def inbox(folder: Path) -> FileWatchTrigger:
    return FileWatchTrigger(id="inbox", watch_path=str(folder), patterns=["*.txt"], debounce_ms=10)


async def cancelled(task: asyncio.Task[bool]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_change_cancelled_while_its_config_change_hooks_run_applies_nothing() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), mission="first"))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, priority=10)
    slow = SlowConfigChange()
    process.hooks.register(HookEvent.CONFIG_CHANGE, slow)
    async with process:
        change = asyncio.create_task(process.set_mission("second"))
        await slow.entered.wait()
        await cancelled(change)
        assert process.config.mission == "first"
        assert process.config_history == []
        slow.release.set()
        assert await process.set_mission("third") is True  # the lock was let go
        assert process.config.mission == "third"
        assert [c["details"] for c in process.config_history] == [{"mission": "third"}]
    assert [d["mission"] for d in rec.of(HookEvent.CONFIG_CHANGE)] == ["second", "third"]


async def test_a_rollback_cancelled_while_its_config_change_hooks_run_undoes_nothing() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), mission="first"))
    slow = SlowConfigChange()
    async with process:
        await process.set_mission("second")
        process.hooks.register(HookEvent.CONFIG_CHANGE, slow)
        rollback = asyncio.create_task(process.rollback())
        await slow.entered.wait()
        await cancelled(rollback)
        assert process.config.mission == "second"
        assert [c["details"] for c in process.config_history] == [{"mission": "second"}]
        slow.release.set()
        assert await process.rollback() is True
        assert process.config.mission == "first"
        assert process.config_history == []


async def test_a_trigger_removal_whose_caller_is_cancelled_midway_is_applied_and_recorded(
    tmp_path: Path,
) -> None:
    """Regression: removing a trigger awaits its runner's stop; a caller cancelled then left
    the trigger gone but the change unrecorded (rollback() could not bring it back), and let
    the next change in before the removal was over."""
    process = AgentProcess(
        "watcher", ProcessConfig(model=ScriptedModel(), triggers=[inbox(tmp_path)])
    )
    watch = SlowToLetGo()
    process.hooks.register(HookEvent.FILE_CHANGED, watch)
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE)
    async with process:
        await write_until(tmp_path / "ticket.txt", watch.entered.is_set)
        removal = asyncio.create_task(process.remove_trigger("inbox"))
        await watch.tidying.wait()  # the removal applies: it waits for the runner to stop
        undo = asyncio.create_task(process.rollback())  # waits for the removal to be over
        await cancelled(removal)
        assert process.triggers == []
        assert [c["change"] for c in process.config_history] == ["trigger_removed"]
        assert await undo is True  # it undid the removal, recorded in full before it began
        assert [i for i, _ in process.triggers] == ["inbox"]
        assert process.config_history == []
    assert [d["change"] for d in rec.of(HookEvent.CONFIG_CHANGE)] == [
        "trigger_removed",
        "rollback",
    ]
