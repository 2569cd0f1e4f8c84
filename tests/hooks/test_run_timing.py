"""Each hook run is timed on its own, with ``time.perf_counter``: never a share of a chain's
time (``duration_shared`` stays in the records, always False)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tether import HookContext, HookEvent, HookManager, HookRun
from tether.hooks._history import HistoryRecorder
from tether.store import HistoryStore

UPS = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


async def passes(ctx: HookContext) -> None:
    return None


def chain(*hooks: Any) -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager(default_timeout=30)
    for i, fn in enumerate(hooks):
        manager.register(UPS, fn, name=f"h{i}", priority=-i)
    manager.recorder = history = HistoryRecorder("p", size=10_000)
    return manager, history


def last_dispatch(history: HistoryRecorder) -> list[HookRun]:
    runs = history.runs()
    last = runs[-1].dispatch_id
    return [run for run in runs if run.dispatch_id == last]


async def test_a_slow_hook_in_a_fast_chain_gets_its_own_time_and_no_run_is_shared() -> None:
    slow = {"on": False}

    async def sometimes_slow(ctx: HookContext) -> None:
        if slow["on"]:
            time.sleep(0.03)  # noqa: ASYNC251 (holding the loop on purpose)

    manager, history = chain(passes, sometimes_slow, passes)
    for _ in range(300):  # long past any streak that once made a fast chain timed once
        await manager.dispatch(UPS, DATA)
    slow["on"] = True
    await manager.dispatch(UPS, DATA)
    first, sleeper, third = last_dispatch(history)
    assert sleeper.duration_ms >= 30.0  # its own sleep, all of it
    assert first.duration_ms < sleeper.duration_ms
    assert third.duration_ms < sleeper.duration_ms
    assert not any(run.duration_shared for run in history.runs())


async def test_a_dry_run_and_a_hook_that_suspends_are_timed_on_their_own() -> None:
    async def sleeps(ctx: HookContext) -> None:
        import asyncio

        await asyncio.sleep(0.02)

    manager, _history = chain(passes, sleeps)
    tracer = HistoryRecorder("p", trace=True)
    await manager.dispatch(UPS, DATA, recorder=tracer, dry_run=True)
    runs = tracer.runs()
    assert [run.duration_shared for run in runs] == [False, False]
    assert runs[1].duration_ms >= 20.0


async def test_durations_are_stored_unshared_and_read_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "tether.db")
    manager, _ = chain(passes, passes)
    manager.recorder = history = HistoryRecorder("p", sink=store.write)
    for _ in range(3):
        await manager.dispatch(UPS, DATA)
    history.flush()
    stored = store.query("p")
    assert len(stored) == 6
    assert not any(r.duration_shared for r in stored)
    assert stored[-1].as_dict()["duration_shared"] is False
    assert all(r.duration_ms >= 0.0 for r in stored)


def test_a_table_stored_before_shared_durations_reads_them_false(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE hook_runs (recorded_at REAL NOT NULL, hook_id TEXT, hook_name TEXT, "
        "event TEXT, process_id TEXT NOT NULL, source TEXT, mode TEXT, outcome TEXT, "
        "duration_ms REAL, error TEXT, patch_applied INTEGER, dispatch_id TEXT, "
        "dispatch_depth INTEGER, data_before TEXT, data_after TEXT, required INTEGER)"
    )
    db.execute(
        "INSERT INTO hook_runs VALUES (1.0, 'h1', 'old', 'stop', 'p', 'code', 'sync', "
        "'passed', 0.5, NULL, 0, 'x-1', 0, NULL, NULL, 1)"
    )
    db.commit()
    db.close()
    (run,) = HistoryStore(path).query("p")
    assert run.hook_name == "old"
    assert run.duration_shared is False


async def test_what_a_hook_wrote_is_deep_copied_into_the_result() -> None:
    lists: list[list[int]] = []

    async def writer(ctx: HookContext) -> None:
        mine = [1]
        lists.append(mine)
        ctx.data["items"] = mine

    manager, history = chain(passes, writer)
    result = await manager.dispatch(UPS, DATA)
    lists[0].append(2)  # what the hook kept of what it wrote
    assert result.data == {**DATA, "items": [1]}
    assert last_dispatch(history)[-1].outcome == "applied"


@pytest.mark.slow
async def test_the_copy_of_nested_data_and_a_context_factory_are_not_the_first_hooks_time() -> None:
    """Regression: the dispatch's start was read before the copy of nested data and before a
    context_factory ran, so a hook doing nothing was recorded as taking as long as copying the
    payload or building the context."""
    manager, history = chain(passes)

    def slow_factory(*args: Any) -> HookContext:
        time.sleep(0.05)  # the factory's own time
        return HookContext(*args)

    rows = {**DATA, "rows": [[i] for i in range(50_000)]}
    for data, factory in ((rows, None), (DATA, slow_factory)):
        began = time.perf_counter()
        await manager.dispatch(UPS, data, context_factory=factory)
        elapsed_ms = (time.perf_counter() - began) * 1e3
        assert last_dispatch(history)[0].duration_ms < elapsed_ms / 10
