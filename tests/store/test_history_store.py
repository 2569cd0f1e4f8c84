"""Hook-run history in SQLite: the journal's file, batched writes, runs that outlive a process."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig
from tether.hooks import HookBlocked, HookContext, HookEvent, HookManager, HookRun
from tether.hooks._history import BATCH, HistoryRecorder
from tether.models import ScriptedModel
from tether.store import HistoryStore

UPS = HookEvent.USER_PROMPT_SUBMIT
PROMPT_DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}

#: A first life of a process in its own interpreter: three hooks, two tickets, a clean stop.
FIRST_LIFE = textwrap.dedent(
    """
    import asyncio, json, sys

    from tether import AgentProcess, HookBlocked, HookEvent, ProcessConfig, TriggerEvent
    from tether.models import ScriptedModel


    async def audit(ctx):
        pass


    async def no_printers(ctx):
        if "printer" in ctx.data["prompt"]:
            raise HookBlocked("no printer tickets")


    async def flaky(ctx):
        raise RuntimeError("the audit log is full")


    async def main() -> None:
        config = ProcessConfig(model=ScriptedModel(), journal_path=sys.argv[1])
        process = AgentProcess("journaled", config)
        ids = {
            "audit": process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, audit, priority=2),
            "gate": process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, no_printers, priority=1),
            "flaky": process.hooks.register(HookEvent.TASK_COMPLETED, flaky),
        }
        async with process:
            await process.inject(TriggerEvent("desk", "webhook", {"ticket": "login fails"}))
            await process.inject(TriggerEvent("desk", "webhook", {"ticket": "printer jam"}))
            while len(process.history.runs(event="task_completed")) < 2:
                await asyncio.sleep(0.005)
        print(json.dumps(ids), flush=True)


    asyncio.run(main())
    """
)


async def run_first_life(tmp_path: Path, journal: Path) -> dict[str, str]:
    script = tmp_path / "first_life.py"
    script.write_text(FIRST_LIFE)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(journal), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(child.communicate(), timeout=60)
    assert child.returncode == 0
    ids: dict[str, str] = json.loads(out)
    return ids


def journaled(journal: Path, name: str = "journaled", **config: Any) -> AgentProcess:
    return AgentProcess(
        name, ProcessConfig(model=ScriptedModel(), journal_path=str(journal), **config)
    )


async def reads_only(ctx: HookContext) -> None:
    assert ctx.data is not None


async def test_runs_recorded_by_an_earlier_host_process_are_read_after_a_restart(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    ids = await run_first_life(tmp_path, journal)

    process = journaled(journal)
    runs = process.hook_runs()
    assert [(r.hook_id, r.event, r.outcome) for r in runs] == [
        (ids["audit"], "user_prompt_submit", "passed"),
        (ids["gate"], "user_prompt_submit", "passed"),
        (ids["flaky"], "task_completed", "failed"),
        (ids["audit"], "user_prompt_submit", "passed"),
        (ids["gate"], "user_prompt_submit", "blocked"),
        (ids["flaky"], "task_completed", "failed"),
    ]
    blocked = runs[4]
    assert (blocked.hook_name, blocked.process_id, blocked.source, blocked.mode) == (
        "no_printers",
        "journaled",
        "code",
        "sync",
    )
    assert blocked.error == "no printer tickets"
    assert blocked.dispatch_id == runs[3].dispatch_id != runs[0].dispatch_id
    assert runs[2].error == "the audit log is full"
    assert all(isinstance(r.patch_applied, bool) and r.duration_ms >= 0 for r in runs)


async def test_a_restarted_process_adds_its_runs_to_the_ones_it_found(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    await run_first_life(tmp_path, journal)

    process = journaled(journal)
    process.hooks.register(UPS, reads_only, name="second-life")
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    runs = process.hook_runs()
    assert len(runs) == 6 + 2  # the first life's, then this one's two hooks
    assert {r.hook_name for r in runs[6:]} == {"second-life", "Recorder"}
    assert process.hook_runs(hook="second-life", last=1)[0].outcome == "passed"
    assert len(process.hook_runs(hook="no_printers")) == 2


async def test_a_hook_id_names_a_hook_of_this_interpreter_and_a_name_any(tmp_path: Path) -> None:
    """Regression: hook ids are numbered afresh by each interpreter, so ``hook=<id>`` over the
    stored history also answered the runs of an earlier life's registration with that id."""
    journal = tmp_path / "tether.db"
    process = journaled(journal)
    own = process.hooks.register(UPS, reads_only, name="second-life")
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    earlier = HookRun(
        time.time() - 60, own, "first-life", "user_prompt_submit", "journaled", "code",
        "sync", "passed", 0.1, None, False, "0123abcd-7", 0,
    )  # fmt: skip
    HistoryStore(str(journal)).write([earlier])  # what an earlier interpreter stored
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    assert [r.hook_name for r in process.hook_runs(hook=own)] == ["second-life"]
    assert [r.dispatch_id for r in process.hook_runs(hook="first-life")] == ["0123abcd-7"]


