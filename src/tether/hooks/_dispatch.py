"""The dispatch loop: one event through a snapshot of its chain.

For each hook of the chain (taken once, at the start: registrations made while it runs count
from the next dispatch): skip it if it is disabled, queue it if it is async, skip it if its
matcher does not match the event as dispatched, use up a ``once`` hook; then run its executor
under its timeout, apply what happened (a change of the data, a block, an error) and stop at a
block. Async hooks run after the chain, blocked or not.

Invariants kept here:

* No hook can reach data it was not handed: the chain runs on a copy of the caller's data, the
  result is a copy of what the hooks left, and after a hook's error or timeout the later hooks
  get a copy the failed hook (or a thread or task it left running) can no longer reach.
* A hook that finishes without suspending costs no timer: its coroutine is stepped directly
  and its timeout armed only if it suspends. A hook that holds the event loop past its timeout
  (a blocking call in an async hook, which nothing can interrupt) is timed out when it returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from time import perf_counter
from types import CoroutineType
from typing import TYPE_CHECKING, Any, Final

from ._errors import HookBlocked, HookTimeoutError
from ._events import BLOCKABLE_EVENTS
from ._hook import _awaiting, _cancelling, _raise_timed_out, _resume, _Steps, _unexplained
from ._recording import detach, not_a_dict

if TYPE_CHECKING:
    from ._context import HookContext
    from ._events import HookEvent
    from ._hook import _Hook
    from ._manager import HookManager
    from ._recording import DispatchRecord, _Off

__all__ = ["Chain", "call", "finish"]

logger = logging.getLogger("tether.hooks")


#: A step that held the loop less than this is not looked at further (a trivial hook's takes
#: a microsecond; a timeout or a loop_block_warn of under 0.1 ms would be noise).
_HELD_FLOOR: Final = 1e-4


async def call(hook: _Hook, ctx: HookContext, timeout: float | None) -> float:
    """Run ``hook``'s executor on ``ctx`` within ``timeout``; return the longest time one of
    its steps held the event loop. The hook's own exceptions propagate (a timeout as
    HookTimeoutError)."""
    coro = hook.executor.run(ctx)
    if type(coro) is not CoroutineType:  # another awaitable: stepped the same way
        coro = _awaiting(coro)
    started = perf_counter()
    # Iterating the coroutine steps it: the loop body runs only if it suspends (a hook that
    # returns at once needs no timer), and its return ends the loop without an exception.
    for pending in coro.__await__():
        return await finish(hook, coro, pending, timeout, perf_counter() - started)
    return perf_counter() - started


async def finish(
    hook: _Hook, coro: Coroutine[Any, Any, Any], pending: Any, timeout: float | None, first: float
) -> float:
    """Finish a hook's coroutine that suspended once (yielding ``pending``; its first step
    took ``first`` seconds) within ``timeout``; return its longest step."""
    steps = _Steps(first)
    if timeout is None:
        await _resume(coro, pending, steps)
        return steps.longest
    try:
        async with asyncio.timeout(timeout) as scope:
            await _resume(coro, pending, steps)
        if scope.expired():  # the hook swallowed its cancellation
            raise TimeoutError
    except Exception as exc:
        if scope.expired():
            _raise_timed_out(hook, timeout, exc)
        raise
    return steps.longest


class Chain:
    """One run of a chain: what it did so far (the dispatch's result is built from it)."""

    __slots__ = (
        "background",
        "blocked",
        "blocked_by",
        "errors",
        "event",
        "fired",
        "last",
        "manager",
        "reason",
        "recording",
    )

    def __init__(
        self, manager: HookManager, event: HookEvent, recording: DispatchRecord | _Off
    ) -> None:
        self.manager = manager
        self.event = event
        self.recording = recording
        self.fired = 0
        self.last: _Hook | None = None  # the last hook that ran
        self.blocked = False
        self.blocked_by: str | None = None  # the name of the hook that blocked
        self.reason: str | None = None
        self.errors: list[tuple[_Hook, BaseException]] = []
        self.background: list[_Hook] = []

    async def run(
        self, hooks: tuple[_Hook, ...], ctx: HookContext, event: dict[str, Any], dry_run: bool
    ) -> None:
        """Run ``hooks`` in order on ``ctx``; matchers look at ``event`` (the data as
        dispatched, so no hook can switch a later one off or on)."""
        recording = self.recording
        for hook in hooks:
            if not hook.enabled:
                continue
            if hook.mode == "async":
                self.background.append(hook)
                continue
            if hook.matcher is not None and not hook.matcher.matches(event):
                recording.skipped(hook, perf_counter())
                continue
            if hook.once:
                if hook.spent:  # used up by an overlapping dispatch
                    continue
                if not dry_run:
                    hook.spent = True
                    hook.manager._drop(hook)
            self.fired += 1
            self.last = hook
            held = ctx.data
            outcome = error = None
            started = perf_counter()
            try:
                coro = hook.executor.run(ctx)
                if type(coro) is not CoroutineType:  # another awaitable: stepped the same way
                    coro = _awaiting(coro)
                for pending in coro.__await__():  # the body runs only if the hook suspends
                    timeout = self.manager._timeout_of(hook)
                    busy = await finish(hook, coro, pending, timeout, perf_counter() - started)
                    break
                else:
                    busy = perf_counter() - started
                if busy >= _HELD_FLOOR:
                    outcome, error = self.held_loop(hook, ctx, busy)
            except HookBlocked as exc:
                outcome, error = self.refused(hook, exc)
            except (Exception, asyncio.CancelledError, SystemExit) as exc:  # sys.exit() too
                if not isinstance(exc, Exception) and _cancelling():
                    raise  # this task is being cancelled: not a hook error to isolate
                timed_out = isinstance(exc, HookTimeoutError) or getattr(exc, "timed_out", False)
                outcome, error = ("timed_out" if timed_out else "failed"), exc
                self.failed(hook, exc, ctx)
            if ctx.data is not held and not isinstance(ctx.data, dict):
                bad = not_a_dict(hook, ctx)  # not data at all: undone, the hook's error
                ctx.data = held
                self.failed(hook, bad, ctx)
                if outcome is None:
                    outcome, error = "failed", bad
            recording.ran(hook, outcome, error, started, perf_counter(), ctx.data)
            if self.blocked:
                break

    def refused(self, hook: _Hook, exc: HookBlocked) -> tuple[str | None, BaseException | None]:
        """A hook raised HookBlocked: a block of a blockable event (it always says why), else
        ignored with a warning."""
        if self.event not in BLOCKABLE_EVENTS:
            logger.warning(
                "hook %s (%s) tried to block %s, which cannot be blocked; ignored",
                self.manager._shown(hook),
                hook.hook_id,
                self.event.value,
            )
            return None, None
        if not exc.reason:  # a refusal always says why, as a command hook's does
            exc = _unexplained(hook)
        self.blocked = True
        self.blocked_by = hook.name
        self.reason = exc.reason
        return "blocked", exc

    def held_loop(
        self, hook: _Hook, ctx: HookContext, busy: float
    ) -> tuple[str | None, BaseException | None]:
        """After a hook that ran without error: one whose step held the event loop longer
        than its timeout is timed out (it could not be interrupted, but its run is recorded
        so, its error says why, and fail_closed blocks); one over the manager's
        ``loop_block_warn`` is warned of. Either is logged once per hook, and counted in the
        manager's ``loop_blocks`` each time."""
        warn = self.manager.loop_block_warn
        timeout = self.manager._timeout_of(hook)
        over = timeout is not None and busy > timeout
        if not over and (warn is None or busy <= warn):
            return None, None
        blocks = self.manager.loop_blocks
        key = (self.event.value, "timed_out" if over else "warned")
        blocks[key] = blocks.get(key, 0) + 1
        self.manager._warn_blocked(hook, self.event.value, busy, timeout)
        if not over:
            return None, None
        error = HookTimeoutError(
            f"hook {hook.name!r} ({hook.hook_id}) blocked the event loop for {busy:.3g}s, "
            f"over its {timeout:g}s timeout (a blocking call cannot be interrupted)"
        )
        self.failed(hook, error, ctx, log=False)
        return "timed_out", error

    def failed(
        self, hook: _Hook, error: BaseException, ctx: HookContext, *, log: bool = True
    ) -> None:
        """A hook error: logged, kept for the result and the error listeners, the data cut off
        from the hook; a fail_closed hook's error blocks a blockable event."""
        if log:
            self.manager._log_failure(hook, self.event.value, error)
        self.errors.append((hook, error))
        detach(ctx)
        if hook.fail_closed and self.event in BLOCKABLE_EVENTS and not self.blocked:
            self.blocked = True
            self.blocked_by = hook.name
            self.reason = f"hook failed (fail_closed): {str(error) or type(error).__name__}"
