"""Journal recovery: after a crash, unfinished events go back into the queue.

An event that was *running* when the host went away had an attempt in flight; that attempt
counts. One whose attempts are used up (the event may be what killed the host) is dead-lettered
("process failed") instead of being retried forever.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ._errors import ProcessStateError
from ._event import TriggerEvent

if TYPE_CHECKING:
    from ..store import Journal

__all__ = ["claim", "recover"]


def claim(journal: Journal, name: str) -> None:
    """Take ``name``'s lease on the journal and open its file, or raise ProcessStateError
    saying who holds what: another live process of the name (another object here, or
    another host), or another program holding the file (one runtime has it at a time)."""
    if not journal.claim():
        raise ProcessStateError(
            f"journal {journal.path} is in use by another live process named {name!r} "
            f"(another host, or one not stopped); stop it first"
        )
    try:
        journal.open()
    except sqlite3.OperationalError as exc:
        journal.release()
        raise ProcessStateError(f"journal {journal.path} cannot be opened: {exc}") from exc


def recover(
    journal: Journal,
    queue: asyncio.Queue[tuple[TriggerEvent, int]],
    *,
    max_retries: int,
    dead_letters: list[dict[str, Any]],
    dead_letter: Callable[[TriggerEvent, str, str | None, int], None],
    enqueue: Callable[[TriggerEvent, int], bool],
) -> dict[str, Any] | None:
    """Requeue the journal's unfinished events and reload its dead letters; say what was done.

    ``queue`` is the process's queue and ``dead_letters`` its dead letters (the reloaded ones
    are appended); ``dead_letter`` dead-letters an event and ``enqueue`` queues one
    (journaled), as the process does. The caller recovers once per process object."""
    # Events injected before this first start are queued (and journaled) already.
    waiting = [queue.get_nowait() for _ in range(queue.qsize())]
    queued = {journal.stored_id(event.event_id) for event, _ in waiting}
    events: list[str] = []
    dead = 0
    for raw, attempts, state in journal.unfinished_states():
        if raw["event_id"] in queued:
            continue
        event = TriggerEvent.from_dict(raw)
        if state == "running" and attempts > max_retries:
            dead_letter(
                event,
                "process failed",
                f"the host process went away while attempt {attempts} ran; no retries left",
                attempts,
            )
            dead += 1
            continue
        try:
            queue.put_nowait((event, attempts))
        except asyncio.QueueFull:
            dead_letter(event, "queue full", "journal recovery found a full queue", attempts)
            dead += 1
            continue
        events.append(event.event_id)
    for event, attempts in waiting:  # behind what the journal recovered
        enqueue(event, attempts)
    known = {journal.stored_id(d["event"].event_id) for d in dead_letters}
    for raw, attempts, reason, error, at in journal.dead_letters():
        if raw["event_id"] in known:
            continue
        dead_letters.append(
            {
                "event": TriggerEvent.from_dict(raw),
                "event_id": raw["event_id"],
                "reason": reason,
                "error": error,
                "attempts": attempts,
                "timestamp": datetime.fromtimestamp(at, UTC),
            }
        )
        dead += 1
    if not events and not dead:
        return None
    return {"events": len(events), "event_ids": events, "dead_letters": dead}