async def test_the_filters_answer_the_same_from_sqlite_as_from_the_ring(tmp_path: Path) -> None:
    async def gate(ctx: HookContext) -> None:
        if ctx.data["trigger_id"] == "printers":
            raise HookBlocked("no printers")

    async def crash(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    process = journaled(tmp_path / "tether.db")
    process.hooks.register(UPS, reads_only, name="audit", priority=5)
    gate_id = process.hooks.register(UPS, gate, name="gate")
    process.hooks.register(HookEvent.TASK_COMPLETED, crash, name="crash")
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    async with process:
        await process.inject(ticket(trigger_id="helpdesk"))
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the first run")
        await asyncio.sleep(0.02)
        middle = time.time()
        await asyncio.sleep(0.02)
        await process.inject(ticket(trigger_id="printers"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="the second")
    filters: list[dict[str, Any]] = [
        {},
        {"event": "user_prompt_submit"},
        {"outcome": "blocked"},
        {"outcome": "failed"},
        {"hook": gate_id},
        {"hook": "audit"},
        {"since": middle},
        {"last": 3},
        {"last": 0},
        {"event": "task_completed", "outcome": "failed", "last": 1},
    ]
    for f in filters:
        assert process.hook_runs(**f) == process.history.runs(**f), f
    assert len(process.hook_runs()) == 8
    assert [r.outcome for r in process.hook_runs(hook=gate_id)] == ["passed", "blocked"]


async def test_each_process_reads_only_its_own_runs_from_a_shared_file(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    shared = HookManager()
    shared.register(HookEvent.SESSION_START, reads_only, name="hello")
    first = journaled(journal, "first")
    second = journaled(journal, "second")
    first.hooks.share(shared)
    second.hooks.share(shared)
    async with first, second:
        pass
    assert [r.process_id for r in first.hook_runs()] == ["first"]
    assert [r.process_id for r in second.hook_runs()] == ["second"]
    assert first.hook_runs()[0].source == "shared"


async def test_runs_go_to_the_journals_file_in_the_hook_runs_table(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    process = journaled(journal)
    process.hooks.register(HookEvent.SESSION_START, reads_only, name="hello")
    async with process:
        pass
    with sqlite3.connect(journal) as db:
        rows = db.execute("SELECT process_id, hook_name, outcome FROM hook_runs").fetchall()
        tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert rows == [("journaled", "hello", "passed")]
    assert {"events", "hook_runs"} <= tables


async def test_records_reach_the_store_in_a_batch_after_the_dispatch_not_during_it(
    tmp_path: Path,
) -> None:
    store = HistoryStore(tmp_path / "tether.db")
    writes: list[int] = []

    def sink(runs: list[HookRun]) -> None:
        writes.append(len(runs))
        store.write(runs)

    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = HistoryRecorder("p", sink=sink)
    for _ in range(5):
        await manager.dispatch(UPS, PROMPT_DATA)
    assert writes == []  # nothing was written on the dispatch path
    await eventually(lambda: writes, what="the timed flush")
    assert writes == [5]
    assert len(store.query("p")) == 5


async def test_a_full_batch_is_written_without_waiting_for_the_timer(tmp_path: Path) -> None:
    writes: list[int] = []
    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = HistoryRecorder("p", sink=lambda runs: writes.append(len(runs)))
    for _ in range(BATCH):
        await manager.dispatch(UPS, PROMPT_DATA)
    assert writes == [BATCH]


async def test_a_failing_store_write_is_logged_and_does_not_reach_the_dispatch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(runs: list[HookRun]) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = history = HistoryRecorder("p", sink=broken)
    result = await manager.dispatch(UPS, PROMPT_DATA)
    history.flush()
    assert result.fired == 1
    assert len(history.runs()) == 1
    assert "writing hook-run records failed" in caplog.text


async def test_hook_runs_of_a_process_that_has_not_flushed_yet_include_the_latest(
    tmp_path: Path,
) -> None:
    process = journaled(tmp_path / "tether.db")
    process.hooks.register(UPS, reads_only, name="audit")
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
        assert [r.hook_name for r in process.hook_runs(hook="audit")] == ["audit"]


async def test_the_last_n_of_the_store_are_the_newest_in_time_order(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "tether.db")
    manager = HookManager()
    manager.register(UPS, reads_only, name="a")
    manager.register(UPS, reads_only, name="b", priority=-1)
    manager.recorder = history = HistoryRecorder("p", sink=store.write)
    for n in range(4):
        await manager.dispatch(UPS, {**PROMPT_DATA, "event_id": f"e{n}"})
    history.flush()
    assert store.query("p", last=3) == history.runs(last=3)
    assert [r.hook_name for r in store.query("p", last=3)] == ["b", "a", "b"]


#: ``hook_runs`` as files made before runs recorded ``required`` have it.
OLD_HOOK_RUNS = (
    "CREATE TABLE hook_runs (recorded_at REAL NOT NULL, hook_id TEXT, hook_name TEXT, "
    "event TEXT, process_id TEXT NOT NULL, source TEXT, mode TEXT, outcome TEXT, "
    "duration_ms REAL, error TEXT, patch_applied INTEGER, dispatch_id TEXT, "
    "dispatch_depth INTEGER, data_before TEXT, data_after TEXT)"
)


async def test_a_file_made_before_runs_said_required_gains_the_column_and_keeps_its_runs(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    with sqlite3.connect(journal) as db:
        db.execute(OLD_HOOK_RUNS)
        db.execute(
            "INSERT INTO hook_runs VALUES (1.0, 'hook-1', 'old-gate', 'user_prompt_submit', "
            "'journaled', 'config', 'sync', 'passed', 2.5, NULL, 0, 'x-1', 0, NULL, NULL)"
        )
    db.close()

    async def gate(ctx: HookContext) -> None:
        pass

    process = journaled(journal)
    process.hooks.register(UPS, gate, name="gate", fail_closed=True)
    process.hooks.register(UPS, reads_only, name="audit", priority=-1)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    runs = process.hook_runs(event="user_prompt_submit")
    assert [(r.hook_name, r.outcome, r.required) for r in runs] == [
        ("old-gate", "passed", None),  # not known for a run stored before
        ("gate", "passed", True),
        ("audit", "passed", False),
    ]
    assert runs[0].as_dict()["required"] is None
    HistoryStore(journal)  # opening the file again finds the column in place
    with sqlite3.connect(journal) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(hook_runs)")]
    db.close()
    assert columns.count("required") == 1
