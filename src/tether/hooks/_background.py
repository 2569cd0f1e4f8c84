"""Async (background) hooks: run after the synchronous chain, on a bounded pool and queue."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import TYPE_CHECKING, Final

from ._context import HookContext
from ._copy import copy_payload

if TYPE_CHECKING:
    from ._manager import HookManager, _Hook
    from ._records import RunRecorder

    Job = tuple[HookManager, _Hook, HookContext, int, RunRecorder | None, str]

__all__ = ["BackgroundPool", "drain", "submit"]

logger = logging.getLogger("tether.hooks")

QUEUE_SIZE: Final = 1000
WORKERS: Final = 4


class BackgroundPool:
    """One per event loop: a bounded queue served by at most WORKERS tasks.

    Workers are started on demand and exit when the queue is empty, so no task outlives its work.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[Job] = asyncio.Queue(QUEUE_SIZE)
        self.workers: set[asyncio.Task[None]] = set()

    def wake(self) -> None:
        if len(self.workers) < WORKERS:
            task = self.loop.create_task(self._work())
            self.workers.add(task)
            task.add_done_callback(self.workers.discard)

    async def _work(self) -> None:
        while not self.queue.empty():
            manager, hook, ctx, depth, recorder, dispatch_id = self.queue.get_nowait()
            try:
                await _run_one(manager, hook, ctx, depth, recorder, dispatch_id)
            finally:
                self.queue.task_done()


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BackgroundPool] = (
    weakref.WeakKeyDictionary()
)


def _pool() -> BackgroundPool:
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = BackgroundPool(loop)
    return pool


async def _run_one(
    manager: HookManager,
    hook: _Hook,
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
) -> None:
    started = time.perf_counter()
    before = dict(ctx.data)
    outcome, error = "passed", None
    try:
        if hook.matcher is not None and not hook.matcher.matches(ctx.data):
            if recorder is not None:
                recorder.skipped(manager, hook, ctx, depth, dispatch_id)
            return
        await manager._await_bounded(hook, hook.fn(ctx))
    except Exception as exc:
        from ._errors import HookBlocked, HookTimeoutError

        if isinstance(exc, HookBlocked):
            logger.warning("async hook %s cannot block %s; ignored", hook.name, ctx.event.value)
        else:
            error = exc
            outcome = "timed_out" if isinstance(exc, HookTimeoutError) else "failed"
            manager._log_failure(hook, ctx.event.value, exc)
            from ._manager import HookErrorInfo

            await manager._report(
                HookErrorInfo(ctx.event.value, hook.hook_id, hook.name, ctx.process_id, exc),
                hook.manager,
            )
    if recorder is not None:
        recorder.ran(manager, hook, ctx, depth, outcome, started, error, before, dispatch_id)


def _own_context(ctx: HookContext) -> HookContext:
    return HookContext(ctx.event, ctx.process_id, copy_payload(ctx.data), dict(ctx.metadata))


async def run_inline(
    manager: HookManager,
    hooks: list[_Hook],
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
) -> None:
    """Run async hooks one after another now (dry runs), each on its own copy of the data."""
    for hook in hooks:
        await _run_one(manager, hook, _own_context(ctx), depth, recorder, dispatch_id)


def submit(
    manager: HookManager,
    hooks: list[_Hook],
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
) -> None:
    """Queue async hooks with their own copy of the final data; a full queue records 'dropped'."""
    pool = _pool()
    for hook in hooks:
        own = _own_context(ctx)
        try:
            pool.queue.put_nowait((manager, hook, own, depth, recorder, dispatch_id))
            pool.wake()
        except asyncio.QueueFull:
            logger.warning("async hook queue full; %s dropped for %s", hook.name, ctx.event.value)
            if recorder is not None:
                recorder.dropped(manager, hook, own, depth, dispatch_id)


async def drain(timeout: float) -> bool:
    """Wait (at most ``timeout`` s) until queued async hooks have run; True if all did."""
    pool = _pools.get(asyncio.get_running_loop())
    if pool is None:
        return True
    try:
        async with asyncio.timeout(timeout):
            await pool.queue.join()
    except TimeoutError:
        return False
    return True


def pending() -> int:
    pool = _pools.get(asyncio.get_running_loop())
    return 0 if pool is None else pool.queue.qsize()
