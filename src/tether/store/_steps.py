"""The step journal: each run's finished steps, and each process's conversation and state.

Two tables beside the event journal's, in the same SQLite file (and written through the same
per-file connection and lock, see ``_sqlite.Lease``):

``steps``   one row per step of an unfinished run: ``(process, event_id, step)`` with its
            ``state`` (``started`` or ``done``) and its data (JSON). A run's rows go when the
            run ends (see ``forget``); rows of an event the journal no longer holds are pruned
            at recovery.
``conversation``  one row per message of each process's conversation buffer, by ``seq``
            (kept as the buffer changes: new messages added, those compacted away deleted).
``approvals`` one row per approval pending (or answered, not yet acted on), by the tool
            call's idempotency key: what it asks, and the answer once given (JSON).
``context`` one row per process: its state dict (JSON).

Event ids are stored as the event journal stores them (secrets redacted: ``redact``), so a
step is found by the id the journal recovered. A write that fails raises the ``sqlite3``
error, its message naming the file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Protocol

from ._sqlite import BUSY_TIMEOUT, JournalWriteAbandoned, Lease, named

__all__ = ["Change", "Row", "StepJournal", "StepStore"]

#: SQLite's default: the WAL is checkpointed by the commit that takes it past this many pages.
WAL_AUTOCHECKPOINT: Final = 1000

#: One step as written: (step, state, data).
Row = tuple[str, str, dict[str, Any]]
#: One change of the stored conversation: (clear, drop_before, added (seq, JSON text) each).
Change = tuple[bool, int | None, list[tuple[int, str]]]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS steps (
    process     TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    step        TEXT NOT NULL,
    state       TEXT NOT NULL,
    data        TEXT NOT NULL,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (process, event_id, step)
);
CREATE TABLE IF NOT EXISTS conversation (
    process     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    message     TEXT NOT NULL,
    PRIMARY KEY (process, seq)
);
CREATE TABLE IF NOT EXISTS approvals (
    process     TEXT NOT NULL,
    key         TEXT NOT NULL,
    request     TEXT NOT NULL,
    decision    TEXT,
    updated_at  REAL NOT NULL,
    PRIMARY KEY (process, key)
);
CREATE TABLE IF NOT EXISTS context (
    process     TEXT PRIMARY KEY,
    state       TEXT NOT NULL,
    updated_at  REAL NOT NULL
);
"""


class StepJournal(Protocol):
    """What a process's durable runs need of where their steps are kept: ``StepStore`` (one
    host's SQLite file) or ``RedisStepStore`` (a cluster's Redis, see ``_redis_steps``)."""

    def stored_id(self, event_id: str) -> str: ...

    def write(
        self,
        event_id: str,
        rows: list[Row],
        at: float,
        *,
        state: dict[str, Any] | None = None,
        proceed: Callable[[], bool] | None = None,
    ) -> None: ...

    def write_now(
        self, event_id: str, rows: list[Row], state: dict[str, Any] | None = None
    ) -> bool: ...

    def forget(self, ended: list[tuple[str, float]]) -> None: ...

    def steps(self, event_id: str) -> dict[str, tuple[str, dict[str, Any]]]: ...

    def prune(self) -> None: ...

    def save_context(self, changes: list[Change], state: str | None) -> None: ...

    def context(self) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any] | None]: ...

    def save_approval(
        self, key: str, request: dict[str, Any], decision: dict[str, Any] | None
    ) -> None: ...

    def forget_approval(self, key: str) -> None: ...

    def approvals(self) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]: ...

    def close(self) -> None: ...


