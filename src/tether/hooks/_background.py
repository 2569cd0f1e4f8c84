"""Async (background) hooks: run after the synchronous chain, on a bounded pool and queue.

Invariants kept here:

* A job is admitted when its dispatch ends: a matcher that does not match records ``skipped``
  and takes no queue slot; a ``once`` hook is used up when it is queued, so it runs at most once.
* Each manager (one process) has its own bounded queue and may run at most MANAGER_WORKERS of
  the pool's WORKERS jobs at once; a free worker takes the next job of the managers with jobs
  waiting in turn, so one process whose async hooks are slow or numerous neither fills another's
  queue nor holds every worker while another's jobs wait.
* A manager with jobs waiting and none running always gets a worker: when every worker is
  taken (say, by two processes whose async hooks all hang), one more starts for it, above
  WORKERS, and serves only such managers. So the pool never has more than WORKERS workers plus
  one per manager, and no process waits on another's hooks.
* Each job runs in its own task, so a drain can cancel the jobs of one manager (one process)
  without touching the others that share the loop's pool.
* Every admitted job ends in exactly one record: its outcome, ``dropped`` (its manager's queue
  full, or still queued at a drain deadline; the record's error says which) or ``timed_out``
  (cancelled at a drain deadline).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, Final

from ._context import HookContext
from ._copy import copy_payload

if TYPE_CHECKING:
    from ._hook import Engine, RunRecorder, _Hook

    Job = tuple[Engine, _Hook, HookContext, int, RunRecorder | None, str]

__all__ = ["BackgroundPool", "drain", "submit"]

logger = logging.getLogger("tether.hooks")

#: Jobs one manager (one process) may have waiting for a worker (its running ones do not count);
#: one more is recorded ``dropped``. The bound is per manager, so a flood fills only the queue of
#: the process it comes from; the jobs waiting on a loop are at most this times its managers.
QUEUE_SIZE: Final = 1000
#: Jobs running at once on one event loop's pool, across every manager.
WORKERS: Final = 8
#: Jobs of one manager running at once: half the pool, so a process whose async hooks all hang
#: leaves the other half to the rest (and a manager running none always gets a worker).
MANAGER_WORKERS: Final = 4
#: Seconds a drain waits, past its deadline, for the hooks it cancelled to wind down.
CANCEL_GRACE: Final = 1.0


class BackgroundPool:
    """One per event loop: a bounded queue per manager, served by at most WORKERS tasks.

    Workers are started on demand and exit when no waiting job may start (none is queued, or
    every manager with jobs queued already runs MANAGER_WORKERS), so no task outlives its work.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: The waiting jobs of each manager that has some; the order of the keys is the order
        #: in which the managers get their next turn (a manager served goes to the back).
        self.queues: dict[Engine, deque[Job]] = {}
        #: How many jobs each manager runs now (a manager running none has no key).
        self.active: dict[Engine, int] = {}
        self.workers: set[asyncio.Task[None]] = set()
        #: The workers started above WORKERS for a manager running none (see put).
        self.extras: set[asyncio.Task[None]] = set()
        self.running: dict[asyncio.Task[None], Job] = {}
        self._waiters: list[tuple[Engine | None, asyncio.Future[None]]] = []

    def put(self, job: Job) -> bool:
        """Queue a job; False when its manager's queue is full."""
        manager = job[0]
        waiting = self.queues.get(manager)
        if waiting is None:
            waiting = self.queues[manager] = deque()
        elif len(waiting) >= QUEUE_SIZE:
            return False
        waiting.append(job)
        # A worker that finds nothing it may start exits; every worker still in the set takes
        # another look once its job ends, so a job queued now is never left without one.
        if len(self.workers) - len(self.extras) < WORKERS:
            self.workers.add(self.loop.create_task(self._work()))
        elif manager not in self.active and len(waiting) == 1:  # all taken: one more for it
            extra = self.loop.create_task(self._work(extra=True))
            self.workers.add(extra)
            self.extras.add(extra)
        return True

    def busy(self, manager: Engine | None = None) -> bool:
        """Whether jobs (of ``manager``'s dispatches, or any) are queued or running."""
        if manager is None:
            return bool(self.queues or self.running)
        return manager in self.queues or manager in self.active

    def _next(self, extra: bool = False) -> Job | None:
        """The next job to start: the first manager in turn that is under its share runs its
        oldest waiting job and goes to the back of the line. A worker started above WORKERS
        (``extra``) serves only managers running none."""
        share = 1 if extra else MANAGER_WORKERS
        for manager in self.queues:
            if self.active.get(manager, 0) < share:
                break
        else:
            return None
        waiting = self.queues.pop(manager)
        job = waiting.popleft()
        if waiting:
            self.queues[manager] = waiting
        self.active[manager] = self.active.get(manager, 0) + 1
        return job

    def _ended(self, manager: Engine) -> None:
        count = self.active[manager] - 1
        if count:
            self.active[manager] = count
        else:
            del self.active[manager]

    async def _work(self, extra: bool = False) -> None:
        me = asyncio.current_task()
        assert me is not None
        try:
            while (job := self._next(extra)) is not None:
                started: list[bool] = []
                task = self.loop.create_task(_started(job, started))
                self.running[task] = job
                try:
                    await asyncio.wait((task,))
                finally:
                    if not task.done():  # the worker itself was cancelled (loop shutdown)
                        task.cancel()
                    if not started:  # cancelled before its first step: _run_one never ran
                        _record_dropped(job, "cancelled before it started (drain or shutdown)")
                    del self.running[task]
                    self._ended(job[0])
                    self._settled()
        finally:
            # Now, not in a done callback: a put made before that callback ran would count a
            # worker that no longer looks at the queues.
            self.workers.discard(me)
            self.extras.discard(me)

    def _settled(self) -> None:
        if not self._waiters:
            return
        for manager, waiter in list(self._waiters):
            if not waiter.done() and not self.busy(manager):
                waiter.set_result(None)

    def abandon(self, manager: Engine | None, deadline: float) -> list[asyncio.Task[None]]:
        """Drop the queued jobs (of ``manager``, or all) and cancel the running ones (returned)."""
        owners = list(self.queues) if manager is None else [manager]
        for owner in owners:
            for job in self.queues.pop(owner, ()):
                hook = job[1]
                logger.warning(
                    "async hook %s not started within the %gs drain deadline; dropped",
                    _shown(owner, hook),
                    deadline,
                )
                _record_dropped(job, f"not started within the {deadline:g}s drain deadline")
        cancelled = []
        for task, job in list(self.running.items()):
            if manager is None or job[0] is manager:
                logger.warning(
                    "async hook %s still running at the %gs drain deadline; cancelled",
                    _shown(job[0], job[1]),
                    deadline,
                )
                task.cancel(f"still running at the {deadline:g}s drain deadline")
                cancelled.append(task)
        self._settled()  # a drain of everything may have waited only for the jobs dropped here
        return cancelled


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BackgroundPool] = (
    weakref.WeakKeyDictionary()
)


