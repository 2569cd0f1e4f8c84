"""The conversation buffer and the state dict of a process, kept in its journal file.

The conversation is stored a message a row, numbered in the order added: a save writes what
changed since the last one (the messages a run added, the seq below which compaction dropped
the rest), found by comparing the buffer with the messages it held then (the same objects:
a run appends, compaction drops from the front). Anything else (a rewind, a buffer replaced)
writes the whole buffer anew. The state is stored whole, when it changed.

Changes are made on the loop and queued; the writer thread applies every change queued so far
in one transaction, serialising the messages there, declared secrets redacted. One such write
waits on the thread at a time, and one is handed to it every ``SAVE_INTERVAL`` seconds at
most: a process running many short runs saves their changes together (a SIGKILL loses what
changed in the last ``SAVE_INTERVAL`` seconds at most; their events stay done). A stop writes
what is left, last (see ``close``).
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentContext
    from ..store import Change, StepJournal
    from ._journaling import JournalWrites

__all__ = ["SAVE_INTERVAL", "SavedContext"]

#: Seconds between two writes of the context at least (see the module docstring).
SAVE_INTERVAL: Final = 0.05

Message = dict[str, Any]
#: A change as queued on the loop: (clear, drop_before, added (seq, message) each).
_Queued = tuple[bool, int | None, list[tuple[int, Message]]]


class SavedContext:
    """Saves and restores one process's conversation and state (see the module docstring)."""

    def __init__(
        self, store: StepJournal, writes: JournalWrites, context: AgentContext, redactor: Redactor
    ) -> None:
        self._store = store
        self._writes = writes
        self._context = context
        self._shown = redactor.declared.value
        #: The buffer's messages when last saved (the same objects), and the seq of the first.
        self._saved: list[Message] = []
        self._first = 0
        #: The last state saved (a copy), to save it only when it changed.
        self._state: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._changes: list[_Queued] = []
        self._next_state: dict[str, Any] | None = None
        self._queued = False
        #: When the last write was handed to the writer thread (the loop's clock).
        self._last = float("-inf")
        self._closed = False

    def restore(self) -> None:
        """Put the stored conversation and state back (the first start over the file)."""
        messages, state = self._store.context()
        if messages:
            self._context.conversation.messages[:] = [m for _, m in messages]
            self._saved = list(self._context.conversation.messages)
            self._first = messages[0][0]
        if state is not None:
            self._context.state.clear()
            self._context.state.update(state)
        self._state = copy.deepcopy(self._context.state)

    def save(self) -> None:
        """Queue what changed in the conversation and the state since the last save."""
        change = self._changed(self._context.conversation.messages)
        state = self._state_changed()
        if change is not None or state is not None:
            self._queue(change, state)

    def changed_state(self) -> dict[str, Any] | None:
        """The state (a copy, declared secrets redacted) if it changed since it was last
        saved, taken as saved (the caller writes it, with a tool call's outcome); else None."""
        state = self._state_changed()
        return None if state is None else self._shown(state)

    def state_unsaved(self) -> None:
        """The state last taken as saved (``changed_state``) was not written: the next save
        writes it."""
        self._state = None

    def _state_changed(self) -> dict[str, Any] | None:
        if self._context.state == self._state:
            return None
        self._state = copy.deepcopy(self._context.state)
        return self._state

    def _changed(self, messages: list[Message]) -> _Queued | None:
        saved, first = self._saved, self._first
        # Where the buffer's first message was when last saved: what compaction dropped.
        dropped = next((i for i, m in enumerate(saved) if messages and m is messages[0]), None)
        kept = len(saved) - dropped if dropped is not None else 0
        end = first + len(saved)  # the seq the next message added gets
        if (
            dropped is not None
            and len(messages) >= kept
            and all(a is b for a, b in zip(saved[dropped:], messages, strict=False))
        ):
            added = messages[kept:]
            change: _Queued = (False, first + dropped if dropped else None, [])
            self._first = first + dropped
        elif not saved and not messages:
            return None
        else:  # a rewind, a replaced buffer, or all of it compacted away: written anew
            added = messages
            change = (True, None, [])
            self._first = end
            end = self._first
        self._saved = list(messages)
        change[2].extend((end + i, m) for i, m in enumerate(added))
        if not change[0] and change[1] is None and not change[2]:
            return None
        return change

    def _queue(self, change: _Queued | None, state: dict[str, Any] | None) -> None:
        with self._lock:
            if change is not None:
                self._changes.append(change)
            if state is not None:
                self._next_state = state
            if self._queued:
                return
            self._queued = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write()
            return
        wait = self._last + SAVE_INTERVAL - loop.time()
        if wait > 0:
            loop.call_later(wait, self._hand_over)
        else:
            self._hand_over()

    def _hand_over(self) -> None:
        if not self._closed:
            self._last = asyncio.get_running_loop().time()
            self._writes.write("context", self._write)

    def close(self) -> None:
        """Write what is left (at a stop, on the writer thread once its queue is done); later
        changes are no longer written."""
        self._closed = True
        self._write()

    def _write(self) -> None:  # the writer's thread (or at once, the process not running)
        with self._lock:
            changes, self._changes = self._changes, []
            state, self._next_state = self._next_state, None
            self._queued = False
        if not changes and state is None:
            return
        shown = self._shown
        stored: list[Change] = [
            (clear, drop, [(seq, json.dumps(shown(m), default=str)) for seq, m in added])
            for clear, drop, added in _together(changes)
        ]
        self._store.save_context(
            stored, None if state is None else json.dumps(shown(state), default=str)
        )


def _together(changes: list[_Queued]) -> list[_Queued]:
    """The changes queued since the last write as one: what they leave stored, without the
    messages one added and a later one dropped (a process running many short runs between two
    writes adds and compacts away far more than it keeps)."""
    if len(changes) < 2:
        return changes
    clear, drop_before = False, None
    added: dict[int, Message] = {}
    for cleared, dropped, new in changes:
        if cleared:
            clear, drop_before, added = True, None, {}
        elif dropped is not None:
            drop_before = dropped if drop_before is None else max(drop_before, dropped)
            added = {seq: m for seq, m in added.items() if seq >= dropped}
        added.update(new)
    return [(clear, None if clear else drop_before, sorted(added.items()))]
