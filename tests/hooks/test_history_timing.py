"""How hook runs are timed: per hook, or (a chain found fast every time) once per dispatch.

A chain whose hooks all finish without suspending, fast, QUICK_AFTER recorded dispatches in a
row, is timed once at its end and its runs say ``duration_shared``. Anything else about it — a
slow dispatch, a hook that suspends, a changed chain, a dry run — is timed per hook. The
thresholds are set per test (monkeypatch on the module's constants) so that what counts as
fast does not depend on how fast the machine running the tests is.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tether import HookBlocked, HookContext, HookEvent, HookManager, HookRun
from tether.hooks import _recording
from tether.hooks._history import HistoryRecorder
from tether.store import HistoryStore

UPS = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
AFTER = 5  # QUICK_AFTER in these tests
DEFAULTS = (_recording.QUICK_AFTER, _recording.FAST, _recording.SLOW, _recording.DEMOTED)


@pytest.fixture(autouse=True)
def thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fast: under 50 ms a hook (a trivial hook is far under that, even under coverage on a
    loaded machine); slow: over twice that a hook, or 100 ms if that is longer."""
    monkeypatch.setattr(_recording, "QUICK_AFTER", AFTER)
    monkeypatch.setattr(_recording, "FAST", 0.05)
    monkeypatch.setattr(_recording, "SLOW", 0.1)
    monkeypatch.setattr(_recording, "DEMOTED", -2 * AFTER)


async def passes(ctx: HookContext) -> None:
    return None


class Sleeper:
    """A hook that blocks the loop for ``seconds`` when told to (a slow synchronous hook)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    async def __call__(self, ctx: HookContext) -> None:
        if self.seconds:
            time.sleep(self.seconds)  # noqa: ASYNC251 (blocking on purpose)


def chain(*hooks: Any) -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager()
    for i, fn in enumerate(hooks):
        manager.register(UPS, fn, name=f"h{i}", priority=-i)
    manager.recorder = history = HistoryRecorder("p", size=10_000)
    return manager, history


def timed_once(manager: HookManager) -> bool:
    """Whether the manager's user_prompt_submit chain is timed once (not per hook)."""
    return type(manager._cache.get(UPS)) is _recording.TimedOnce


async def dispatches(manager: HookManager, n: int) -> None:
    for _ in range(n):
        await manager.dispatch(UPS, DATA)


def last_dispatch(history: HistoryRecorder) -> list[HookRun]:
    runs = history.runs()
    last = runs[-1].dispatch_id
    return [run for run in runs if run.dispatch_id == last]


async def test_a_chain_is_timed_per_hook_until_found_fast_quick_after_times_in_a_row() -> None:
    manager, history = chain(passes, passes, passes)
    await dispatches(manager, AFTER)
    assert not any(run.duration_shared for run in history.runs())
    await dispatches(manager, 1)
    runs = last_dispatch(history)
    assert [run.duration_shared for run in runs] == [True, True, True]
    assert runs[1].duration_ms == pytest.approx(runs[0].duration_ms, abs=1e-6)  # even shares
    assert runs[2].duration_ms == pytest.approx(runs[0].duration_ms, abs=1e-6)
    assert [run.hook_name for run in runs] == ["h0", "h1", "h2"]
    assert all(run.outcome == "passed" for run in runs)
    stamps = [run.recorded_at for run in runs]
    assert stamps == sorted(stamps)


async def test_a_single_hook_is_always_timed_on_its_own() -> None:
    manager, history = chain(passes)
    await dispatches(manager, 3 * AFTER)
    assert not any(run.duration_shared for run in history.runs())
    assert not timed_once(manager)


async def test_the_shares_add_up_to_the_time_the_chain_took() -> None:
    manager, history = chain(passes, passes)
    await dispatches(manager, AFTER + 1)
    before = time.time()
    await manager.dispatch(UPS, DATA)
    after = time.time()
    runs = last_dispatch(history)
    assert all(run.duration_shared for run in runs)
    total = sum(run.duration_ms for run in runs) / 1e3
    assert 0 <= total <= after - before + 1e-6


async def test_a_dispatch_timed_once_that_was_slow_sends_the_chain_back_to_per_hook() -> None:
    sleeper = Sleeper()
    manager, history = chain(passes, sleeper, passes)
    await dispatches(manager, AFTER + 1)
    sleeper.seconds = 0.4  # over twice FAST for each of the three hooks
    await dispatches(manager, 1)
    slow = last_dispatch(history)
    assert all(run.duration_shared for run in slow)  # shared, and says so
    assert sum(run.duration_ms for run in slow) >= 390
    await dispatches(manager, 1)
    exact = last_dispatch(history)
    assert [run.duration_shared for run in exact] == [False, False, False]
    assert exact[1].duration_ms >= 390
    assert exact[0].duration_ms < 390
    assert exact[2].duration_ms < 390


