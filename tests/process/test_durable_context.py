"""The conversation buffer and the state dict survive a restart with a journal: saved as they
change (compaction and rewinds included), restored by the next process over the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic import SecretStr

from _process_support import Recorder, eventually
from tether import AgentProcess, ContextConfig, HookEvent, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel


def journaled(journal: Path, *, max_messages: int = 40, **config: object) -> AgentProcess:
    return AgentProcess(
        "notes",
        ProcessConfig(
            model=ScriptedModel(reply="noted"),
            journal_path=str(journal),
            context=ContextConfig(conversation_max_messages=max_messages),
            **config,  # type: ignore[arg-type]
        ),
    )


async def run_tickets(process: AgentProcess, *texts: str) -> None:
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    for text in texts:
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": text}))
    await eventually(lambda: len(rec.outcomes()) == len(texts), what="the runs")


def stored_rows(journal: Path) -> int:
    with sqlite3.connect(journal) as db:
        return int(db.execute("SELECT COUNT(*) FROM conversation").fetchone()[0])


def users(process: AgentProcess) -> list[str]:
    return [m["content"] for m in process.context.conversation.messages if m["role"] == "user"]


async def test_the_conversation_and_state_of_a_stopped_process_come_back_in_the_next(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    first = journaled(journal)
    async with first:
        first.context.update_state("tone", "brief")
        await run_tickets(first, "one", "two")
    again = journaled(journal)
    async with again:
        assert again.context.conversation.messages == first.context.conversation.messages
        assert again.context.state == {"tone": "brief"}
        await run_tickets(again, "three")
    assert len(again.context.conversation.messages) == 6
    assert stored_rows(journal) == 6  # a run's two messages added, not the buffer rewritten


async def test_compaction_drops_the_stored_messages_it_dropped_from_the_buffer(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    first = journaled(journal, max_messages=4)
    async with first:
        await run_tickets(first, "one", "two", "three")
    assert stored_rows(journal) == 4
    again = journaled(journal, max_messages=4)
    async with again:
        assert again.context.conversation.messages == first.context.conversation.messages
        await run_tickets(again, "four")
    third = journaled(journal, max_messages=4)
    async with third:
        assert any("four" in text for text in users(third))
        assert not any("two" in text for text in users(third))


async def test_a_rewind_is_saved_with_the_next_run(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    first = journaled(journal)
    async with first:
        await run_tickets(first, "one", "two")
        await first.rewind(2)
        await run_tickets(first, "three")
    again = journaled(journal)
    async with again:
        texts = users(again)
    assert len(texts) == 2
    assert "two" not in " ".join(texts)
    assert "three" in texts[-1]


async def test_a_declared_secret_is_redacted_in_the_stored_conversation(tmp_path: Path) -> None:
    journal = tmp_path / "tether.db"
    process = journaled(journal, secrets={"crm": SecretStr("tok-7f3a9")})
    async with process:
        await run_tickets(process, "CRM says tok-7f3a9 expired")
    stored = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tether.db*")))  # noqa: ASYNC240
    assert b"CRM says" in stored
    assert b"tok-7f3a9" not in stored


async def test_a_state_written_by_a_tool_of_a_run_that_ends_at_once_is_saved(
    tmp_path: Path,
) -> None:
    """Regression: the state a tool wrote was taken as saved when its call's outcome was held
    to be journaled with it; a run ending within the hold dropped both, and the run's end saw
    no change to save: the next process over the file came back without it."""
    journal = tmp_path / "tether.db"
    model = ScriptedModel(reply="noted", tool_calls=[("update_state", {"key": "t", "value": 7})])
    first = AgentProcess(
        "notes",
        ProcessConfig(
            model=model, journal_path=str(journal), context=ContextConfig(state_tool=True)
        ),
    )
    async with first:
        await run_tickets(first, "remember t")
        assert first.context.state == {"t": 7}
    again = journaled(journal)
    async with again:
        assert again.context.state == {"t": 7}


async def test_many_runs_between_two_writes_leave_the_buffer_stored_as_it_is(
    tmp_path: Path,
) -> None:
    """Runs far quicker than a write (SAVE_INTERVAL): their changes, compactions and a rewind
    among them, are written together, and what is stored is the buffer."""
    journal = tmp_path / "tether.db"
    first = journaled(journal, max_messages=6)
    async with first:
        await run_tickets(first, *(f"ticket {i}" for i in range(25)))
        await first.rewind(2)
        await run_tickets(first, *(f"late {i}" for i in range(7)))
    assert stored_rows(journal) == 6
    again = journaled(journal, max_messages=6)
    async with again:
        assert again.context.conversation.messages == first.context.conversation.messages
        assert "late 6" in users(again)[-1]


def test_the_changes_queued_between_two_writes_are_written_as_one() -> None:
    from tether.process._saved_context import _together

    def m(seq: int) -> dict[str, str]:
        return {"role": "user", "content": str(seq)}

    one = [(False, None, [(0, m(0)), (1, m(1))])]
    assert _together(one) == one  # nothing to fold
    # Added, then compacted away before the write: never written.
    folded = _together(
        [
            (False, None, [(0, m(0)), (1, m(1))]),
            (False, 1, [(2, m(2)), (3, m(3))]),
            (False, 3, [(4, m(4))]),
        ]
    )
    assert folded == [(False, 3, [(3, m(3)), (4, m(4))])]
    # A clear (a rewind) forgets what came before it; a later drop still applies.
    folded = _together(
        [
            (False, 2, [(5, m(5))]),
            (True, None, [(6, m(6)), (7, m(7))]),
            (False, 7, [(8, m(8))]),
        ]
    )
    assert folded == [(True, None, [(7, m(7)), (8, m(8))])]
