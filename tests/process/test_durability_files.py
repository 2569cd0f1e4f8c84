"""Review of the journal's file: a path SQLite cannot use is refused at once, naming it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel
from tether.store import Journal


def make(path: Path) -> AgentProcess:
    return AgentProcess("journaled", ProcessConfig(model=ScriptedModel(), journal_path=str(path)))


def test_a_journal_that_is_not_a_sqlite_file_is_refused_naming_its_path(tmp_path: Path) -> None:
    """Regression: the error read "file is not a database", naming no file."""
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 200)
    with pytest.raises(sqlite3.DatabaseError, match="not a database") as caught:
        make(path)
    assert str(path) in str(caught.value)
    assert path.read_text() == "not a database\n" * 200  # left as it was


def test_a_journal_path_that_is_a_folder_is_refused_naming_it(tmp_path: Path) -> None:
    """Regression: the error read "unable to open database file", naming no file."""
    with pytest.raises(sqlite3.OperationalError, match="unable to open") as caught:
        make(tmp_path)
    assert str(tmp_path) in str(caught.value)


def test_a_journal_under_a_file_is_refused_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file, not a folder")
    path = tmp_path / "state" / "tether.db"
    with pytest.raises(FileExistsError) as caught:
        make(path)
    assert str(tmp_path / "state") in str(caught.value)


def test_a_journal_in_a_folder_that_does_not_exist_creates_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "tether.db"
    make(path)
    assert path.is_file()


def test_a_refused_journal_can_be_used_once_the_file_is_fixed(tmp_path: Path) -> None:
    """A failed open caches nothing: the next process over the path opens it afresh."""
    path = tmp_path / "tether.db"
    path.write_text("not a database\n" * 200)
    with pytest.raises(sqlite3.DatabaseError):
        make(path)
    path.unlink()
    make(path)
    assert path.is_file()


async def test_a_journal_write_waits_for_another_writer_that_holds_the_file_briefly(
    tmp_path: Path,
) -> None:
    """The connection waits for a busy file (sqlite3's 5 s timeout) instead of failing at
    once: a backup or another host's batch holding the write lock delays an inject, no more."""
    path = tmp_path / "tether.db"
    process = make(path)
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            holding.set()
            time.sleep(0.3)
            db.execute("COMMIT")
        finally:
            db.close()
            done.set()

    threading.Thread(target=hold).start()
    assert holding.wait(10)
    event_id = await process.inject(TriggerEvent("desk", "webhook", {"ticket": "printer"}))
    assert done.wait(10)
    assert [e["event_id"] for e, _ in Journal(path, "journaled").unfinished()] == [event_id]
    await process.stop()
