"""Hook-run history in the runtime's SQLite file (written in batches by the recorder)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from ..hooks import HookRun, run_prefix
from ._sqlite import Lease

__all__ = ["HistoryStore"]

_COLUMNS = (
    "recorded_at",
    "hook_id",
    "hook_name",
    "event",
    "process_id",
    "source",
    "mode",
    "outcome",
    "duration_ms",
    "error",
    "patch_applied",
    "dispatch_id",
    "dispatch_depth",
    "data_before",
    "data_after",
    "required",
    "duration_shared",
    "changes",
    "notice",
)


_MAX_ROWS = 2**63 - 1

#: The indexes query() filters use, name -> columns. Every query names its process; each index
#: ends with the time, so the rows of a filter come out in time order (and rowid order for
#: ties, which every index entry ends with) and ``since`` and ``last`` bound a range of it.
_INDEXES = {
    "hook_runs_process": "process_id, recorded_at",  # since, last, no filter
    "hook_runs_event": "process_id, event, recorded_at",
    "hook_runs_outcome": "process_id, outcome, recorded_at",
}


class HistoryStore:
    """Rows of ``hook_runs``; one table for every process of the runtime."""

    def __init__(self, path: str | Path) -> None:
        self._file = Lease(path)
        self._file.prepare("hook_runs", _create)

    @property
    def _db(self) -> sqlite3.Connection:
        return self._file.db

    def close(self) -> None:
        """Give back this store's share of the file's connection (see Lease)."""
        self._file.release()

    def write(self, runs: list[HookRun]) -> None:
        rows = []
        for r in runs:
            rows.append(
                (
                    r.recorded_at,
                    r.hook_id,
                    r.hook_name,
                    r.event,
                    r.process_id,
                    r.source,
                    r.mode,
                    r.outcome,
                    r.duration_ms,
                    r.error,
                    int(r.patch_applied),
                    r.dispatch_id,
                    r.dispatch_depth,
                    None if r.data_before is None else json.dumps(r.data_before, default=str),
                    None if r.data_after is None else json.dumps(r.data_after, default=str),
                    None if r.required is None else int(r.required),
                    int(r.duration_shared),
                    None if r.changes is None else json.dumps(r.changes, default=str),
                    r.notice,
                )
            )
        # One transaction per batch (a savepoint of the writer's batch when written there,
        # see Lease.writing): a failed or killed batch leaves no part of itself.
        # A deleted or replaced file is refused (see Lease.check): kept for a later write.
        with self._file.writing(many=True) as db:
            db.executemany(
                f"INSERT INTO hook_runs ({', '.join(_COLUMNS)}) VALUES "
                f"({', '.join('?' * len(_COLUMNS))})",
                rows,
            )

    def query(
        self,
        process: str,
        *,
        event: str | None = None,
        outcome: str | None = None,
        hook: str | None = None,
        since: Any = None,
        last: int | None = None,
    ) -> list[HookRun]:
        """Runs of one process, oldest first, filtered like the in-memory ring."""
        sql, args = _select(process, event, outcome, hook, since, last)
        rows = self._file.reader.execute(sql, args).fetchall()
        if last is not None:
            rows.reverse()  # read newest first, to stop at the last ones
        return [_run(row) for row in rows]

    def plan(self, process: str, **filters: Any) -> list[str]:
        """How SQLite answers ``query(process, **filters)``: the lines of its EXPLAIN QUERY
        PLAN (each filter but ``hook`` reads an index of its own: see _INDEXES)."""
        sql, args = _select(process, **filters)
        return [row[-1] for row in self._file.reader.execute(f"EXPLAIN QUERY PLAN {sql}", args)]


def _select(
    process: str,
    event: str | None = None,
    outcome: str | None = None,
    hook: str | None = None,
    since: Any = None,
    last: int | None = None,
) -> tuple[str, list[Any]]:
    """The SELECT (and its arguments) of query(): oldest first, or with ``last`` newest first."""
    where = ["process_id = ?"]
    args: list[Any] = [process]
    if event is not None:
        where.append("event = ?")
        args.append(event)
    if outcome is not None:
        where.append("outcome = ?")
        args.append(outcome)
    if hook is not None:
        # Hook ids are numbered afresh by each interpreter: an id names a hook of this one
        # (its runs' dispatch ids carry this interpreter's prefix); a name matches any run.
        where.append("((hook_id = ? AND dispatch_id LIKE ?) OR hook_name = ?)")
        args += [hook, f"{run_prefix()}-%", hook]
    if since is not None:
        if isinstance(since, datetime):
            since = since.timestamp()
        elif isinstance(since, str):
            since = datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp()
        where.append("recorded_at >= ?")
        args.append(float(since))
    # Ties of recorded_at (runs of a chain timed once can share a time) keep the order the
    # runs were written in, which is chain order: rowid breaks them.
    sql = f"SELECT {', '.join(_COLUMNS)}, rowid AS seq FROM hook_runs WHERE {' AND '.join(where)}"
    if last is not None:
        args.append(min(max(last, 0), _MAX_ROWS))  # SQLite integers are 64-bit
        return f"{sql} ORDER BY recorded_at DESC, seq DESC LIMIT ?", args
    return f"{sql} ORDER BY recorded_at, seq", args


#: Reads one stored JSON document: what json.loads runs, without its checks for whitespace
#: around the document (the stored text is json.dumps output, which has none) and its
#: wrappers; a query answering 1,000 runs decodes 2,000 documents.
_scan = json.JSONDecoder().raw_decode


def _json(text: str | None) -> Any:
    return None if text is None else _scan(text)[0]


def _run(row: tuple[Any, ...]) -> HookRun:
    """A stored row (and its seq) as the HookRun it was written from."""
    values = list(row[:-1])  # without seq
    values[10] = bool(values[10])
    values[13] = _json(values[13])
    values[14] = _json(values[14])
    values[15] = None if values[15] is None else bool(values[15])
    values[16] = bool(values[16])  # NULL in a row stored before runs said so
    values[17] = _json(values[17])
    return HookRun(*values)


def _create(db: sqlite3.Connection) -> None:
    """The table of hook runs and its indexes (a table made before a column existed gets it)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS hook_runs (recorded_at REAL NOT NULL, hook_id TEXT, "
        "hook_name TEXT, event TEXT, process_id TEXT NOT NULL, source TEXT, mode TEXT, "
        "outcome TEXT, duration_ms REAL, error TEXT, patch_applied INTEGER, "
        "dispatch_id TEXT, dispatch_depth INTEGER, data_before TEXT, data_after TEXT, "
        "required INTEGER, duration_shared INTEGER, changes TEXT, notice TEXT)"
    )
    for name, columns in _INDEXES.items():
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON hook_runs ({columns})")
    _add_column(db, "required INTEGER")
    _add_column(db, "duration_shared INTEGER")
    _add_column(db, "changes TEXT")
    _add_column(db, "notice TEXT")


def _add_column(db: sqlite3.Connection, column: str) -> None:
    """Add ``column`` ("name TYPE") to a ``hook_runs`` table made before it existed; its rows
    read NULL there. Another store on the same file may add it first."""
    name = column.split()[0]
    if any(row[1] == name for row in db.execute("PRAGMA table_info(hook_runs)")):
        return
    try:
        db.execute(f"ALTER TABLE hook_runs ADD COLUMN {column}")
    except sqlite3.OperationalError:
        if not any(row[1] == name for row in db.execute("PRAGMA table_info(hook_runs)")):
            raise