def _pool() -> BackgroundPool:
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = BackgroundPool(loop)
    return pool


async def _started(job: Job, started: list[bool]) -> None:
    """Run ``job``, noting in ``started`` that it did (a task cancelled before its first step
    never runs its coroutine, so only its worker can record it)."""
    started.append(True)
    await _run_one(*job)


async def _run_one(
    manager: Engine,
    hook: _Hook,
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
) -> None:
    from ._dispatch import call
    from ._errors import HookBlocked, HookTimeoutError
    from ._hook import DEPTH, HookErrorInfo

    started = time.perf_counter()
    before = copy_payload(ctx.data)  # deep: a write inside a nested value is a change too
    outcome = "passed"
    error: BaseException | None = None
    # A dispatch made by this hook is nested one level deeper, as in the sync chain.
    token = DEPTH.set(depth + 1)
    try:
        await call(hook, ctx, manager._timeout_of(hook))
    except HookBlocked:
        name = _shown(manager, hook)
        logger.warning("async hook %s cannot block %s; ignored", name, ctx.event.value)
    except asyncio.CancelledError as exc:
        error = HookTimeoutError(
            f"async hook {hook.name!r} ({hook.hook_id}) was cancelled: {exc.args[0]}"
            if exc.args
            else f"async hook {hook.name!r} ({hook.hook_id}) was cancelled"
        )
        if recorder is not None:
            recorder.ran(
                manager, hook, ctx, depth, "timed_out", started, error, before, dispatch_id
            )
        raise
    except (Exception, SystemExit) as exc:  # a hook calling sys.exit() is isolated too
        error = exc
        timed_out = isinstance(exc, HookTimeoutError) or getattr(exc, "timed_out", False)
        outcome = "timed_out" if timed_out else "failed"
        manager._log_failure(hook, ctx.event.value, exc)
        await manager._report(
            HookErrorInfo(
                ctx.event.value, hook.hook_id, hook.name, ctx.process_id, exc, ctx, dispatch_id
            ),
            hook.manager,
        )
    finally:
        DEPTH.reset(token)
    if recorder is not None:
        recorder.ran(manager, hook, ctx, depth, outcome, started, error, before, dispatch_id)


