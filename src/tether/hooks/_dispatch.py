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
* A hook is awaited in the dispatching task under its timeout (hooks/_bounded.py): what it
  calls (httpx, the openai SDK, a task group) sees asyncio as it would outside tether. A hook
  that holds the event loop past its timeout (a blocking call in an async hook, which nothing can
  interrupt) is timed out when it returns; with the manager's ``loop_block_warn`` set, a shorter
  hold is warned of.
"""

from __future__ import annotations

import asyncio
import logging
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final, NoReturn

from ._bounded import Expired, LoopProbe, within
from ._copy import copy_payload
from ._errors import HookBlocked, HookTimeoutError
from ._events import BLOCKABLE_EVENTS
from ._hook import _unexplained
from ._recording import detach, not_a_dict

if TYPE_CHECKING:
    from ._context import HookContext
    from ._events import HookEvent
    from ._hook import Engine, _Hook
    from ._recording import DispatchRecord, _Off

__all__ = ["Chain", "call"]

logger = logging.getLogger("tether.hooks")


#: A step that held the loop less than this is not looked at further (a trivial hook's takes
#: a microsecond; a timeout or a loop_block_warn of under 0.1 ms would be noise).
_HELD_FLOOR: Final = 1e-4


async def call(hook: _Hook, ctx: HookContext, timeout: float | None) -> float:
    """Run ``hook``'s executor on ``ctx`` within ``timeout``; return how long it held the
    event loop when that is measured (see ``held``), else 0.0. The hook's own exceptions
    propagate (a timeout as HookTimeoutError; a block it raised on its timeout stays a block)."""
    probe = LoopProbe() if hook.manager.loop_block_warn is not None else None
    frozen: list[dict[str, Any]] = []

    def freeze() -> None:  # at the deadline: what the hook changes after it is not kept
        if isinstance(ctx.data, dict):
            frozen.append(copy_payload(ctx.data))

    started = perf_counter()
    try:
        await within(hook.executor.run(ctx), timeout, freeze)
    except Expired as exc:
        if exc.held:  # it returned, having held the loop past its timeout: Chain.held_loop
            return exc.held
        if frozen:
            ctx.data = frozen[0]
        _raise_timed_out(hook, exc)
    return 0.0 if probe is None else probe.held(started)


def _raise_timed_out(hook: _Hook, expired: Expired) -> NoReturn:
    """Raise what a hook that ran past its timeout comes to: its timeout, whatever it made of
    its cancellation (the error it raised instead is kept as the cause). A block stays a block:
    a block is never turned into an error that lets the action through."""
    cause = expired.__cause__
    if isinstance(cause, HookBlocked):
        raise cause
    raise HookTimeoutError(
        f"hook {hook.name!r} ({hook.hook_id}) timed out after {expired.timeout:g}s"
    ) from cause


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

    def __init__(self, manager: Engine, event: HookEvent, recording: DispatchRecord | _Off) -> None:
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
        task = asyncio.current_task()
        cancels = task.cancelling() if task is not None else 0
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
                busy = await call(hook, ctx, self.manager._timeout_of(hook))
                if busy >= _HELD_FLOOR:
                    outcome, error = self.held_loop(hook, ctx, busy)
            except HookBlocked as exc:
                outcome, error = self.block(hook, exc)
            except (Exception, asyncio.CancelledError, SystemExit) as exc:  # sys.exit() too
                if (
                    not isinstance(exc, Exception)
                    and task is not None
                    and (task.cancelling() > cancels)
                ):
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
            recording.ran(hook, outcome, error, started, perf_counter(), ctx.data, ctx.told())
            if task is not None and task.cancelling() > cancels:
                # The hook swallowed this task's cancellation (its owner stopping it): it ends
                # the dispatch all the same, as if the hook had let it through.
                raise asyncio.CancelledError
            if self.blocked:
                break

    def block(self, hook: _Hook, exc: HookBlocked) -> tuple[str | None, BaseException | None]:
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
        if not exc.reason:  # a block always says why, as a command hook's does
            exc = _unexplained(hook)
        self.blocked = True
        self.blocked_by = hook.name
        self.reason = exc.reason
        return "blocked", exc

    def held_loop(
        self, hook: _Hook, ctx: HookContext, busy: float
    ) -> tuple[str | None, BaseException | None]:
        """After a hook that ran without error: one that held the event loop longer
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
