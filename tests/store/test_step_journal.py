"""The step store (``store._steps.StepStore``) on a real SQLite file: a run's steps written,
read back and forgotten, the conversation and state saved change by change, approvals kept
until acted on, a write made at once only when it cannot wait, and a guarded write given up.

Each test reads what another connection (or a new store over the file) finds: what landed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from _process_support import locked
from tether.store import Journal
from tether.store._sqlite import JournalWriteAbandoned
from tether.store._steps import StepStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "tether.db"


def test_a_run_s_steps_are_read_back_in_order_by_a_new_store(path: Path) -> None:
    store = StepStore(path, "p")
    store.write("e1", [("model:1", "done", {"text": "hi"})], 1.0)
    store.write("e1", [("tool:1:a", "started", {}), ("tool:1:a", "done", {"out": 2})], 2.0)
    store.write("e2", [("model:1", "done", {"text": "other run"})], 2.0)
    again = StepStore(path, "p")
    assert again.steps("e1") == {
        "model:1": ("done", {"text": "hi"}),
        "tool:1:a": ("done", {"out": 2}),
    }
    assert StepStore(path, "q").steps("e1") == {}  # another process's
    store.close()
    again.close()


def test_event_ids_are_stored_redacted_and_found_by_the_id_the_process_knows(path: Path) -> None:
    store = StepStore(path, "p", redact=lambda text: text.replace("s3cret", "[REDACTED]"))
    store.write("e-s3cret", [("model:1", "done", {})], 1.0)
    assert store.stored_id("e-s3cret") == "e-[REDACTED]"
    assert store.steps("e-s3cret") == {"model:1": ("done", {})}
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT event_id FROM steps")] == ["e-[REDACTED]"]
    db.close()
    store.close()


def test_forget_drops_the_steps_of_a_run_made_before_it_ended_not_a_later_run_s(
    path: Path,
) -> None:
    store = StepStore(path, "p")
    store.write("e1", [("model:1", "done", {"run": 1})], 1.0)
    store.write("e1", [("model:2", "done", {"run": 2})], 5.0)  # a retry's, after the end
    store.write("e2", [("model:1", "done", {})], 1.0)
    store.forget([("e1", 3.0), ("e2", 3.0)])
    assert store.steps("e1") == {"model:2": ("done", {"run": 2})}
    assert store.steps("e2") == {}
    store.close()


def test_prune_keeps_only_the_steps_of_events_the_journal_holds_unfinished(path: Path) -> None:
    journal = Journal(path, "p")
    store = StepStore(path, "p")
    journal.queued({"event_id": "queued"})
    journal.queued({"event_id": "running"})
    journal.running("running", 1)
    journal.dead({"event_id": "dead"}, 1, "failed", None)
    for event_id in ("queued", "running", "dead", "gone"):
        store.write(event_id, [("model:1", "done", {})], 1.0)
    store.prune()
    kept = [e for e in ("queued", "running", "dead", "gone") if store.steps(e)]
    assert kept == ["queued", "running", "dead"]
    journal.close()
    store.close()


def test_a_step_written_with_the_state_lands_with_it(path: Path) -> None:
    store = StepStore(path, "p")
    store.write("e1", [("tool:1:a", "done", {})], 1.0, state={"count": 3})
    assert StepStore(path, "p").context() == ([], {"count": 3})
    store.close()


def test_the_conversation_is_saved_change_by_change_and_read_back_in_order(path: Path) -> None:
    store = StepStore(path, "p")
    assert store.context() == ([], None)  # nothing written yet: no table, no error
    store.save_context([(False, None, [(0, '{"m": 0}'), (1, '{"m": 1}'), (2, '{"m": 2}')])], None)
    store.save_context([(False, 2, [(3, '{"m": 3}')])], '{"k": "v"}')  # compacted below 2
    assert store.context() == ([(2, {"m": 2}), (3, {"m": 3})], {"k": "v"})
    store.save_context([(True, None, [(10, '{"m": "new"}')])], None)  # rewound: anew
    assert store.context() == ([(10, {"m": "new"})], {"k": "v"})
    assert StepStore(path, "q").context() == ([], None)
    store.close()


def test_an_approval_is_kept_with_its_answer_until_it_is_acted_on(path: Path) -> None:
    store = StepStore(path, "p")
    store.save_approval("k1", {"tool": "deploy"}, None)
    store.save_approval("k2", {"tool": "delete"}, None)
    store.save_approval("k1", {"tool": "deploy"}, {"approved": True})
    assert store.approvals() == [
        ("k1", {"tool": "deploy"}, {"approved": True}),
        ("k2", {"tool": "delete"}, None),
    ]
    store.forget_approval("k1")
    assert StepStore(path, "p").approvals() == [("k2", {"tool": "delete"}, None)]
    store.close()


def test_a_guarded_write_given_up_writes_nothing(path: Path) -> None:
    store = StepStore(path, "p")
    with pytest.raises(JournalWriteAbandoned, match=r"tether\.db: write given up"):
        store.write("e1", [("model:1", "done", {})], 1.0, proceed=lambda: False)
    assert store.steps("e1") == {}
    store.write("e1", [("model:1", "done", {})], 1.0, proceed=lambda: True)
    assert store.steps("e1") == {"model:1": ("done", {})}
    store.close()


def test_write_now_writes_when_the_file_is_free_and_never_waits_when_it_is_not(
    path: Path,
) -> None:
    store = StepStore(path, "p")
    assert store.write_now("e1", [("tool:1:a", "started", {})])
    assert store.steps("e1") == {"tool:1:a": ("started", {})}
    with locked(path):  # another connection holds the file: busy at once, nothing written
        assert not store.write_now("e2", [("tool:1:a", "started", {})])
    inside, leave = threading.Event(), threading.Event()

    def another_thread_writing() -> None:
        with store._file.writing():
            inside.set()
            leave.wait(30)

    other = threading.Thread(target=another_thread_writing)
    other.start()
    try:
        assert inside.wait(30)
        assert not store.write_now("e3", [("tool:1:a", "started", {})])
    finally:
        leave.set()
        other.join(30)
    assert store.steps("e2") == store.steps("e3") == {}
    assert store.write_now("e2", [("tool:1:a", "started", {})])  # its busy timeout restored
    store.close()


def test_a_read_that_fails_names_the_file(path: Path) -> None:
    store = StepStore(path, "p")
    store.write("e1", [("model:1", "done", {})], 1.0)
    with pytest.raises(sqlite3.OperationalError, match=r"SQLite file .*tether.db: "):
        store._read("SELECT nothing FROM steps", ())
    store.close()
