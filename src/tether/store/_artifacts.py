"""Artifacts that plugins emit beside a task's record: a folder, SQLite, or memory."""

from __future__ import annotations

import copy
import json
import logging
import os
import re
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

from ._sqlite import Lease

logger = logging.getLogger("tether.store")

__all__ = [
    "ArtifactStore",
    "DirArtifacts",
    "MemoryArtifacts",
    "SqliteArtifacts",
    "check_artifact_path",
    "open_artifacts",
]

_SAFE = re.compile(r"[A-Za-z0-9_.-]+")  # fullmatch: "$" would let a trailing newline in
#: The longest task id or artifact name (a file name, with room for its temporary twin).
MAX_PART = 200


class ArtifactStore(Protocol):
    def warn(self, task_id: str, text: str) -> None:
        """Keep a plugin warning of the task beside its artifacts (a durable store)."""

    def warnings(self, task_id: str) -> list[str]:
        """The plugin warnings kept for the task, oldest first."""

    def put(self, task_id: str, name: str, payload: Any) -> str: ...

    def list(self, task_id: str) -> list[dict[str, Any]]: ...


def check_artifact_path(task_id: str, name: str) -> None:
    """Raise ValueError unless both are safe file names (what every store checks on put):
    letters, digits, ``_``, ``-`` and ``.``, not ``.`` alone nor with ``..``, at most MAX_PART
    characters (a longer one would fail in a folder as a file name too long)."""
    for what, value in (("task id", task_id), ("artifact name", name)):
        safe = isinstance(value, str) and _SAFE.fullmatch(value) is not None
        if not safe or ".." in value or value == ".":
            raise ValueError(
                f"{what} {_shown(value)} is not a safe file name: use letters, digits, '_', '-' "
                "and '.' (not '.' alone nor '..')"
            )
        if len(value) > MAX_PART:
            raise ValueError(
                f"{what} {_shown(value)} is {len(value)} characters long; at most {MAX_PART}"
            )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-10:]}"


class MemoryArtifacts:
    """Kept in memory (lost with the process object), for the last ``tasks_kept`` tasks: a
    long-running process must not grow without bound. The first task dropped is logged once,
    saying how to keep them all (a folder or a SQLite file)."""

    def __init__(self, tasks_kept: int = 1000) -> None:
        if not isinstance(tasks_kept, int) or isinstance(tasks_kept, bool) or tasks_kept < 1:
            raise ValueError(f"tasks_kept must be an int >= 1, got {tasks_kept!r}")
        self.tasks_kept = tasks_kept
        self._items: dict[str, dict[str, tuple[Any, float]]] = {}
        self._told = False

    def put(self, task_id: str, name: str, payload: Any) -> str:
        check_artifact_path(task_id, name)
        self._items.setdefault(task_id, {})[name] = (json.loads(json.dumps(payload)), time.time())
        if len(self._items) > self.tasks_kept:
            del self._items[next(iter(self._items))]
            if not self._told:
                self._told = True
                logger.warning(
                    "artifacts kept in memory: only the last %d tasks' are kept (older ones are "
                    "dropped); set artifacts_dir or journal_path to keep them all",
                    self.tasks_kept,
                )
        return name

    def warn(self, task_id: str, text: str) -> None:
        """Nothing to do: the process keeps its recent tasks' warnings in memory itself."""

    def warnings(self, task_id: str) -> list[str]:
        return []

    def list(self, task_id: str) -> list[dict[str, Any]]:
        items = self._items.get(task_id, {})
        # Copies: what a caller does with a listing never changes what is kept.
        return [
            {"name": n, "payload": copy.deepcopy(p), "created_at": t}
            for n, (p, t) in sorted(items.items())
        ]


