"""The step journal: each run's finished steps, and each process's conversation and state.

Two tables beside the event journal's, in the same SQLite file (and written through the same
per-file connection and lock, see ``_sqlite.Lease``):

``steps``   one row per step of an unfinished run: ``(process, event_id, step)`` with its
            ``state`` (``started`` or ``done``) and its data (JSON). A run's rows go when the
            run ends (see ``forget``); rows of an event the journal no longer holds are pruned
            at recovery.
``context`` one row per process: its conversation buffer and state dict (JSON).

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
from typing import Any

from ._sqlite import JournalWriteAbandoned, Lease

__all__ = ["StepStore"]

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
CREATE TABLE IF NOT EXISTS context (
    process       TEXT PRIMARY KEY,
    conversation  TEXT,
    state         TEXT,
    updated_at    REAL NOT NULL
);
"""


class StepStore:
    """The steps and the context of one process (see the module docstring)."""

    def __init__(
        self, path: str | Path, process: str, *, redact: Callable[[str], str] | None = None
    ) -> None:
        self.path = str(path)
        self.process = process
        self._file = Lease(path)
        self._key: Callable[[str], str] = redact if redact is not None else str
        self._schema = False

    def close(self) -> None:
        """Give back this store's share of the file's connection (see Lease)."""
        self._file.release()

    def stored_id(self, event_id: str) -> str:
        return self._key(event_id)

    # -- steps -------------------------------------------------------------------------------

    def write(
        self,
        event_id: str,
        step: str,
        state: str,
        data: dict[str, Any],
        *,
        proceed: Callable[[], bool] | None = None,
    ) -> None:
        """Journal ``step`` of the run of ``event_id`` as ``state``, with ``data``. With
        ``proceed``, it is asked once the file's lock is held: False, and nothing is written
        (JournalWriteAbandoned)."""
        self._run(
            "INSERT INTO steps (process, event_id, step, state, data, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (process, event_id, step) DO UPDATE SET "
            "state=excluded.state, data=excluded.data, updated_at=excluded.updated_at",
            (self.process, self._key(event_id), step, state, json.dumps(data), time.time()),
            proceed,
        )

    def forget(self, event_id: str) -> None:
        """The run of ``event_id`` ended: its steps go."""
        self._run(
            "DELETE FROM steps WHERE process=? AND event_id=?", (self.process, self._key(event_id))
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

    def save_context(self, conversation: str | None, state: str | None) -> None:
        """Store the conversation and/or the state (JSON text; None: keep the stored one)."""
        self._run(
            "INSERT INTO context (process, conversation, state, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (process) DO UPDATE SET "
            "conversation=COALESCE(excluded.conversation, conversation), "
            "state=COALESCE(excluded.state, state), updated_at=excluded.updated_at",
            (self.process, conversation, state, time.time()),
        )

    def context(self) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
        """The stored conversation and state (None each: none stored)."""
        rows = self._read(
            "SELECT conversation, state FROM context WHERE process=?", (self.process,)
        )
        if not rows:
            return None, None
        conversation, state = rows[0]
        return (
            json.loads(conversation) if conversation is not None else None,
            json.loads(state) if state is not None else None,
        )

    # -- the file ----------------------------------------------------------------------------

    def _ensure(self) -> None:
        if not self._schema:
            with self._file.write_lock:
                self._file.db.executescript(_SCHEMA)
            self._schema = True

    def _run(
        self, sql: str, args: tuple[Any, ...], proceed: Callable[[], bool] | None = None
    ) -> None:
        """One write, committed before it returns (on the file's shared connection)."""
        self._file.check(self.path)
        try:
            self._ensure()
            with self._file.write_lock:
                db = self._file.db
                if proceed is None:
                    db.execute(sql, args)
                    return
                db.execute("BEGIN IMMEDIATE")
                try:
                    if not proceed():
                        raise JournalWriteAbandoned(f"SQLite file {self.path}: write given up")
                    db.execute(sql, args)
                    db.execute("COMMIT")
                finally:
                    if db.in_transaction:  # never leave the shared connection in a transaction
                        db.execute("ROLLBACK")
        except JournalWriteAbandoned:
            raise
        except sqlite3.Error as exc:
            raise type(exc)(f"SQLite file {self.path}: {exc}") from exc

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            self._ensure()
            return self._file.reader.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise type(exc)(f"SQLite file {self.path}: {exc}") from exc
