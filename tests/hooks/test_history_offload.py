"""A HistoryRecorder with an ``offload`` hands each batch to it (a writer thread) instead of
writing on the loop: one batch at a time, so batches keep their order; one that fails goes
back ahead of those recorded since; what is held back is bounded, and what is dropped is
counted and logged."""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import threading
from collections.abc import Callable, Iterator

import pytest

from tether import HookContext, HookEvent, HookManager, HookRun
from tether.hooks._history import HistoryRecorder

UPS = HookEvent.USER_PROMPT_SUBMIT


async def audit(ctx: HookContext) -> None:
    pass


@pytest.fixture
def writer() -> Iterator[Callable[[Callable[[], None]], asyncio.Future[None]]]:
    """An offload: one thread that runs the writes in the order they were handed over, each
    settling a future of the loop."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="writer")
    try:
        yield lambda write: asyncio.wrap_future(pool.submit(write))
    finally:
        pool.shutdown(wait=True)


class GatedSink:
    """A sink whose first write waits for ``gate`` and then fails, as on a locked file."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls = 0
        self.written: list[HookRun] = []

    def __call__(self, runs: list[HookRun]) -> None:
        self.calls += 1
        if self.calls == 1:
            self.gate.wait(10)
            raise sqlite3.OperationalError("database is locked")
        self.written.extend(runs)


async def recorded(size: int = 1000, **kwargs: object) -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager()
    manager.register(UPS, audit)
    manager.recorder = history = HistoryRecorder("p", size=size, **kwargs)  # type: ignore[arg-type]
    return manager, history


async def dispatch(manager: HookManager, n: int) -> None:
    data = {"prompt": "hi", "event_id": f"e{n}", "trigger_id": "desk", "trigger_type": "manual"}
    await manager.dispatch(UPS, data)


async def test_a_batch_that_failed_off_the_loop_lands_ahead_of_those_recorded_since(
    writer: Callable[[Callable[[], None]], concurrent.futures.Future[None]],
) -> None:
    sink = GatedSink()
    manager, history = await recorded(sink=sink, offload=writer)
    for n in range(3):
        await dispatch(manager, n)
    history.flush()  # handed over: waits for the gate, off the loop
    for n in range(3, 6):
        await dispatch(manager, n)
    history.flush()  # one batch at a time: this one waits for the first
    assert sink.calls == 1
    sink.gate.set()  # the first fails and goes back ahead of the rest
    assert not await history.settle(5.0)
    assert await history.settle(5.0)
    assert sink.written == history.runs()
    assert len({r.dispatch_id for r in sink.written}) == 6
    assert history.dropped == 0


async def test_entries_held_back_past_the_ring_size_are_dropped_counted_and_logged(
    writer: Callable[[Callable[[], None]], concurrent.futures.Future[None]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = GatedSink()
    manager, history = await recorded(size=5, sink=sink, offload=writer)
    await dispatch(manager, 0)
    history.flush()  # under way while ten more are recorded: five of them are kept
    for n in range(1, 11):
        await dispatch(manager, n)
    sink.gate.set()  # it fails: its entry goes back ahead, past the bound, and is dropped
    assert not await history.settle(5.0)
    assert await history.settle(5.0)
    assert history.dropped == 6
    assert "6 hook-run records dropped" in caplog.text
    assert sink.written == history.runs()  # the newest five, as the ring holds them


async def test_runs_of_a_batch_under_way_are_read_back_once_even_if_it_has_landed(
    writer: Callable[[Callable[[], None]], concurrent.futures.Future[None]],
) -> None:
    landed = threading.Event()
    written: list[HookRun] = []

    def sink(runs: list[HookRun]) -> None:
        written.extend(runs)
        landed.set()

    manager, history = await recorded(sink=sink, offload=writer)
    for n in range(2):
        await dispatch(manager, n)
    history.flush()
    assert landed.wait(5)  # written, but its settling has not reached the loop yet
    await dispatch(manager, 2)  # pending, not handed over
    runs = history.with_unwritten(list(written))
    assert runs == history.runs()
    assert history.with_unwritten(list(written), last=1) == history.runs()[-1:]
    assert await history.settle(5.0)


async def test_settle_says_when_a_write_failed_and_keeps_its_entries(
    writer: Callable[[Callable[[], None]], concurrent.futures.Future[None]],
) -> None:
    sink = GatedSink()
    sink.gate.set()
    manager, history = await recorded(sink=sink, offload=writer)
    await dispatch(manager, 0)
    assert not await history.settle(5.0)
    assert sink.written == []
    assert history.with_unwritten([]) == history.runs()  # still held, to be written later
    history.flush()  # the store is back
    assert await history.settle(5.0)
    assert sink.written == history.runs()
