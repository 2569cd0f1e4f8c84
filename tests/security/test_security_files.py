"""The SQLite file a process journals to (events, hook runs) is created readable by its user
only, its WAL and shared-memory files too, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from _process_support import eventually, ticket
from tether import AgentProcess, ProcessConfig
from tether.store._artifacts import DirArtifacts


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual umask of a service (022): files are world-readable unless made otherwise."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.usefixtures("open_umask")
async def test_a_journal_file_is_created_for_its_user_only(tmp_path: Path) -> None:
    """Regression: the journal was created with the umask's permissions (0644 under the usual
    022), so every user of the host could read the events the agent was sent."""
    journal = tmp_path / "state" / "tether.db"
    process = AgentProcess("vault", ProcessConfig(model="scripted", journal_path=str(journal)))
    async with process:
        await process.inject(ticket())
        await eventually(lambda: process.invocation_count == 1, what="the run")
        modes = file_modes(journal.parent)
    assert {"tether.db", "tether.db-wal"} <= set(modes)
    assert {name: mode & 0o077 for name, mode in modes.items()} == dict.fromkeys(modes, 0)


def file_modes(folder: Path) -> dict[str, int]:
    """The permission bits of each SQLite file in ``folder`` (the lease's lock file aside)."""
    return {
        f.name: stat.S_IMODE(f.stat().st_mode)
        for f in folder.glob("tether.db*")
        if f.suffix != ".lock"
    }


@pytest.mark.usefixtures("open_umask")
def test_an_artifact_file_is_written_for_its_user_only(tmp_path: Path) -> None:
    """Regression: plugin artifacts (a debrief quotes the task's prompt and the agent's reply)
    were written with the umask's permissions, readable by every user of the host."""
    store = DirArtifacts(tmp_path / "artifacts")
    name = store.put("task-1", "task-1.debrief.json", {"reply": "the refund went through"})

    mode = stat.S_IMODE((tmp_path / "artifacts" / name).stat().st_mode)
    assert mode & 0o077 == 0, oct(mode)
