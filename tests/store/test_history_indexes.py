"""The hook-run history's indexes: each filter of the API reads one (EXPLAIN QUERY PLAN), an
older file gets them, and the answers keep their order."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tether.hooks import HookRun
from tether.store import HistoryStore


def run(i: int, *, at: float | None = None, outcome: str = "success") -> HookRun:
    return HookRun(
        recorded_at=1_700_000_000.0 + i if at is None else at,
        hook_id=f"hook-{i}",
        hook_name="audit",
        event="task_created" if i % 2 else "task_completed",
        process_id="triage",
        source="code",
        mode="sync",
        outcome=outcome,
        duration_ms=0.1,
        error=None,
        patch_applied=False,
        dispatch_id=f"d-{i}",
        dispatch_depth=0,
        data_before={"i": i},
        data_after={"i": i},
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    history = HistoryStore(tmp_path / "tether.db")
    yield history
    history.close()


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ({"outcome": "blocked"}, "hook_runs_outcome (process_id=? AND outcome=?)"),
        ({"event": "task_created"}, "hook_runs_event (process_id=? AND event=?)"),
        ({"since": 1_700_000_005.0}, "hook_runs_process (process_id=? AND recorded_at>?)"),
        ({"last": 10}, "hook_runs_process (process_id=?)"),
        ({}, "hook_runs_process (process_id=?)"),
        ({"outcome": "blocked", "last": 3}, "hook_runs_outcome (process_id=? AND outcome=?)"),
    ],
)
def test_each_history_filter_searches_its_index_and_sorts_nothing(
    store: HistoryStore, filters: dict[str, Any], index: str
) -> None:
    store.write([run(i) for i in range(20)])
    plan = store.plan("triage", **filters)
    assert plan == [f"SEARCH hook_runs USING INDEX {index}"]


def test_a_history_file_made_before_the_indexes_gets_them(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    with sqlite3.connect(path) as db:  # the table as an earlier tether made it
        db.execute(
            "CREATE TABLE hook_runs (recorded_at REAL NOT NULL, hook_id TEXT, hook_name TEXT, "
            "event TEXT, process_id TEXT NOT NULL, source TEXT, mode TEXT, outcome TEXT, "
            "duration_ms REAL, error TEXT, patch_applied INTEGER, dispatch_id TEXT, "
            "dispatch_depth INTEGER, data_before TEXT, data_after TEXT)"
        )
    db.close()
    store = HistoryStore(path)
    try:
        assert store.plan("triage", outcome="blocked") == [
            "SEARCH hook_runs USING INDEX hook_runs_outcome (process_id=? AND outcome=?)"
        ]
    finally:
        store.close()


def test_the_last_runs_of_a_filter_come_oldest_first_ties_in_written_order(
    store: HistoryStore,
) -> None:
    store.write([run(i, outcome="blocked" if i % 3 == 0 else "success") for i in range(12)])
    store.write([run(100 + i, at=1_700_000_050.0, outcome="blocked") for i in range(3)])
    blocked = store.query("triage", outcome="blocked", last=4)
    assert [r.hook_id for r in blocked] == ["hook-9", "hook-100", "hook-101", "hook-102"]
    assert [r.hook_id for r in store.query("triage", last=2)] == ["hook-101", "hook-102"]
    assert store.query("triage", last=0) == []
    assert [r.data_before for r in store.query("triage", outcome="blocked")][:2] == [
        {"i": 0},
        {"i": 3},
    ]
