"""Supervision: a failed process restarts by itself after a backoff, as its policy allows.

The policy counts the automatic restarts only: ``restart()`` by an operator does not use up
``max_restarts`` (``restart_count`` in ``status()`` counts both).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..hooks import DispatchResult, HookEvent
from ._state import ProcessState

if TYPE_CHECKING:
    from ._config import ProcessConfig
    from ._event import TriggerEvent
    from ._triggers import TriggerRunner

__all__ = ["Supervision"]

logger = logging.getLogger("tether.process")


class Supervision:
    """The supervision part of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        config: ProcessConfig
        state: ProcessState
        last_error: str | None
        invocation_count: int
        restart_count: int
        _auto_restarts: int
        _consecutive_failures: int
        _stopping: bool
        _supervisor: asyncio.Task[None] | None
        _runners: dict[str, TriggerRunner]
        _cut_off: list[tuple[TriggerEvent, int]]

        async def _emit(self, event: HookEvent, data: dict[str, Any]) -> DispatchResult: ...

        async def _halt_workers(self) -> None: ...

        def _enqueue(self, event: TriggerEvent, attempts: int) -> None: ...

        async def start(self, *, _restart: bool = False) -> None: ...

        async def _teardown(self, final_state: ProcessState, restarting: bool = False) -> None: ...

    def _crashed(self, error: str) -> None:
        """Enter FAILED and, if the restart policy allows, restart after a backoff."""
        if self._supervisor is not None or self._stopping or self.state == ProcessState.STOPPING:
            return  # a stop() under way (still in session_end) wins over a restart
        self.last_error = error
        logger.error("process %s failed: %s", self.name, error)
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise(error))

    async def _supervise(self, error: str) -> None:
        policy = self.config.restart
        will_restart = policy.policy == "on_failure" and self._auto_restarts < policy.max_restarts
        self.state = ProcessState.FAILED
        # The documented keys only; the error is in status()["last_error"].
        await self._emit(
            HookEvent.SESSION_END,
            {
                "reason": "restart" if will_restart else "stop",
                "invocation_count": self.invocation_count,
            },
        )
        if will_restart:
            # Keep the queue: events wait for the restarted process, and so does a run that
            # is cut off here (its attempt does not count).
            self._stopping = True
            for runner in list(self._runners.values()):
                await runner.stop()
            self._runners.clear()
            await self._halt_workers()
            cut_off, self._cut_off = self._cut_off, []
            for event, attempt in cut_off:
                self._enqueue(event, attempt - 1)
            delay = min(policy.backoff * (2**self._auto_restarts), policy.backoff_max)
            await asyncio.sleep(delay)
            self.restart_count += 1
            self._auto_restarts += 1
            self._consecutive_failures = 0
            self._supervisor = None
            self.state = ProcessState.STOPPED
            await self.start(_restart=True)
        else:
            self._supervisor = None
            await self._teardown(final_state=ProcessState.FAILED)
