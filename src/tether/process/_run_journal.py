"""Where one run's steps are written (see ``_durable``): held briefly, then journaled.

A call's ``started`` mark must land before the tool runs: it is written at once (committed on
the loop when the file is free, else waited for on the writer thread). Everything else a run
journals (a call's outcome, a mark of an idempotent tool, and the turn's answer with them) is
held for ``HOLD`` seconds and then handed to the writer thread: a run that ends meanwhile
writes none of it (its steps would be forgotten next), and a mark written at once carries what
is held, and what was handed over and may not have landed yet, so that it never lands ahead of
them. Held rows lost to a kill leave a call's outcome unknown (asked about after the restart,
never run again unasked) or an answer to ask again: nothing runs twice unasked.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ..store import Row, StepJournal
    from ._journaling import JournalWrites

__all__ = ["HOLD", "RunJournal"]

#: Seconds a run's steps (but a call's mark) are held before they are written.
HOLD: Final = 0.05

Found = dict[str, tuple[str, dict[str, Any]]]


class RunJournal:
    """The journal writes of one run of ``event_id`` (see the module docstring). ``found``
    is the run's steps (kept current by RunSteps); ``shown`` redacts what is written;
    ``state`` answers the process's state dict when it changed since it was saved."""

    def __init__(
        self,
        event_id: str,
        found: Found,
        store: StepJournal,
        writes: JournalWrites,
        shown: Callable[[Any], Any],
        state: Callable[[], dict[str, Any] | None],
    ) -> None:
        self.event_id = event_id
        self._found = found
        self._store = store
        self._writes = writes
        self._shown = shown
        self._state = state
        self._sent: set[str] = set()  # the answers written (with a step of theirs)
        self._held: dict[str, None] = {}  # steps held, in order
        self._held_state: dict[str, Any] | None = None
        self._queued: set[str] = set()  # handed to the writer thread, maybe not landed
        self._timer: asyncio.TimerHandle | None = None
        self.closed = False

    def record(self, step: str, state: str, data: dict[str, Any]) -> None:
        """Hold ``step`` (kept in ``found`` already) to write it soon."""
        self._hold(step)
        changed = self._state()  # a tool may have written it: it goes with the outcome
        if changed is not None:
            self._held_state = changed
        if self._timer is None and not self.closed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(HOLD, self.flush)

    async def land(self, step: str, state: str, data: dict[str, Any]) -> None:
        """Write ``step`` (a call's mark) and what is held, waiting until it landed."""
        self._sent.discard(_turn(step))  # carried again: an earlier write may not have landed
        self._hold(step)
        if not self._writes.pending:
            self._queued.clear()
        steps = [*self._queued, *self._held]
        rows, state_now = self._take()
        ahead = self._rows([s for s in steps if s not in self._held and s in self._found])
        if not self._store.write_now(self.event_id, ahead + rows, state_now):
            await self._writes.landed(
                self.event_id, self._store.write, self.event_id, rows, time.time(), state=state_now
            )

    def flush(self) -> None:
        """Hand what is held to the writer thread (HOLD passed, or the process stops)."""
        self._timer = None
        rows, state = self._take()
        if rows or state is not None:
            self._queued.update(step for step, _, _ in rows)
            self._writes.write(
                self.event_id, self._store.write, self.event_id, rows, time.time(), state=state
            )

    def drop(self) -> bool:
        """The run ended: what is held is not written (its steps are forgotten). True when a
        state was held with them: it is not saved yet (the caller saves it)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._held.clear()
        state, self._held_state = self._held_state, None
        return state is not None

    def write_held(self) -> None:
        """At a stop, on the writer thread once its queue is done: write what is held."""
        self.closed = True
        rows, state = self._take()
        if rows or state is not None:
            self._store.write(self.event_id, rows, time.time(), state=state)

    def _hold(self, step: str) -> None:
        turn = _turn(step)
        if turn not in self._sent and turn in self._found:  # never a call's step without it
            self._sent.add(turn)
            self._held.setdefault(turn)
        self._held.pop(step, None)
        self._held[step] = None

    def _take(self) -> tuple[list[Row], dict[str, Any] | None]:
        held = [s for s in self._held if s in self._found]
        self._held.clear()
        state, self._held_state = self._held_state, None
        return self._rows(held), state

    def _rows(self, steps: list[str]) -> list[Row]:
        return [(s, self._found[s][0], self._shown(self._found[s][1])) for s in steps]


def _turn(step: str) -> str:
    return f"model:{step.split(':')[1]}"