class DirArtifacts:
    """Files ``<task_id>.<plugin>[.<label>].json`` in one folder.

    Plugin names and labels have no dots, but a task id may (an event id chosen in code): the
    files of task ``a.b`` would then be taken for task ``a``'s (plugin ``b``). So a task id
    with a dot gets a folder of its own, ``by-task/<task_id>/``, holding its files (named as
    above; no artifact file is named ``by-task``, as each ends in ``.json``).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _home(self, task_id: str) -> Path:
        return self.folder / "by-task" / task_id if "." in task_id else self.folder

    def put(self, task_id: str, name: str, payload: Any) -> str:
        check_artifact_path(task_id, name)
        home = self._home(task_id)
        home.mkdir(parents=True, exist_ok=True)
        path = home / name
        # A temporary file of this write's own: two writers of one name (threads, processes
        # sharing the folder) never write into, or move away, each other's.
        tmp = home / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        text = json.dumps(payload, indent=2, ensure_ascii=False).encode("utf-8")
        # For this user only, as the journal is: an artifact quotes what the agent was sent.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(text)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return name

    def warn(self, task_id: str, text: str) -> None:
        """Nothing to do: the folder holds artifacts only (one file each, as named), so the
        process keeps its recent tasks' warnings in memory itself; the SQLite store keeps
        them durably."""

    def warnings(self, task_id: str) -> list[str]:
        return []

    def list(self, task_id: str) -> list[dict[str, Any]]:
        check_artifact_path(task_id, "x")
        out = []
        for path in sorted(self._home(task_id).glob(f"{task_id}.*.json")):
            out.append(
                {
                    "name": path.name,
                    "payload": json.loads(path.read_text(encoding="utf-8")),
                    "created_at": path.stat().st_mtime,
                }
            )
        return out


class SqliteArtifacts:
    """Rows of the runtime's SQLite file."""

    def __init__(self, path: str | Path, process: str) -> None:
        self._file = Lease(path)
        self.process = process
        self._file.prepare("artifacts", _create)

    @property
    def _db(self) -> sqlite3.Connection:
        return self._file.db

    def close(self) -> None:
        """Give back this store's share of the file's connection (see Lease)."""
        self._file.release()

    def warn(self, task_id: str, text: str) -> None:
        with self._file.write_lock:  # not inside another thread's transaction (see Lease)
            self._db.execute(
                "INSERT INTO plugin_warnings VALUES (?, ?, ?, ?)",
                (self.process, task_id, text, time.time()),
            )

    def warnings(self, task_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT text FROM plugin_warnings WHERE process=? AND task_id=? ORDER BY rowid",
            (self.process, task_id),
        ).fetchall()
        return [text for (text,) in rows]

    def put(self, task_id: str, name: str, payload: Any) -> str:
        check_artifact_path(task_id, name)
        with self._file.write_lock:
            self._db.execute(
                "INSERT OR REPLACE INTO artifacts VALUES (?, ?, ?, ?, ?)",
                (self.process, task_id, name, json.dumps(payload), time.time()),
            )
        return name

    def list(self, task_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT name, payload, created_at FROM artifacts WHERE process=? AND task_id=? "
            "ORDER BY name",
            (self.process, task_id),
        ).fetchall()
        return [{"name": n, "payload": json.loads(p), "created_at": t} for n, p, t in rows]


def _create(db: sqlite3.Connection) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS artifacts (process TEXT NOT NULL, task_id TEXT NOT NULL, "
        "name TEXT NOT NULL, payload TEXT NOT NULL, created_at REAL NOT NULL, "
        "PRIMARY KEY (process, task_id, name))"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS plugin_warnings (process TEXT NOT NULL, "
        "task_id TEXT NOT NULL, text TEXT NOT NULL, created_at REAL NOT NULL)"
    )
    db.execute(
        "CREATE INDEX IF NOT EXISTS plugin_warnings_task ON plugin_warnings (process, task_id)"
    )


def open_artifacts(folder: str | None, db_path: str | None, process: str) -> ArtifactStore:
    """A folder if one is configured, else the SQLite file, else memory."""
    if folder:
        return DirArtifacts(folder)
    if db_path:
        return SqliteArtifacts(db_path, process)
    return MemoryArtifacts()