async def test_a_chain_sent_back_must_be_fast_longer_before_it_is_timed_once_again() -> None:
    sleeper = Sleeper()
    manager, history = chain(passes, sleeper)
    await dispatches(manager, AFTER + 1)
    sleeper.seconds = 0.25  # two hooks: over twice FAST for each
    await dispatches(manager, 1)
    sleeper.seconds = 0.0
    await dispatches(manager, 2 * AFTER + AFTER - 1)  # from DEMOTED up to one short of AFTER
    assert not last_dispatch(history)[0].duration_shared
    await dispatches(manager, 2)
    assert last_dispatch(history)[0].duration_shared


async def test_a_hook_that_suspends_in_a_chain_timed_once_is_timed_on_its_own() -> None:
    wait = asyncio.Event()
    wait.set()
    suspend = [False]

    async def maybe_sleeps(ctx: HookContext) -> None:
        if suspend[0]:
            await asyncio.sleep(0.3)

    manager, history = chain(passes, passes, maybe_sleeps, passes)
    await dispatches(manager, AFTER + 1)
    suspend[0] = True
    await dispatches(manager, 1)
    first, second, sleeper, last = last_dispatch(history)
    # The hooks before it share the time up to its first step, its first step included.
    assert first.duration_shared
    assert second.duration_shared
    assert sleeper.duration_shared
    assert first.duration_ms == pytest.approx(second.duration_ms, abs=1e-6)
    assert first.duration_ms < 250
    assert sleeper.duration_ms >= 290  # its own time after the first step, plus a share
    assert not last.duration_shared
    assert last.duration_ms < 250
    assert not timed_once(manager)  # and the chain is timed per hook from now on
    await dispatches(manager, 1)
    assert not any(run.duration_shared for run in last_dispatch(history))


async def test_a_chain_that_suspends_is_never_timed_once() -> None:
    async def yields(ctx: HookContext) -> None:
        await asyncio.sleep(0)

    manager, history = chain(passes, yields)
    await dispatches(manager, 3 * AFTER)
    assert not any(run.duration_shared for run in history.runs())


async def test_outcomes_and_skips_are_kept_in_a_chain_timed_once() -> None:
    async def blocks(ctx: HookContext) -> None:
        if ctx.data["prompt"] == "no!":
            raise HookBlocked("refused")

    async def writes(ctx: HookContext) -> None:
        ctx.data["prompt"] = ctx.data["prompt"] + "!"

    async def fails(ctx: HookContext) -> None:
        if ctx.data["prompt"] == "no!":
            raise RuntimeError("boom")

    manager = HookManager()
    manager.register(UPS, writes, name="writes", priority=3)
    manager.register(UPS, passes, name="skipped", priority=2, matcher={"trigger_id": "other"})
    manager.register(UPS, fails, name="fails", priority=1)
    manager.register(UPS, blocks, name="blocks", priority=0)
    manager.recorder = history = HistoryRecorder("p", size=10_000)
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    runs = last_dispatch(history)
    assert [(r.hook_name, r.outcome) for r in runs] == [
        ("writes", "applied"),
        ("skipped", "skipped"),
        ("fails", "passed"),
        ("blocks", "passed"),
    ]
    assert [r.duration_shared for r in runs] == [True, False, True, True]
    assert runs[1].duration_ms == 0.0
    result = await manager.dispatch(UPS, {**DATA, "prompt": "no"})
    assert result.blocked
    assert result.reason == "refused"
    runs = last_dispatch(history)
    assert [(r.hook_name, r.outcome, r.error) for r in runs] == [
        ("writes", "applied", None),
        ("skipped", "skipped", None),
        ("fails", "failed", "boom"),
        ("blocks", "blocked", "refused"),
    ]
    assert all(r.duration_ms >= 0 for r in runs)


async def test_a_changed_chain_is_timed_per_hook_again() -> None:
    manager, history = chain(passes, passes)
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    manager.register(UPS, passes, name="new")
    await dispatches(manager, 1)
    assert not any(run.duration_shared for run in last_dispatch(history))
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    assert manager.set_enabled(manager.registered(UPS)[0], False) == 1
    await dispatches(manager, 1)
    assert not any(run.duration_shared for run in last_dispatch(history))


async def test_a_dry_run_is_timed_per_hook() -> None:
    manager, _ = chain(passes, passes)
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    tracer = HistoryRecorder("p", trace=True)
    await manager.dispatch(UPS, DATA, recorder=tracer, dry_run=True)
    assert [run.duration_shared for run in tracer.runs()] == [False, False]


async def test_a_shared_duration_is_stored_and_read_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "tether.db")
    manager = HookManager()
    manager.register(UPS, passes, name="a")
    manager.register(UPS, passes, name="b")
    manager.recorder = history = HistoryRecorder("p", sink=store.write)
    await dispatches(manager, AFTER + 1)
    history.flush()
    stored = store.query("p")
    assert [r.duration_shared for r in stored[-2:]] == [True, True]
    assert not any(r.duration_shared for r in stored[:-2])
    assert stored[-1].as_dict()["duration_shared"] is True


