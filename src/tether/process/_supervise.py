"""Supervision: a failed process restarts by itself after a backoff, as its policy allows.

The policy counts the automatic restarts only, and only those in a row: ``restart()`` by an
operator does not use up ``max_restarts``, and a successful run sets the count (and the
backoff) back, so a process that recovers from each crash is not given up on after
``max_restarts`` crashes over its lifetime (``restart_count`` in ``status()`` counts them all).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..hooks import DispatchResult
from ._state import ProcessState

if TYPE_CHECKING:
    from .._redact import Redactor
    from ._config import ProcessConfig
    from ._event import TriggerEvent
    from ._triggers import TriggerRunner

__all__ = ["Supervision", "cleanly", "describe", "is_fatal"]

logger = logging.getLogger("tether.process")


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` must end the task it reached: this task is being cancelled (stop() or a
    restart), or the host is going down (KeyboardInterrupt, SystemExit: a journal recovers
    what was running). Anything else a worker meets is a crash it supervises."""
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        return task is None or task.cancelling() > 0
    return isinstance(exc, (KeyboardInterrupt, SystemExit))


def describe(exc: BaseException) -> str:
    """``Type: message``, or the type alone when the message is empty."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def cleanly(step: Awaitable[Any], what: str, redact: Callable[[str], str]) -> None:
    """Await a step of a teardown; an error of it is logged (redacted), not raised: the
    teardown goes on."""
    try:
        await step
    except BaseException as exc:
        if is_fatal(exc):
            raise
        logger.error("%s failed during the teardown: %s", what, redact(describe(exc)))


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
        _failing: asyncio.Task[None] | None
        _runners: dict[str, TriggerRunner]
        _cut_off: list[tuple[TriggerEvent, int]]
        _inflight: dict[str, tuple[TriggerEvent, int]]
        _abandoned: set[asyncio.Task[None]]
        redactor: Redactor

        def _dead(
            self, event: TriggerEvent, reason: str, error: str | None, attempts: int
        ) -> None: ...

        def _complete(
            self,
            event: TriggerEvent,
            outcome: str,
            duration_ms: float,
            error: str | None,
            *,
            worker: bool = False,
        ) -> Awaitable[DispatchResult]: ...

        def _session_end(self, reason: str) -> Awaitable[DispatchResult]: ...

        async def _halt_workers(self) -> None: ...

        async def _dead_letter_given_up(self, why: str) -> None: ...

        def _enqueue(self, event: TriggerEvent, attempts: int) -> bool: ...

        async def _fire_dead_lettered(
            self, events: list[TriggerEvent], why: str, deadline: float | None
        ) -> int: ...

        async def start(self, *, _restart: bool = False) -> None: ...

        async def _teardown(self, final_state: ProcessState, restarting: bool = False) -> None: ...

    def _go_on(self) -> None:
        """In a run that a stop gave up on (see AgentProcess._abandon), raise CancelledError:
        its event is dead-lettered already, so the run goes no further and records nothing
        (its worker returns). Called after each step a swallowed cancellation may get past."""
        # _abandoned is empty but during a stop: asyncio.current_task() costs a getpid() system
        # call on Python 3.11, and this runs four times per event.
        if self._abandoned and asyncio.current_task() in self._abandoned:
            raise asyncio.CancelledError

    async def _worker_crashed(self, event: TriggerEvent, attempt: int, exc: BaseException) -> None:
        """A worker's run of ``event`` raised what nothing isolated: the process crashed.

        The event is dead-lettered ("process failed", task_completed "failed") unless its fate
        was decided already (it left ``_inflight``: done, dead-lettered or waiting for a
        retry), so a redelivery never runs a finished event twice.
        """
        error = self.redactor.text(describe(exc))
        logger.error("worker of %s crashed: %s", self.name, error)
        if self._inflight.pop(event.event_id, None) is not None:
            self._dead(event, "process failed", error, attempt)
            try:
                await self._complete(event, "failed", 0.0, error, worker=True)
            except BaseException as again:
                if is_fatal(again):
                    raise
                logger.error("task_completed of %s failed too", event.event_id)
        self._crashed(f"worker crashed: {error}")

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
        try:
            await self._session_end("restart" if will_restart else "stop")
        except BaseException as exc:  # a hook raising what the engine does not isolate
            if is_fatal(exc):
                raise
            error = self.redactor.text(repr(exc))
            logger.error("session_end of %s raised %s; supervising on", self.name, error)
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
                if not self._enqueue(event, attempt - 1):  # it reached a worker: say how it ended
                    await self._fire_dead_lettered([event], "queue full", None)
            await self._dead_letter_given_up("process failed")  # never re-run beside the run
            delay = min(policy.backoff * (2**self._auto_restarts), policy.backoff_max)
            await asyncio.sleep(delay)
            self.restart_count += 1
            self._auto_restarts += 1
            self._consecutive_failures = 0
            self._supervisor = None
            self.state = ProcessState.STOPPED
            try:
                await self.start(_restart=True)
            except BaseException as exc:  # e.g. a session_start hook: a crash, supervised too
                if is_fatal(exc):
                    raise
                self._crashed(f"restart failed: {self.redactor.text(repr(exc))}")
        else:
            self._supervisor = None  # no restart coming: inject() dead-letters from here on
            self._failing = asyncio.current_task()
            try:
                await self._teardown(final_state=ProcessState.FAILED)
            finally:
                self._failing = None
