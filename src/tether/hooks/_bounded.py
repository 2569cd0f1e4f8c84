"""The one way tether awaits code it does not own (a hook, an extension-point handler, a tool, an
approval handler) under a timeout.

The code is awaited in the calling task, as any coroutine is: libraries that manage their own
cancellation (anyio's cancel scopes inside httpx and the openai SDK, asyncpg, task groups) see
exactly what they would see outside tether. The policy, written here once:

* A cancellation of the calling task (its owner stopping it) propagates, whatever the callee did.
* The callee's own exceptions, a ``CancelledError`` it raises itself included, are its own: they
  propagate unchanged, for the caller to isolate.
* At the deadline the task is cancelled, and the wait ends with ``Expired`` (a TimeoutError)
  whatever the callee made of its cancellation: let it through, turned it into an error of its
  own (kept as ``__cause__``), or swallowed it and returned. A callee that swallows it and keeps
  awaiting is cancelled again every ``RECANCEL`` seconds until it ends, so one that catches a
  single cancellation cannot outlive its timeout for long. (One that swallows every cancellation
  cannot be stopped in its own task; its owner's stop abandons the run it is part of.)
* ``at_deadline``, when given, is called once as the deadline passes (before the callee sees its
  cancellation): a caller keeps there what the callee may not change afterwards.
* A callee that returns past its deadline without the timer having fired (it held the event loop
  with a blocking call, which nothing can interrupt) has ``Expired`` too: it ran longer than its
  timeout. ``held`` says how long the loop was held, for the caller's warning.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Final, TypeVar

from ..errors import TetherError

__all__ = ["RECANCEL", "Expired", "LoopProbe", "within"]

T = TypeVar("T")

#: Seconds between the cancellations of a callee that swallowed its timeout's cancellation and
#: went on awaiting. Long enough for a well-behaved callee's cleanup (closing a connection) to
#: finish after the first one, short enough to bound one that ignores it.
RECANCEL: Final = 0.5


class Expired(TetherError, TimeoutError):
    """Raised by ``within`` when the awaited code ran past its timeout; ``held`` is how long it
    held the event loop without yielding when that is why (0.0 otherwise)."""

    def __init__(self, timeout: float, held: float = 0.0) -> None:
        super().__init__(f"timed out after {timeout:g}s")
        self.timeout = timeout
        self.held = held


class _Alarm:
    """Cancels ``task`` at the deadline, then again every RECANCEL seconds until disarmed."""

    __slots__ = ("at_deadline", "fired", "handle", "loop", "task")

    def __init__(
        self,
        task: asyncio.Task[object],
        loop: asyncio.AbstractEventLoop,
        at_deadline: Callable[[], object] | None,
    ) -> None:
        self.task = task
        self.loop = loop
        self.at_deadline = at_deadline
        self.fired = 0
        self.handle: asyncio.TimerHandle | None = None

    def fire(self) -> None:
        if not self.fired and self.at_deadline is not None:
            self.at_deadline()
        self.fired += 1
        self.task.cancel("tether: timed out")
        self.handle = self.loop.call_later(RECANCEL, self.fire)

    def disarm(self) -> bool:
        """Stop the alarm and take back the cancellations it made; whether it had fired."""
        if self.handle is not None:
            self.handle.cancel()
        for _ in range(self.fired):
            self.task.uncancel()
        return self.fired > 0


async def within(
    awaitable: Awaitable[T],
    timeout: float | None,
    at_deadline: Callable[[], object] | None = None,
) -> T:
    """Await ``awaitable`` in this task, bounded by ``timeout`` seconds (None: unbounded).

    Raises ``Expired`` when it ran past the timeout (see the module's policy); anything else it
    raises propagates unchanged.
    """
    if timeout is None:
        return await awaitable
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - awaited outside a task (a bare event-loop callback)
        async with asyncio.timeout(timeout):
            return await awaitable
    loop = asyncio.get_running_loop()
    before = task.cancelling()
    alarm = _Alarm(task, loop, at_deadline)
    started = perf_counter()
    alarm.handle = loop.call_at(loop.time() + timeout, alarm.fire)
    try:
        value = await awaitable
    except BaseException as exc:
        if not alarm.disarm():
            raise
        if isinstance(exc, asyncio.CancelledError) and task.cancelling() > before:
            raise  # the owner cancelled the task too: its cancellation wins
        cause = None if isinstance(exc, asyncio.CancelledError | TimeoutError) else exc
        raise Expired(timeout) from cause
    if alarm.disarm():  # it swallowed its cancellation and returned
        raise Expired(timeout)
    elapsed = perf_counter() - started
    if elapsed > timeout:  # held the loop past its deadline: the timer could not fire
        raise Expired(timeout, held=elapsed)
    return value


class LoopProbe:
    """Made just before awaiting some code: when the event loop next ran something else. Until
    then, that code held the loop (its first step: a later step's hold is not seen)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None
        asyncio.get_running_loop().call_soon(self._ran)

    def _ran(self) -> None:
        self.at = perf_counter()

    def held(self, started: float) -> float:
        """Seconds from ``started`` until the loop ran again (or until now, if it did not)."""
        return (self.at if self.at is not None else perf_counter()) - started
