"""Rewinding a process's conversation: drop its newest messages (config_change "rewind").

A run reads the conversation when it starts and appends its exchange when it ends, so a rewind
under a running task would leave that task's answer after messages it never saw, or drop half
of an exchange. ``rewind()`` therefore holds new runs until it is over (config_change hooks
included), waits for the runs in flight to finish, and only then changes the buffer. Queued
events stay queued; an event a worker took from the queue during the rewind is kept by that
worker and run first once the rewind ends (if the worker is stopped meanwhile, the event is
given back ahead of the queue: the next worker runs it first, and stop() dead-letters it first).
The messages dropped are the ones config_change was told about: the
buffer is checked again before they go. One rewind at a time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ._changes import check_source
from ._errors import ProcessBusyError

if TYPE_CHECKING:
    from ..agent import AgentContext
    from ._changes import ConfigChanges
    from ._event import TriggerEvent
    from ._state import LiveState

__all__ = ["REWIND_WAIT", "Rewinder"]

#: Seconds rewind() waits, by default, for the runs in flight to finish.
REWIND_WAIT: Final = 30.0
_POLL: Final = 0.005


class Rewinder:
    """Rewinds of one process's conversation, and the events its workers hold meanwhile.

    Workers take a given-back event first (``given_back``), then the queue's (the process's
    queue now, in ``live``: a cluster's may replace the first). ``busy`` is the process's map
    of the workers running an event now; its configuration ``changes`` order a rewind among
    them and dispatch its config_change.
    """

    def __init__(
        self,
        live: LiveState,
        context: AgentContext,
        busy: Mapping[asyncio.Task[None], str],
        changes: ConfigChanges,
    ) -> None:
        self.name = changes.name
        self.context = context
        self._live = live
        self._busy = busy
        self._changes = changes
        #: Set while a rewind is under way: workers wait on it before taking the next event.
        self.held: asyncio.Event | None = None
        # One rewind at a time (a Lock made at the first: a process never rewound holds none).
        self._rewinds: asyncio.Lock | None = None
        # Events a worker took from the queue but did not run, ahead of the queue: the next
        # worker takes them first. Each is still an unfinished task of the queue (one get(),
        # not yet task_done()) until it runs or is dead-lettered.
        # (Made at the first given back.)
        self._given_back: deque[tuple[TriggerEvent, int]] | None = None
        # Events workers took and hold until the rewind is over: still waiting to run.
        self._holding = 0

    @property
    def waiting(self) -> int:
        """Events taken from the queue that wait to run (given back, or held by a worker)."""
        return len(self._given_back or ()) + self._holding

    async def rewind(
        self, messages: int, *, source: str = "operator", timeout: float = REWIND_WAIT
    ) -> bool:
        """Drop the newest ``messages`` messages of the conversation; True if applied.

        Dispatches config_change with change "rewind", ``dropped``, ``size_before``, ``size_after``
        and ``dropping`` (the messages); an agent's rewind is refused by a block. Waits up to
        ``timeout`` seconds in all for an earlier rewind, the runs in flight (no new run
        starts meanwhile) and a configuration change still applying, then raises
        ProcessBusyError and changes nothing; ProcessBusyError too, after config_change, if
        the conversation changed while its hooks ran (nothing dropped). ValueError if the
        conversation holds fewer messages; ProcessStateError when awaited from a hook or run
        of this process (it would wait on itself: the process checks that).
        """
        if isinstance(messages, bool) or not isinstance(messages, int) or messages < 1:
            raise ValueError(f"messages must be a whole number of at least 1, got {messages!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be more than 0 seconds, got {timeout!r}")
        check_source(source)
        # One deadline for everything rewind() waits for: an earlier rewind, the runs in
        # flight, a configuration change still applying. Its own hooks have their timeouts.
        deadline = asyncio.get_running_loop().time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                if self._rewinds is None:
                    self._rewinds = asyncio.Lock()
                await self._rewinds.acquire()
        except TimeoutError:
            raise ProcessBusyError(
                f"another rewind of process {self.name!r} was still under way after "
                f"{timeout:g}s; rewind() changed nothing"
            ) from None
        held = self.held = asyncio.Event()
        try:
            await self._quiet(timeout, deadline)
            buffer = self.context.conversation
            size = len(buffer)
            if messages > size:
                raise ValueError(
                    f"cannot rewind {messages} messages: the conversation of process "
                    f"{self.name!r} holds {size}"
                )
            dropping = buffer.messages[size - messages :]

            def apply() -> None:
                # No run starts while _held is set, but the hooks ran in between: drop
                # exactly what they were told about, or nothing.
                now = buffer.messages
                if len(now) != size or any(
                    a is not b for a, b in zip(now[size - messages :], dropping, strict=True)
                ):
                    raise ProcessBusyError(
                        f"the conversation of process {self.name!r} changed while the "
                        f"config_change hooks of rewind() ran; rewind() changed nothing"
                    )
                buffer.drop_last(messages)

            details = {
                "dropped": messages,
                "size_before": size,
                "size_after": size - messages,
                "dropping": dropping,
            }
            async with self._changes.serialised("rewind", deadline):
                return await self._changes.apply_change("rewind", source, apply, None, details)
        finally:
            self.held = None
            held.set()
            self._rewinds.release()

    async def _quiet(self, timeout: float, deadline: float) -> None:
        """Wait until no worker is busy; ProcessBusyError at ``deadline`` (a loop time)."""
        loop = asyncio.get_running_loop()
        while self._busy:
            if loop.time() >= deadline:
                raise ProcessBusyError(
                    f"process {self.name!r} still runs {len(self._busy)} task(s) after "
                    f"{timeout:g}s; rewind() waits for the runs in flight and changed nothing"
                )
            await asyncio.sleep(_POLL)

    async def wait_out(self, event: TriggerEvent, attempts: int) -> None:
        """Keep ``event``, which a worker took from the queue, from running until no rewind
        is under way. A worker cancelled meanwhile (stop, restart) gives it back first."""
        self._holding += 1
        try:
            while self.held is not None:
                try:
                    await self.held.wait()
                except asyncio.CancelledError:
                    self.give_back(event, attempts)
                    raise
        finally:
            self._holding -= 1

    def give_back(self, event: TriggerEvent, attempts: int) -> None:
        """Hold an event a worker took but did not run ahead of the queue (never dropped)."""
        if self._given_back is None:
            self._given_back = deque()
        self._given_back.append((event, attempts))

    def given_back(self) -> tuple[TriggerEvent, int] | None:
        """The next event given back, which a worker takes before the queue's; None when
        none is. (A plain call: an idle worker waits on the queue alone, no coroutine of
        this object's in between.)"""
        return self._given_back.popleft() if self._given_back else None

    def take_waiting(self) -> list[tuple[TriggerEvent, int]]:
        """Take every event waiting to run, given-back ones first, each marked done in the
        queue (the caller dead-letters them)."""
        waiting = list(self._given_back or ())
        self._given_back = None
        queue = self._live.queue
        while not queue.empty():
            waiting.append(queue.get_nowait())
        for _ in waiting:
            queue.task_done()
        return waiting