def test_a_table_stored_before_shared_durations_reads_them_false(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE hook_runs (recorded_at REAL NOT NULL, hook_id TEXT, hook_name TEXT, "
        "event TEXT, process_id TEXT NOT NULL, source TEXT, mode TEXT, outcome TEXT, "
        "duration_ms REAL, error TEXT, patch_applied INTEGER, dispatch_id TEXT, "
        "dispatch_depth INTEGER, data_before TEXT, data_after TEXT, required INTEGER)"
    )
    db.execute(
        "INSERT INTO hook_runs VALUES (1.0, 'h1', 'old', 'stop', 'p', 'code', 'sync', "
        "'passed', 0.5, NULL, 0, 'x-1', 0, NULL, NULL, 1)"
    )
    db.commit()
    db.close()
    (run,) = HistoryStore(path).query("p")
    assert run.hook_name == "old"
    assert run.duration_shared is False


def test_the_defaults_keep_a_trivial_chain_eligible_and_a_slow_one_per_hook() -> None:
    quick_after, fast, slow, demoted = DEFAULTS  # (read before the fixture patched them)
    assert quick_after >= 100  # a new chain is timed per hook for a while
    assert fast <= 10e-6  # shared only while hooks take microseconds
    assert slow <= 1e-3  # a shared duration is off by well under a millisecond
    assert demoted <= -quick_after


async def test_a_clock_stepped_back_gives_zero_not_negative_shares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager, history = chain(passes, passes)
    await dispatches(manager, AFTER + 1)
    from tether.hooks import _manager

    real = time.time
    reads = iter([real(), real() - 3600])  # the start, then the end an hour back
    monkeypatch.setattr(_manager, "_now", lambda: next(reads))
    await dispatches(manager, 1)
    runs = history.runs()[:2]  # dated an hour back, so read first
    assert [run.duration_shared for run in runs] == [True, True]
    assert [run.duration_ms for run in runs] == [0.0, 0.0]


async def test_the_cli_marks_a_shared_duration_with_a_tilde() -> None:
    from tether.cli._hooks import _run_cells

    manager, history = chain(passes, passes)
    await dispatches(manager, AFTER + 1)
    first, shared = history.runs()[0].as_dict(), history.runs()[-1].as_dict()
    assert not _run_cells(first)[7].startswith("~")
    assert _run_cells(shared)[7] == f"~{shared['duration_ms']:.1f}"


async def test_a_slow_dispatch_while_sent_back_starts_the_longer_streak_again() -> None:
    sleeper = Sleeper()
    manager, _ = chain(passes, sleeper)
    await dispatches(manager, AFTER + 1)
    sleeper.seconds = 0.25  # two hooks: over twice FAST for each
    await dispatches(manager, 1)  # sent back: DEMOTED (-2 * AFTER)
    sleeper.seconds = 0.0
    await dispatches(manager, 2 * AFTER - 2)  # two short of 0
    sleeper.seconds = 0.25  # two hooks: over twice FAST for each
    await dispatches(manager, 1)  # slow again: from DEMOTED once more
    sleeper.seconds = 0.0
    await dispatches(manager, 3 * AFTER - 1)
    assert not timed_once(manager)
    await dispatches(manager, 1)
    assert timed_once(manager)


async def test_a_pause_under_slow_keeps_a_short_chain_timed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_recording, "FAST", 0.02)  # two hooks: slow over 80 ms, but
    monkeypatch.setattr(_recording, "SLOW", 0.3)  # not under 300 ms
    sleeper = Sleeper()
    manager, history = chain(passes, sleeper)
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    sleeper.seconds = 0.12
    await dispatches(manager, 1)
    assert timed_once(manager)
    sleeper.seconds = 0.4
    await dispatches(manager, 1)
    assert not timed_once(manager)
    assert all(run.duration_shared for run in last_dispatch(history))


async def test_a_chain_timed_once_deep_copies_what_a_hook_wrote_into_the_result() -> None:
    lists: list[list[int]] = []

    async def writer(ctx: HookContext) -> None:
        if ctx.data.get("write"):
            mine = [1]
            lists.append(mine)
            ctx.data["items"] = mine

    manager, history = chain(passes, writer)
    await dispatches(manager, AFTER + 1)
    assert timed_once(manager)
    result = await manager.dispatch(UPS, {**DATA, "write": True})
    lists[0].append(2)  # what the hook kept of what it wrote
    assert result.data == {**DATA, "write": True, "items": [1]}
    assert last_dispatch(history)[-1].outcome == "applied"


async def test_the_copy_of_nested_data_and_a_context_factory_are_not_the_first_hooks_time() -> None:
    """Regression: the dispatch's start was read before the (deep, tracked) copy of nested data
    and before a context_factory ran, so a hook doing nothing was recorded as taking as long as
    copying the payload or building the context."""
    manager, history = chain(passes)

    def slow_factory(*args: Any) -> HookContext:
        time.sleep(0.05)  # the factory's own time
        return HookContext(*args)

    rows = {**DATA, "rows": [[i] for i in range(50_000)]}
    for data, factory in ((rows, None), (DATA, slow_factory)):
        began = time.perf_counter()
        await manager.dispatch(UPS, data, context_factory=factory)
        elapsed_ms = (time.perf_counter() - began) * 1e3
        assert last_dispatch(history)[0].duration_ms < elapsed_ms / 10