def _own_context(ctx: HookContext) -> HookContext:
    own = HookContext(ctx.event, ctx.process_id, copy_payload(ctx.data), dict(ctx.metadata))
    own._dry_run = ctx._dry_run
    return own


def _admitted(
    manager: Engine,
    hook: _Hook,
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
    event: dict[str, Any],
    *,
    use_once: bool,
) -> bool:
    """Whether ``hook`` runs for this dispatch: its matcher matches ``event`` (the data as
    dispatched, as in the sync chain) and a once hook is unused."""
    if hook.matcher is not None and not hook.matcher.matches(event):
        if recorder is not None:
            recorder.skipped(manager, hook, ctx, depth, dispatch_id)
        return False
    if hook.once and use_once:
        if hook.spent:
            return False
        hook.spent = True
        hook.manager._drop(hook)
    return True


async def run_inline(
    manager: Engine,
    hooks: list[_Hook],
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
    event: dict[str, Any],
) -> None:
    """Run async hooks one after another now (dry runs), each on its own copy of the data.

    Once hooks are not used up: a dry run changes nothing.
    """
    for hook in hooks:
        if _admitted(manager, hook, ctx, depth, recorder, dispatch_id, event, use_once=False):
            await _run_one(manager, hook, _own_context(ctx), depth, recorder, dispatch_id)


def submit(
    manager: Engine,
    hooks: list[_Hook],
    ctx: HookContext,
    depth: int,
    recorder: RunRecorder | None,
    dispatch_id: str,
    event: dict[str, Any],
) -> None:
    """Queue async hooks with their own copy of the final data; a full queue records 'dropped'.

    Their matchers look at ``event``, the data as dispatched."""
    pool = _pool()
    for hook in hooks:
        if not _admitted(manager, hook, ctx, depth, recorder, dispatch_id, event, use_once=True):
            continue
        job = (manager, hook, _own_context(ctx), depth, recorder, dispatch_id)
        if not pool.put(job):
            whose = f"process {ctx.process_id!r}" if ctx.process_id else "its hook manager"
            name = _shown(manager, hook)
            logger.warning(
                "async hook queue of %s full; %s dropped for %s", whose, name, ctx.event.value
            )
            _record_dropped(job, f"async hook queue of {whose} full ({QUEUE_SIZE} jobs)")


def _shown(manager: Engine, hook: _Hook) -> str:
    """A hook's name for a log line: a command hook is named after its command line, which
    may hold a secret (the manager's redactor, when its process set one, takes it out)."""
    redact = manager.redact
    return redact(hook.name) if redact is not None else hook.name


def _record_dropped(job: Job, why: str) -> None:
    """Record a job that never started as ``dropped``, with ``why`` as its error."""
    from ._errors import HookError

    manager, hook, ctx, depth, recorder, dispatch_id = job
    if recorder is not None:
        started = time.perf_counter()
        recorder.ran(
            manager, hook, ctx, depth, "dropped", started, HookError(why), ctx.data, dispatch_id
        )


async def drain(timeout: float, manager: Engine | None = None) -> bool:
    """Wait until the queued and running async hooks of ``manager``'s dispatches (or all) end.

    At the deadline (``timeout`` seconds) the ones still queued are dropped and the running
    ones cancelled, each recorded. True if all ended in time.
    """
    pool = _pools.get(asyncio.get_running_loop())
    if pool is None or not pool.busy(manager):
        return True
    waiter: asyncio.Future[None] = pool.loop.create_future()
    entry = (manager, waiter)
    pool._waiters.append(entry)
    try:
        async with asyncio.timeout(timeout):
            await waiter
    except TimeoutError:
        cancelled = pool.abandon(manager, timeout)
        if cancelled:  # let them record their end (a command hook's program is killed)
            await asyncio.wait(cancelled, timeout=CANCEL_GRACE)
        return False
    finally:
        pool._waiters.remove(entry)
    return True
