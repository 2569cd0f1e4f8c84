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
from typing import TYPE_CHECKING, Any, Protocol

from ..hooks import CLOSING
from ._state import ProcessState

if TYPE_CHECKING:
    from .._redact import Redactor
    from ._state import LiveState

__all__ = ["Supervised", "Supervisor", "cleanly", "describe", "is_fatal"]

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


class Supervised(Protocol):
    """What a Supervisor may do to its process, beyond its state: the process says how, the
    supervisor when."""

    def session_ended(self, reason: str) -> Awaitable[Any]:
        """Dispatch session_end with ``reason`` ("restart" or "stop")."""
        ...

    async def pause(self) -> None:
        """Stop the triggers and workers, keeping what waits to run (for the restart)."""

    async def restart_after_crash(self) -> None:
        """Start again (counted as a restart)."""

    async def fail(self) -> None:
        """Tear down for good (the process ends FAILED)."""


class Supervisor:
    """Watches one process's failures and restarts it by its policy (see the module
    docstring). The policy (``config.restart`` of the process's state, ``live``) is read at
    each decision: a change of it applies at the next. ``process`` is what it supervises."""

    def __init__(
        self,
        name: str,
        live: LiveState,
        redactor: Redactor,
        process: Supervised,
    ) -> None:
        self.name = name
        self._live = live
        self._redactor = redactor
        self._process = process
        self.last_error: str | None = None
        self._auto_restarts = 0  # what the restart policy counts: restart() calls are not
        self._consecutive_failures = 0
        self._supervising: asyncio.Task[None] | None = None
        #: Tearing down a crash for good (no restart coming).
        self.failing: asyncio.Task[None] | None = None

    @property
    def restarting(self) -> bool:
        """Whether a crash is being supervised (a restart may follow): workers take no new
        event, and what waits is kept for the restart."""
        return self._supervising is not None

    @property
    def busy(self) -> asyncio.Task[None] | None:
        """The task supervising a crash or tearing it down, if any (a start waits for it)."""
        return self._supervising or self.failing

    def cancel(self) -> None:
        """Call off a restart under way (a stop wins), unless this task is the supervisor."""
        supervising = self._supervising
        if supervising is not None and supervising is not asyncio.current_task():
            supervising.cancel(CLOSING)
            self._supervising = None

    def succeeded(self) -> None:
        """A run succeeded: the failures and restarts in a row start again from naught."""
        self._consecutive_failures = 0
        self._auto_restarts = 0

    def run_failed(self) -> None:
        """A run failed: counted at once, so a success meanwhile sets the count back."""
        self._consecutive_failures += 1

    def crash_if_failing(self, error: str) -> None:
        """Too many failed runs in a row (the policy says how many) is a crash."""
        if self._consecutive_failures >= self._live.config.restart.max_consecutive_failures:
            self.crashed(f"{self._consecutive_failures} runs failed in a row; last: {error}")

    def crashed(self, error: str) -> None:
        """Enter FAILED and, if the restart policy allows, restart after a backoff."""
        if self._supervising is not None or self._live.ending:
            return  # a stop() under way (still in session_end) wins over a restart
        self.last_error = error
        logger.error("process %s failed: %s", self.name, error)
        self._supervising = asyncio.get_running_loop().create_task(self._supervise())

    async def _supervise(self) -> None:
        policy = self._live.config.restart
        will_restart = policy.policy == "on_failure" and self._auto_restarts < policy.max_restarts
        process = self._process
        self._live.state = ProcessState.FAILED
        try:
            await process.session_ended("restart" if will_restart else "stop")
        except BaseException as exc:  # a hook raising what the engine does not isolate
            if is_fatal(exc):
                raise
            error = self._redactor.text(repr(exc))
            logger.error("session_end of %s raised %s; supervising on", self.name, error)
        if will_restart:
            await process.pause()
            await asyncio.sleep(min(policy.backoff * (2**self._auto_restarts), policy.backoff_max))
            self._auto_restarts += 1
            self._consecutive_failures = 0
            self._supervising = None
            try:
                await process.restart_after_crash()
            except BaseException as exc:  # e.g. a session_start hook: a crash, supervised too
                if is_fatal(exc):
                    raise
                self.crashed(f"restart failed: {self._redactor.text(repr(exc))}")
        else:
            self._supervising = None  # no restart coming: inject() dead-letters from here on
            self.failing = asyncio.current_task()
            try:
                await process.fail()
            finally:
                self.failing = None
