"""File watches over real folders: a path that does not exist yet, one deleted or replaced, and
file changes that a hook or a stop cuts off (dead-lettered, never lost)."""

from __future__ import annotations

import asyncio
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually
from tether import AgentProcess, FileWatchTrigger, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.process._triggers import FileWatchRunner


class Abort(BaseException):
    """A BaseException of the user's own (not an Exception: the engine does not isolate it)."""


def watcher(folder: Path, **config: Any) -> AgentProcess:
    trigger = FileWatchTrigger(
        id="inbox", watch_path=str(folder), patterns=["*.txt"], debounce_ms=10
    )
    return AgentProcess(
        "watcher", ProcessConfig(model=ScriptedModel(), triggers=[trigger], **config)
    )


def changes(rec: Recorder) -> list[tuple[str, str]]:
    return [(Path(d["path"]).name, d["event_type"]) for d in rec.of(HookEvent.FILE_CHANGED)]


async def write(path: Path, text: str = "ticket\n") -> None:
    await asyncio.to_thread(path.write_text, text)


async def watching(process: AgentProcess) -> None:
    """Wait until the "inbox" trigger's runner of the running ``process`` watches its folder."""
    runner = process._runners["inbox"]
    await asyncio.wait_for(runner.ready.wait(), 10)  # type: ignore[attr-defined]


async def drop_a_ticket(process: AgentProcess, folder: Path) -> None:
    """Once ``process`` watches ``folder``, write a ticket file into it."""
    await watching(process)
    await write(folder / "ticket.txt")


async def test_a_folder_that_does_not_exist_yet_is_watched_once_it_appears(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: the runner ended with FileNotFoundError and its trigger fired no more (only
    a log line said so), although the folder was created a moment later."""
    inbox = tmp_path / "inbox"
    process = watcher(inbox)
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED, HookEvent.TASK_COMPLETED)
    with caplog.at_level(logging.WARNING, logger="tether.process"):
        async with process:
            await asyncio.sleep(0.3)
            await asyncio.to_thread(inbox.mkdir)
            await write(inbox / "first.txt")  # before or after the watch begins: reported
            await write(inbox / "notes.log")  # no pattern matches
            await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="a run")
            await write(inbox / "second.txt")
            await eventually(lambda: ("second.txt", "added") in changes(rec), what="second.txt")
    assert changes(rec)[0] == ("first.txt", "added")
    assert {name for name, _ in changes(rec)} == {"first.txt", "second.txt"}
    assert f"file watch inbox: {inbox} does not exist; watching for it to appear" in caplog.text


async def test_a_watched_folder_deleted_and_made_again_is_watched_again(tmp_path: Path) -> None:
    """Regression: once the folder was deleted, the watch saw nothing more, even in a new folder
    of the same name, and nothing said so."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    process = watcher(inbox)
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED)
    async with process:
        runner = process._runners["inbox"]
        assert isinstance(runner, FileWatchRunner)
        await asyncio.wait_for(runner.ready.wait(), 10)
        await write(inbox / "old.txt")
        await eventually(lambda: ("old.txt", "added") in changes(rec), what="old.txt")
        await asyncio.to_thread(shutil.rmtree, inbox)
        await eventually(lambda: ("old.txt", "deleted") in changes(rec), what="the deletion")
        await asyncio.to_thread(inbox.mkdir)
        await write(inbox / "new.txt")
        await eventually(lambda: ("new.txt", "added") in changes(rec), what="new.txt")
        await write(inbox / "new.txt", "edited\n")
        await eventually(lambda: ("new.txt", "modified") in changes(rec), what="the edit")
    assert process.dead_letters == []


async def test_a_file_change_whose_file_changed_hook_raises_a_base_exception_is_dead_lettered(
    tmp_path: Path,
) -> None:
    """Regression: the runner logged the error and the file change was nowhere: not queued,
    not a dead letter."""

    async def abort(ctx: HookContext) -> None:
        raise Abort("the policy service is gone")

    process = watcher(tmp_path)
    process.hooks.register(HookEvent.FILE_CHANGED, abort)
    async with process:
        await drop_a_ticket(process, tmp_path)
        await eventually(lambda: process.dead_letters, what="the dead letter")
        dead = process.dead_letters[0]
    assert (dead["reason"], dead["error"]) == (
        "process failed",
        "a file_changed hook raised Abort: the policy service is gone",
    )
    assert dead["event"].trigger_type == "file_watch"
    assert Path(dead["event"].payload["path"]).name == "ticket.txt"