class StepStore:
    """The steps and the context of one process (see the module docstring)."""

    def __init__(
        self, path: str | Path, process: str, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.path = str(path)
        self.process = process
        self._file = Lease(path)
        self._key: Callable[[str], str] = redact if redact is not None else str
        self._file.prepare("steps", _create)

    def close(self) -> None:
        """Give back this store's share of the file's connection (see Lease)."""
        self._file.release()

    def stored_id(self, event_id: str) -> str:
        return self._key(event_id)

    # -- steps -------------------------------------------------------------------------------

    def write(
        self,
        event_id: str,
        rows: list[Row],
        at: float,
        *,
        state: dict[str, Any] | None = None,
        proceed: Callable[[], bool] | None = None,
    ) -> None:
        """Journal ``rows`` ((step, state, data) each) of the run of ``event_id``, in one
        transaction, as of ``at`` (``time.time()`` when the run made them: see forget).
        ``state``: the process's state dict, stored with them (a tool call's outcome and
        what it wrote land together). With ``proceed``, it is asked once the file's lock is
        held: False, and nothing is written (JournalWriteAbandoned)."""
        with named(self.path):
            self._transaction(event_id, rows, at, proceed, state)

    def write_now(
        self, event_id: str, rows: list[Row], state: dict[str, Any] | None = None
    ) -> bool:
        """``write`` at once, only if that cannot wait: False (nothing written) when another
        thread holds the file's connection or another program holds the file locked (the
        caller then hands the write to its writer thread). Made on the event loop, it never
        waits there: the busy timeout is 0 for it."""
        lock = self._file.write_lock
        if self._file.gone() is not None or not lock.acquire(blocking=False):
            return False
        try:
            db = self._file.db
            if db.in_transaction:  # this thread is the writer's, inside its batch: not now
                return False
            # No wait for the file's lock, and no checkpoint of the WAL (copying it into the
            # file, then a sync): the next write on the writer thread makes it.
            db.execute("PRAGMA busy_timeout=0")
            db.execute("PRAGMA wal_autocheckpoint=0")
            try:
                self._transaction(event_id, rows, time.time(), None, state)
            finally:
                db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT * 1000)}")
                db.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")
        except sqlite3.Error:
            return False  # busy, or worse: the writer thread's write will say which
        finally:
            lock.release()
        return True

    def _transaction(
        self,
        event_id: str,
        rows: list[Row],
        at: float,
        proceed: Callable[[], bool] | None,
        state: dict[str, Any] | None = None,
    ) -> None:
        # One transaction of its own, or a savepoint of the writer's batch it is made in (see
        # Lease.writing): the steps and the state land together or not at all.
        with self._file.writing(self.path, many=True) as db:
            if proceed is not None and not proceed():
                raise JournalWriteAbandoned(f"SQLite file {self.path}: write given up")
            key = self._key(event_id)
            db.executemany(
                "INSERT INTO steps (process, event_id, step, state, data, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (process, event_id, step) DO UPDATE SET "
                "state=excluded.state, data=excluded.data, updated_at=excluded.updated_at",
                [
                    (self.process, key, step, kind, json.dumps(data), at)
                    for step, kind, data in rows
                ],
            )
            if state is not None:
                self._apply(db, [], json.dumps(state, default=str))

    def forget(self, ended: list[tuple[str, float]]) -> None:
        """The runs of ``ended`` ((event_id, when it ended) each) ended: their steps go, not
        those made since (a later run of the event: a retry's, written at once while this
        write waited on the writer thread)."""
        self._run_many(
            "DELETE FROM steps WHERE process=? AND event_id=? AND updated_at<=?",
            [(self.process, self._key(event_id), at) for event_id, at in ended],
        )

    def steps(self, event_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
        """The journaled steps of the run of ``event_id``: {step: (state, data)}."""
        rows = self._read(
            "SELECT step, state, data FROM steps WHERE process=? AND event_id=? ORDER BY rowid",
            (self.process, self._key(event_id)),
        )
        return {step: (state, json.loads(data)) for step, state, data in rows}

    def prune(self) -> None:
        """Forget the steps of every event the event journal no longer holds unfinished (its
        run ended, or it was dead-lettered and cleared, before a crash let ``forget`` land)."""
        self._run(
            "DELETE FROM steps WHERE process=? AND event_id NOT IN (SELECT event_id FROM "
            "events WHERE process=? AND state IN ('queued', 'running', 'dead'))",
            (self.process, self.process),
        )

    # -- context -----------------------------------------------------------------------------

    def save_context(self, changes: list[Change], state: str | None) -> None:
        """Apply ``changes`` to the stored conversation, in order, and store ``state`` (JSON
        text; None: unchanged), in one transaction. A change is (``clear``: delete every
        message first, ``drop_before``: delete those of a lower seq, ``added``: (seq, JSON
        text) of the new messages)."""
        with named(self.path), self._file.writing(self.path, many=True) as db:
            self._apply(db, changes, state)

    def _apply(self, db: sqlite3.Connection, changes: list[Change], state: str | None) -> None:
        for clear, drop_before, added in changes:
            if clear:
                db.execute("DELETE FROM conversation WHERE process=?", (self.process,))
            elif drop_before is not None:
                db.execute(
                    "DELETE FROM conversation WHERE process=? AND seq<?",
                    (self.process, drop_before),
                )
            db.executemany(
                "INSERT OR REPLACE INTO conversation (process, seq, message) VALUES (?, ?, ?)",
                [(self.process, seq, message) for seq, message in added],
            )
        if state is not None:
            db.execute(
                "INSERT INTO context (process, state, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (process) DO UPDATE SET state=excluded.state, "
                "updated_at=excluded.updated_at",
                (self.process, state, time.time()),
            )

    def context(self) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any] | None]:
        """The stored conversation ((seq, message) each, in order) and state (None: none)."""
        messages = self._read(
            "SELECT seq, message FROM conversation WHERE process=? ORDER BY seq", (self.process,)
        )
        rows = self._read("SELECT state FROM context WHERE process=?", (self.process,))
        state = json.loads(rows[0][0]) if rows else None
        return [(seq, json.loads(message)) for seq, message in messages], state

    # -- approvals ---------------------------------------------------------------------------

    def save_approval(
        self, key: str, request: dict[str, Any], decision: dict[str, Any] | None
    ) -> None:
        """Journal the approval of the call ``key``: what it asks, its answer once given."""
        self._run(
            "INSERT INTO approvals (process, key, request, decision, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (process, key) DO UPDATE SET "
            "request=excluded.request, decision=excluded.decision, "
            "updated_at=excluded.updated_at",
            (
                self.process,
                key,
                json.dumps(request, default=str),
                None if decision is None else json.dumps(decision),
                time.time(),
            ),
        )

    def forget_approval(self, key: str) -> None:
        """The call ``key`` acted on its answer (or the wait ended): its approval goes."""
        self._run("DELETE FROM approvals WHERE process=? AND key=?", (self.process, key))

    def approvals(self) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        """(key, request, decision or None) of each approval journaled, oldest first."""
        rows = self._read(
            "SELECT key, request, decision FROM approvals WHERE process=? ORDER BY rowid",
            (self.process,),
        )
        return [(k, json.loads(r), json.loads(d) if d else None) for k, r, d in rows]

    # -- the file ----------------------------------------------------------------------------

    def _run(self, sql: str, args: tuple[Any, ...]) -> None:
        """One write, committed before it returns (or by the writer's batch it is made in)."""
        with named(self.path), self._file.writing(self.path) as db:
            db.execute(sql, args)

    def _run_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with named(self.path), self._file.writing(self.path, many=True) as db:
            db.executemany(sql, rows)

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Rows read on the file's reader connection (never waiting for a writer): none
        while the tables are not created yet (the first write creates them)."""
        try:
            return self._file.reader.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if str(exc).startswith("no such table"):
                return []
            raise type(exc)(f"SQLite file {self.path}: {exc}") from exc
        except sqlite3.Error as exc:
            raise type(exc)(f"SQLite file {self.path}: {exc}") from exc


def _create(db: sqlite3.Connection) -> None:
    """The tables (statement by statement: ``executescript`` would commit a transaction the
    connection is in)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
