"""How each event of a process ended: every attempt's end goes through ``Outcomes.complete``.

``complete`` notes the outcome (for ``AgentProcess.outcome``, the last OUTCOMES_KEPT decided),
tells the observer's note of the attempt, and dispatches task_completed (ProcessHooks) with
the attempt's model usage; in a cluster only while this host holds the event's lease (see
StreamQueue.completed). The event runner (each attempt) and the dead letters (what a stop or a
full queue leaves) both end events here, and nowhere else.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from ..agent import Note, Usage, UsageMeter
    from ..hooks import DispatchResult
    from ._event import TriggerEvent
    from ._lifecycle import ProcessHooks
    from ._state import LiveState

__all__ = ["OUTCOMES_KEPT", "Outcomes"]

#: Decided outcomes kept for ``Outcomes.wait`` (the last events decided).
OUTCOMES_KEPT: Final = 1000


class Outcomes:
    """The outcomes of one process's events (see the module docstring).

    ``usage`` holds the model usage of each attempt whose run is under way or not yet
    completed (the event runner adds it), ``notes`` the observer's note of each attempt under
    way; ``meter`` is the process's running totals.
    """

    def __init__(self, hooks: ProcessHooks, live: LiveState, meter: UsageMeter) -> None:
        self._hooks = hooks
        self._live = live
        self._meter = meter
        #: The model usage of each attempt whose run is under way or not yet completed.
        self.usage: dict[str, Usage] = {}
        #: The note of each task attempt under way, while an observer is set.
        self.notes: dict[str, Note] = {}
        #: The outcome of each of the last OUTCOMES_KEPT events decided (not "retrying").
        self.decided: dict[str, str] = {}
        self._waiting: dict[str, list[asyncio.Future[str]]] = {}

    def complete(
        self,
        event: TriggerEvent,
        outcome: str,
        duration_ms: float,
        error: str | None,
        *,
        worker: bool = False,
    ) -> Awaitable[DispatchResult]:
        """End an attempt of ``event``: its task_completed, to await (no coroutine of its
        own). ``worker``: from inside a worker, which the pool's ``busy`` already marks."""
        if self.notes:
            note = self.notes.get(event.event_id)
            if note is not None:
                note.outcome, note.error = outcome, error
        if outcome != "retrying":
            self._decide(event.event_id, outcome)
        usage = self.usage.pop(event.event_id, None)
        run_usage = None if usage is None else usage.to_dict()
        dispatch = partial(
            self._hooks.task_completed,
            event,
            outcome,
            duration_ms,
            error,
            run_usage,
            self._meter.to_dict(),
            worker=worker,
        )
        stream = self._live.stream
        if stream is None:
            return dispatch()
        # Only while this host holds the lease; a decided outcome is acknowledged after.
        return stream.completed(dispatch, event, decided=outcome != "retrying")

    def refused(self, event_id: str) -> None:
        """``event_id`` was dead-lettered before a worker took it (refused by ``inject``, or
        a full queue): decided ``dead_lettered``, with no task_completed (no attempt of it
        ran), so a wait for its outcome ends now."""
        self._decide(event_id, "dead_lettered")

    def _decide(self, event_id: str, outcome: str) -> None:
        self.decided.pop(event_id, None)  # (a redelivered event is decided again)
        self.decided[event_id] = outcome
        if len(self.decided) > OUTCOMES_KEPT:
            self.decided.pop(next(iter(self.decided)))
        for waiter in self._waiting.pop(event_id, ()):
            if not waiter.done():
                waiter.set_result(outcome)

    async def wait(self, event_id: str, timeout: float) -> str | None:
        """The outcome ``event_id`` was decided with, waiting up to ``timeout`` seconds for
        it; None when it is not decided by then (or was decided too long ago to be kept)."""
        found = self.decided.get(event_id)
        if found is not None or timeout <= 0:
            return found
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiters = self._waiting.setdefault(event_id, [])
        waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                return await waiter
        except TimeoutError:
            return None
        finally:
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters and self._waiting.get(event_id) is waiters:
                del self._waiting[event_id]