@pytest.mark.parametrize("event", [HookEvent.FILE_CHANGED, HookEvent.TASK_CREATED])
async def test_a_file_change_a_stop_cuts_off_in_its_hooks_is_dead_lettered_process_stopped(
    tmp_path: Path, event: HookEvent
) -> None:
    """Regression: stop() cancelled the runner while a file_changed or task_created hook of a
    change ran, and the change was lost without a trace."""
    entered = asyncio.Event()

    async def slow(ctx: HookContext) -> None:
        entered.set()
        await asyncio.sleep(30)

    process = watcher(tmp_path)
    process.hooks.register(event, slow)
    await process.start()
    try:
        await drop_a_ticket(process, tmp_path)
        await asyncio.wait_for(entered.wait(), 10)
    finally:
        await process.stop()
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == (
        "process stopped",
        f"the process stopped during {event.value}",
    )
    assert Path(dead["event"].payload["path"]).name == "ticket.txt"


async def test_a_file_change_cut_off_by_removing_its_trigger_is_dead_lettered_trigger_removed(
    tmp_path: Path,
) -> None:
    entered = asyncio.Event()

    async def slow(ctx: HookContext) -> None:
        entered.set()
        await asyncio.sleep(30)

    process = watcher(tmp_path)
    process.hooks.register(HookEvent.TASK_CREATED, slow)
    async with process:
        await drop_a_ticket(process, tmp_path)
        await asyncio.wait_for(entered.wait(), 10)
        await process.remove_trigger("inbox")
        [dead] = process.dead_letters
        assert process.state.value == "running"
    assert (dead["reason"], dead["error"]) == (
        "trigger removed",
        "its trigger was removed during task_created",
    )


@pytest.mark.slow
async def test_each_path_of_a_batch_is_reported_once_as_where_it_ended(tmp_path: Path) -> None:
    """Regression: a batch holding several changes of one path (a file edited, then deleted
    within debounce_ms) fired one event per change, in no set order: the agent could hear
    'modified' last for a file that was gone. A new folder fired an event too."""
    (tmp_path / "old.txt").write_text("old\n")
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), debounce_ms=400)
    process = AgentProcess("watcher", ProcessConfig(model=ScriptedModel(), triggers=[trigger]))
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED)
    async with process:
        await watching(process)

        def burst() -> None:  # all within one batch
            (tmp_path / "old.txt").write_text("edited\n")
            (tmp_path / "old.txt").unlink()
            (tmp_path / "sub").mkdir()
            (tmp_path / "new.txt").write_text("new\n")

        await asyncio.to_thread(burst)
        await eventually(lambda: len(changes(rec)) >= 2, what="the batch")
        await asyncio.sleep(0.5)
    assert changes(rec) == [("new.txt", "added"), ("old.txt", "deleted")]  # by path


@pytest.mark.slow
async def test_a_watched_file_saved_by_renaming_a_new_one_over_it_is_modified_once(
    tmp_path: Path,
) -> None:
    """Regression: an editor's atomic save (a new file renamed over the watched one) fired
    'modified', then 'added' again when the watch moved to the new file: two runs per save."""
    watched = tmp_path / "config.yaml"
    watched.write_text("v0\n")
    trigger = FileWatchTrigger(id="config", watch_path=str(watched), debounce_ms=10)
    process = AgentProcess("watcher", ProcessConfig(model=ScriptedModel(), triggers=[trigger]))
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED)

    def save(text: str) -> None:
        new = tmp_path / "config.yaml.tmp"
        new.write_text(text)
        new.replace(watched)

    async with process:
        runner = process._runners["config"]
        await asyncio.wait_for(runner.ready.wait(), 10)  # type: ignore[attr-defined]
        for n in (1, 2):
            await asyncio.to_thread(save, f"v{n}\n")
            await eventually(lambda n=n: len(changes(rec)) >= n, what=f"save {n}")  # type: ignore[misc]
            await asyncio.sleep(0.3)  # the watch moves to the new file meanwhile
        await write(watched, "v3\n")
        await eventually(lambda: len(changes(rec)) >= 3, what="the plain write")
        await asyncio.sleep(0.3)
    assert changes(rec) == [("config.yaml", "modified")] * 3


@pytest.mark.slow
async def test_changes_closer_together_than_debounce_ms_fire_once(tmp_path: Path) -> None:
    """Regression: debounce_ms only capped a batch, which ended after 50 ms without a change,
    so four writes 100 ms apart under debounce_ms=500 fired three events (three runs)."""
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), debounce_ms=500)
    process = AgentProcess("watcher", ProcessConfig(model=ScriptedModel(), triggers=[trigger]))
    rec = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED)
    async with process:
        await watching(process)
        for n in range(4):
            await write(tmp_path / "ticket.txt", f"draft {n}\n")
            await asyncio.sleep(0.1)
        await eventually(lambda: changes(rec), what="the batch")
        await asyncio.sleep(0.8)  # past debounce_ms: nothing more comes
    assert changes(rec) == [("ticket.txt", "added")]
