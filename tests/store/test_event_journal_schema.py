"""The event journal's table has one index, its primary key: the reads a start and the dead
letters make take a process's rows by it, and a file an earlier version made (with a second
index on the state, written on every state change) loses that index when it is opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tether.store import Journal

OLD_SCHEMA = """
CREATE TABLE events (
    process TEXT NOT NULL, event_id TEXT NOT NULL, event TEXT NOT NULL, state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0, reason TEXT, error TEXT, updated_at REAL NOT NULL,
    PRIMARY KEY (process, event_id)
);
CREATE INDEX events_state ON events (process, state);
INSERT INTO events VALUES ('triage', 'e-1', '{"event_id": "e-1"}', 'queued', 0, NULL, NULL, 1.0);
INSERT INTO events VALUES ('triage', 'e-2', '{"event_id": "e-2"}', 'dead', 3, 'max retries',
    'boom', 2.0);
"""


def indexes(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='events'"
        ).fetchall()
    return sorted(name for (name,) in rows)


def test_an_older_file_loses_the_state_index_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    assert "events_state" in indexes(path)

    journal = Journal(path, "triage")
    journal.open()
    assert journal.unfinished() == [({"event_id": "e-1"}, 0)]
    assert [(e, a, r, err) for e, a, r, err, _ in journal.dead_letters()] == [
        ({"event_id": "e-2"}, 3, "max retries", "boom")
    ]
    journal.close()
    assert indexes(path) == ["sqlite_autoindex_events_1"]


def test_the_reads_of_a_start_take_the_process_rows_by_the_primary_key(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    journal = Journal(path, "triage")
    journal.queued({"event_id": "e-1", "payload": {}}, 0)
    journal.close()
    with sqlite3.connect(path) as db:
        for state in ("state IN ('queued', 'running')", "state='dead'"):
            plan = db.execute(
                f"EXPLAIN QUERY PLAN SELECT event FROM events WHERE process=? AND {state}",
                ("triage",),
            ).fetchall()
            assert [row[-1] for row in plan] == [
                "SEARCH events USING INDEX sqlite_autoindex_events_1 (process=?)"
            ]
