"""Rewinding a process's conversation: drop its newest messages (config_change "rewind").

A run reads the conversation when it starts and appends its exchange when it ends, so a rewind
under a running task would leave that task's answer after messages it never saw, or drop half
of an exchange. ``rewind()`` therefore holds new runs (a worker that comes back for an event
waits until the rewind is over; one already waiting on the queue may still take one, and that
run is waited for too), waits for the runs in flight to finish, and only then changes the
buffer. Queued events stay queued. One rewind at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._errors import ProcessBusyError

if TYPE_CHECKING:
    from ..agent import AgentContext

__all__ = ["REWIND_WAIT", "Rewinding"]

#: Seconds rewind() waits, by default, for the runs in flight to finish.
REWIND_WAIT: Final = 30.0
_POLL: Final = 0.005


class Rewinding:
    """The rewind part of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        context: AgentContext
        _busy: set[asyncio.Task[None]]

        def _guard_self_await(self, what: str) -> None: ...

        async def change_config(
            self,
            change: str,
            *,
            source: str = "operator",
            apply: Callable[[], Any],
            snapshot: Any = None,
            **details: Any,
        ) -> bool: ...

    def _init_rewind(self) -> None:
        # Set while a rewind is under way: workers wait on it before taking the next event.
        self._held: asyncio.Event | None = None
        self._rewinds = asyncio.Lock()

    async def rewind(
        self, messages: int, *, source: str = "operator", timeout: float = REWIND_WAIT
    ) -> bool:
        """Drop the newest ``messages`` messages of the conversation; True if applied.

        Fires config_change with change "rewind", ``dropped``, ``size_before``, ``size_after``
        and ``dropping`` (the messages); an agent's rewind is refused by a block. Waits up to
        ``timeout`` seconds for the runs in flight (no new run starts meanwhile), then raises
        ProcessBusyError and changes nothing. ValueError if the conversation holds fewer
        messages; ProcessStateError when awaited from a hook or run of this process (it would
        wait on itself).
        """
        self._guard_self_await("rewind")
        if isinstance(messages, bool) or not isinstance(messages, int) or messages < 1:
            raise ValueError(f"messages must be a whole number of at least 1, got {messages!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be more than 0 seconds, got {timeout!r}")
        async with self._rewinds:
            held = self._held = asyncio.Event()
            try:
                await self._quiet(timeout)
                buffer = self.context.conversation
                size = len(buffer)
                if messages > size:
                    raise ValueError(
                        f"cannot rewind {messages} messages: the conversation of process "
                        f"{self.name!r} holds {size}"
                    )
                return await self.change_config(
                    "rewind",
                    source=source,
                    apply=lambda: buffer.drop_last(messages),
                    dropped=messages,
                    size_before=size,
                    size_after=size - messages,
                    dropping=buffer.messages[-messages:],
                )
            finally:
                self._held = None
                held.set()

    async def _quiet(self, timeout: float) -> None:
        """Wait until no worker is busy; ProcessBusyError after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self._busy:
            if loop.time() >= deadline:
                raise ProcessBusyError(
                    f"process {self.name!r} still runs {len(self._busy)} task(s) after "
                    f"{timeout:g}s; rewind() waits for the runs in flight and changed nothing"
                )
            await asyncio.sleep(_POLL)
