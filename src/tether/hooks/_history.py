"""Hook-run history: a bounded in-memory ring per process, plus batched writes to a sink.

The ring holds each dispatch's DispatchRecord (see _recording) as the dispatch handed it over;
its runs become HookRuns (redacted, named, with their source) only when someone reads them or
the batch is flushed.

With an ``offload`` (a function that runs a write elsewhere and returns its future), a flush
made on a running loop hands its batch to it and returns: a sink that waits (a file another
program holds locked) never stalls the loop. One batch is under way at a time, so batches land
in the order they were recorded; one that fails goes back ahead of those recorded since.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from ._copy import copy_payload
from ._events import HookEvent
from ._recording import DispatchRecord, RecordedRun, TracedRun, changes, provenance
from ._records import HookRun

if TYPE_CHECKING:
    from ._context import HookContext
    from ._hook import Engine, _Hook

__all__ = ["HistoryRecorder", "filter_runs"]

logger = logging.getLogger("tether.hooks")

RING_SIZE: Final = 1000
#: What the ring holds: one dispatch's runs, or one background run.
Entry = DispatchRecord
BATCH: Final = 256
FLUSH_INTERVAL: Final = 0.5
#: Longest wait before an offloaded write that failed is tried again (the wait doubles from
#: FLUSH_INTERVAL with each failure in a row).
RETRY_MAX: Final = 30.0

#: Runs a write elsewhere (a writer thread) and returns its future, settled on the loop; None
#: when it cannot now, and the write is then made at once, where the flush is.
Offload = Callable[[Callable[[], None]], "asyncio.Future[None] | None"]


def _source(manager: Engine, hook: _Hook) -> str:
    owner = hook.manager
    if owner is manager:
        return hook.source
    if owner is manager._shared:
        return "shared"
    return "inherited"


class HistoryRecorder:
    """Records every hook execution of the dispatches of the manager it is attached to.

    The ring holds the last ``size`` entries, an entry being one dispatch (all its hook runs)
    or one background-hook run.
    """

    def __init__(
        self,
        process: str,
        *,
        size: int = RING_SIZE,
        redact: Callable[[str], str] | None = None,
        sink: Callable[[list[HookRun]], None] | None = None,
        offload: Offload | None = None,
        trace: bool = False,
    ) -> None:
        self.process = process
        self._ring: deque[Entry] = deque(maxlen=size)
        self._redact = redact
        self._sink = sink
        self._pending: list[Entry] = []
        #: Entries a failed write held back: a full batch is BATCH more than these, so a
        #: broken store is retried on the timer, not on every dispatch.
        self._held = 0
        self._timer: asyncio.TimerHandle | None = None
        self._offload = offload
        #: The batch handed to ``offload`` and not settled yet (its entries and their runs),
        #: and what its settling sets (True: written). One at a time: batches keep their order.
        self._batch: tuple[list[Entry], list[HookRun]] | None = None
        self._written: asyncio.Future[bool] | None = None
        self._failures = 0  # offloaded writes failed in a row
        #: Entries given up because more were held back than the ring holds (logged).
        self.dropped = 0
        self._unlogged = 0
        #: Keep each hook's data before and after (dry runs); off for ordinary history.
        self.trace = trace
        #: (Replaced as a whole: a listener may remove itself while the listeners are told.)
        self._listeners: tuple[tuple[Callable[..., None], bool], ...] = ()

    def send_to(self, sink: Callable[[list[HookRun]], None]) -> None:
        """Hand the runs recorded from now on to ``sink`` instead, on the loop at each flush
        (a store elsewhere, say: a cluster's stream). The ring, the listeners and whoever
        holds this recorder are kept."""
        self._sink = sink
        self._offload = None

    def add_listener(self, listener: Callable[..., None], *, lazy: bool = False) -> None:
        """Call ``listener`` with the HookRuns of each dispatch (or background run) as it is
        recorded, in the task that dispatched (telemetry parents its spans there).

        The records are built at once for a listener; with ``lazy`` it gets a function that
        builds them instead, to call when (and if) it needs them. A listener that raises is
        logged and never fails the dispatch.
        """
        self._listeners += ((listener, lazy),)

    def remove_listener(self, listener: Callable[..., None]) -> None:
        """Stop calling ``listener`` (a listener not added: nothing happens)."""
        self._listeners = tuple(entry for entry in self._listeners if entry[0] != listener)

    # -- recording (hot path: store, do not build) -------------------------------------------

    def add(self, entry: Entry) -> None:
        """Keep one dispatch's record (batch it for the sink, hand it to the listeners)."""
        self._ring.append(entry)
        if self._sink is not None:
            self._queue(entry)
        if self._listeners:
            self._tell(entry)

    def _tell(self, entry: Entry) -> None:
        runs: list[HookRun] | None = None
        for listener, lazy in self._listeners:
            try:
                if lazy:
                    listener(functools.partial(self._expand, entry))
                else:
                    runs = self._expand(entry) if runs is None else runs
                    listener(runs)
            except Exception:
                logger.exception("a hook-run listener failed")

    def _queue(self, entry: Entry) -> None:
        """Batch an entry for the sink: written when BATCH are pending or FLUSH_INTERVAL later."""
        self._pending.append(entry)
        if self._batch is not None:  # held back while a write waits: bounded
            self._trim()
        if len(self._pending) >= self._held + BATCH:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
            else:
                self._timer = loop.call_later(FLUSH_INTERVAL, self.flush)

    def ran(
        self,
        manager: Engine,
        hook: _Hook,
        ctx: HookContext,
        depth: int,
        outcome: str,
        started: float,
        error: BaseException | None,
        before: dict[str, Any],
        dispatch_id: str = "",
    ) -> None:
        """One background (async) hook run."""
        duration = time.perf_counter() - started
        after = copy_payload(ctx.data)  # what the hook left, out of reach of what it runs on
        changed = changes(before, after) if outcome == "passed" else None
        if changed is not None:
            outcome = "applied"
        run = RecordedRun(hook, outcome, error, time.perf_counter(), duration, changed, ctx.notice)
        if self.trace:
            run = TracedRun(run, before, after)
        self._background(manager, ctx.event, depth, dispatch_id, run)

    def skipped(
        self, manager: Engine, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None:
        """A background hook whose matcher did not match (it took no queue slot)."""
        run = RecordedRun(hook, "skipped", None, time.perf_counter(), 0.0)
        self._background(manager, ctx.event, depth, dispatch_id, run)

    def _background(
        self, manager: Engine, event: HookEvent, depth: int, dispatch_id: str, run: RecordedRun
    ) -> None:
        record = DispatchRecord(dispatch_id, manager, event, depth, background=True)
        run.ended = record.started
        record.runs.append(run)
        self.add(record)

    # -- building records (off the hot path) ----------------------------------------------------

    def _text(self, text: str) -> str:
        return self._redact(text) if self._redact is not None else text

    def _error_text(self, error: BaseException | None) -> str | None:
        if error is None:
            return None
        return self._text(str(error) or type(error).__name__)

    def _clean(self, data: dict[str, Any] | None) -> dict[str, Any] | None:
        if data is None or self._redact is None:
            return data
        redact = self._redact

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        return {k: walk(v) for k, v in data.items()}

    def _run(self, record: DispatchRecord, run: RecordedRun, patch: bool) -> HookRun:
        # Every free-text field is redacted: the error, the data, and the name (a command
        # hook's is its command line). The others are ids and fixed words no secret reaches.
        hook = run.hook
        outcome = run.outcome or ("applied" if run.changed else "passed")
        return HookRun(
            record.dated(run),
            hook.hook_id,
            self._text(hook.name),
            record.event.value,
            self.process,
            _source(record.manager, hook),
            hook.mode,
            outcome,
            run.duration * 1e3,
            self._error_text(run.error),
            patch,
            record.dispatch_id,
            record.depth,
            self._clean(getattr(run, "before", None)),
            self._clean(getattr(run, "after", None)),
            hook.fail_closed,
            False,
            self._clean(provenance(run.changed)),
            None if run.notice is None else self._text(run.notice),
        )

    def _expand(self, record: Entry) -> list[HookRun]:
        """The HookRuns of one dispatch's record."""
        used = False
        if record.event is HookEvent.USER_PROMPT_SUBMIT and not record.background:
            # A prompt change is used only if the chain ends with a prompt other than the one
            # it started with (a change a later hook undid was not used), and is not blocked.
            # (A prompt left other than a string is one the process does not read back.)
            final = record.prompt
            for run in record.runs:
                if run.changed and "prompt" in run.changed and run.outcome != "skipped":
                    final = run.changed["prompt"][1]
            used = not record.blocked and isinstance(final, str) and final != record.prompt
        return [
            self._run(record, run, used and run.outcome is None and _prompt_changed(run))
            for run in record.runs
        ]

    def flush(self) -> None:
        """Hand pending records to the sink now.

        On a running loop, with an ``offload``, the batch is handed to it and this returns at
        once; while one batch is under way the next waits, and is handed over when it lands.
        A write that fails (a file locked past its busy timeout, say) is logged and its
        entries are kept for the next flush, the newest ``size`` of them at most (the ring's
        size; those given up are counted in ``dropped`` and logged), so a store that is back
        gets them and one that stays broken holds little.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flush(here=True)

    def _flush(self, *, here: bool) -> None:
        """Hand the pending batch to ``offload``; if it cannot take it, write it now only if
        ``here`` (else it stays pending)."""
        if self._batch is not None:
            return
        pending, self._pending = self._pending, []
        if not pending or self._sink is None:
            return
        sink = self._sink
        try:
            runs = [run for entry in pending for run in self._expand(entry)]
            if self._hand_over(pending, runs):
                return
            if not here:
                self._pending[:0] = pending
                return
            sink(runs)
        except Exception:
            logger.exception("writing hook-run records failed; kept for the next write")
            self._keep(pending)
        else:
            self._held = 0

    def _hand_over(self, entries: list[Entry], runs: list[HookRun]) -> bool:
        """Give the batch to ``offload`` (True), or say it must be written here (False)."""
        if self._offload is None or self._sink is None:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        done = self._offload(functools.partial(self._sink, runs))
        if done is None:
            return False
        self._batch = (entries, runs)
        self._written = loop.create_future()
        done.add_done_callback(self._landed)
        return True

    def _landed(self, future: asyncio.Future[None]) -> None:
        """The batch under way settled (on the loop): keep it if it failed, else go on."""
        assert self._batch is not None
        entries, _ = self._batch
        self._batch = None
        written, self._written = self._written, None
        error = future.exception()
        if error is None:
            self._held = 0
            self._failures = 0
            self._report()
        else:
            logger.error("writing hook-run records failed; kept for the next write", exc_info=error)
            self._keep(entries)
            # Tried again off the loop only: after a stop, the next flush writes them.
            self._failures += 1
            if self._timer is None:
                delay = min(FLUSH_INTERVAL * 2**self._failures, RETRY_MAX)
                self._timer = asyncio.get_running_loop().call_later(delay, self._retry)
        if written is not None and not written.done():
            written.set_result(error is None)
        if error is None and self._pending:
            self.flush()  # what was recorded while it waited

    def _retry(self) -> None:
        self._timer = None
        self._flush(here=False)

    def _keep(self, failed: list[Entry]) -> None:
        """Put the entries of a failed write back ahead of those recorded since (bounded)."""
        self._pending = failed + self._pending  # (a sink may record while it writes)
        self._trim()
        self._report()
        self._held = len(self._pending)

    def _trim(self) -> None:
        limit = self._ring.maxlen
        if limit is not None and len(self._pending) > limit:
            over = len(self._pending) - limit
            del self._pending[:over]
            self.dropped += over
            self._unlogged += over

    def _report(self) -> None:
        if self._unlogged:
            logger.warning(
                "process %s: %d hook-run records dropped, the oldest held back: more than "
                "the %d the ring holds waited for a store that was busy or failing "
                "(%d dropped in all)",
                self.process,
                self._unlogged,
                self._ring.maxlen,
                self.dropped,
            )
            self._unlogged = 0

    async def settle(self, within: float) -> bool:
        """Write what is pending and wait for it, ``within`` seconds at most (the writes run
        off the loop with an ``offload``). True if nothing is left unwritten; a write that
        failed keeps its entries for a later flush (no retry here)."""
        deadline = asyncio.get_running_loop().time() + within
        while True:
            self.flush()
            written = self._written
            if written is None:  # written here, or nothing to write
                return not self._pending
            try:
                async with asyncio.timeout_at(deadline):
                    ok = await asyncio.shield(written)
            except TimeoutError:
                return False
            if not ok:
                return False

    def with_unwritten(self, stored: list[HookRun], **filters: Any) -> list[HookRun]:
        """``stored`` (this process's runs read back from the sink's store, filtered) with the
        runs not written yet added, filtered alike: what the store will hold, oldest first.

        A batch under way may have landed already (its settling is not known on the loop
        yet): its runs found in ``stored`` are not added twice.
        """
        if self._batch is None and not self._pending:
            return stored
        seen = {_identity(run) for run in stored}
        unwritten = [] if self._batch is None else self._batch[1]
        unwritten = [run for run in unwritten if _identity(run) not in seen]
        unwritten += [run for entry in self._pending for run in self._expand(entry)]
        last = filters.pop("last", None)
        runs = stored + filter_runs(unwritten, **filters)
        runs.sort(key=_recorded_at)  # stable: the store's order for ties
        return filter_runs(runs, last=last)

    def runs(self, **filters: Any) -> list[HookRun]:
        """Recorded runs, oldest first (filters: event, outcome, hook, since, last).

        The ring holds entries in the order they finished (a nested dispatch before the one it
        ran in, background runs whenever they end); runs are sorted by time, as the store is.
        """
        runs = [run for entry in self._ring for run in self._expand(entry)]
        runs.sort(key=_recorded_at)
        return filter_runs(runs, **filters)

    def __len__(self) -> int:
        return sum(len(entry.runs) for entry in self._ring)


def _prompt_changed(run: RecordedRun) -> bool:
    return run.changed is not None and "prompt" in run.changed


def _recorded_at(run: HookRun) -> float:
    return run.recorded_at


def _identity(run: HookRun) -> tuple[Any, ...]:
    """What tells a run read back from the store from the others (its time is stored exactly,
    as a REAL)."""
    return (run.recorded_at, run.hook_id, run.dispatch_id, run.event, run.outcome)


def _since(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()  # a naive datetime is local time, as Python has it
    # Text without an offset is UTC, as over HTTP and in the CLI (not the host's local time).
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def filter_runs(
    runs: list[HookRun],
    *,
    event: str | None = None,
    outcome: str | None = None,
    hook: str | None = None,
    since: Any = None,
    last: int | None = None,
) -> list[HookRun]:
    """Filter runs by event, outcome, hook (id or name), time; keep the ``last`` N."""
    start = _since(since)
    out = [
        r
        for r in runs
        if (event is None or r.event == event)
        and (outcome is None or r.outcome == outcome)
        and (hook is None or hook in (r.hook_id, r.hook_name))
        and (start is None or r.recorded_at >= start)
    ]
    if last is not None:
        out = out[-last:] if last > 0 else []
    return out
