"""Async (background) hooks: after the synchronous chain, on a bounded pool, never in the way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from _process_support import completions, eventually, finished, scripted, ticket
from conftest import ScriptFactory
from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager
from tether.hooks._background import MANAGER_WORKERS, QUEUE_SIZE, WORKERS, drain
from tether.hooks._history import HistoryRecorder
from tether.models import ScriptedModel

UPS = HookEvent.USER_PROMPT_SUBMIT
TC = HookEvent.TASK_CREATED
PROMPT_DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}
CREATED = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


class Gated:
    """An async hook that waits for ``gate``; counts hooks waiting now and at most."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started = 0
        self.finished = 0
        self.active = 0
        self.peak = 0
        self.cancelled = 0

    async def __call__(self, ctx: HookContext) -> None:
        self.started += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.active -= 1
        self.finished += 1


# -- after the chain, never in the way --------------------------------------------------------


async def test_an_async_hook_runs_after_the_synchronous_chain_and_sees_its_final_data() -> None:
    order: list[tuple[str, str]] = []

    async def background(ctx: HookContext) -> None:
        order.append(("async", ctx.data["prompt"]))

    async def rewrite(ctx: HookContext) -> None:
        order.append(("sync", ctx.data["prompt"]))
        ctx.data["prompt"] = "rewritten"

    manager = HookManager()
    manager.register(UPS, background, mode="async", priority=100)
    manager.register(UPS, rewrite)
    result = await manager.dispatch(UPS, PROMPT_DATA)
    assert order == [("sync", "hello")]
    assert result.fired == 1
    assert await drain(5)
    assert order == [("sync", "hello"), ("async", "rewritten")]


async def test_a_dispatch_returns_while_its_async_hook_is_still_running() -> None:
    slow = Gated()
    manager = HookManager()
    manager.register(UPS, slow, mode="async")
    result = await manager.dispatch(UPS, PROMPT_DATA)
    await eventually(lambda: slow.started, what="the async hook to start")
    assert (result.blocked, slow.finished) == (False, 0)
    slow.gate.set()
    assert await drain(5)
    assert slow.finished == 1


async def test_a_slow_async_hook_does_not_hold_up_the_run_it_belongs_to() -> None:
    slow = Gated()
    model = ScriptedModel()
    process = scripted(model=model)
    process.hooks.register(UPS, slow, mode="async")
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)  # the run finished while the async hook waits
        await eventually(lambda: slow.started, what="the async hook to start")
        assert (slow.finished, len(model.prompts)) == (0, 1)
        slow.gate.set()
    assert slow.finished == 1


async def test_an_async_hook_cannot_block_the_event() -> None:
    async def tries_to_block(ctx: HookContext) -> None:
        raise HookBlocked("too late to refuse")

    model = ScriptedModel()
    process = scripted(model=model)
    process.hooks.register(UPS, tries_to_block, mode="async", name="late")
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
    assert rec.outcomes() == ["success"]
    assert len(model.prompts) == 1
    assert process.dead_letters == []
    assert [r.outcome for r in process.hook_runs(hook="late")] == ["passed"]


async def test_each_async_hook_gets_its_own_copy_of_the_data() -> None:
    seen: list[str] = []

    async def scribbles(ctx: HookContext) -> None:
        ctx.data["prompt"] = "scribbled"

    async def reads(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])

    manager = HookManager()
    manager.register(UPS, scribbles, mode="async", priority=1)
    manager.register(UPS, reads, mode="async")
    manager.recorder = history = HistoryRecorder("p")
    result = await manager.dispatch(UPS, PROMPT_DATA)
    assert await drain(5)
    assert seen == ["hello"]
    assert result.data["prompt"] == "hello"
    by_name = {r.hook_name.rsplit(".", 1)[-1]: r for r in history.runs()}
    assert (by_name["scribbles"].outcome, by_name["scribbles"].patch_applied) == ("applied", False)
    assert by_name["reads"].outcome == "passed"


async def test_no_more_than_a_managers_share_of_the_workers_run_its_hooks_at_once() -> None:
    slow = Gated()
    manager = HookManager()
    manager.register(TC, slow, mode="async")
    for _ in range(WORKERS * 3):
        await manager.dispatch(TC, CREATED)
    await eventually(lambda: slow.active == MANAGER_WORKERS, what="a full share")
    await asyncio.sleep(0.02)
    assert (slow.peak, slow.started) == (MANAGER_WORKERS, MANAGER_WORKERS)
    slow.gate.set()
    assert await drain(5)
    assert (slow.finished, slow.peak) == (WORKERS * 3, MANAGER_WORKERS)


async def test_async_hooks_run_for_an_event_the_chain_blocked_so_audits_see_refusals() -> None:
    ran: list[str] = []

    async def audit(ctx: HookContext) -> None:
        ran.append(ctx.data["prompt"])

    async def refuse(ctx: HookContext) -> None:
        if ctx.data["prompt"] == "forbidden":
            raise HookBlocked("no")

    manager = HookManager()
    manager.register(UPS, audit, mode="async", priority=10)
    manager.register(UPS, refuse)
    manager.register(UPS, audit, mode="async", priority=-10)
    assert (await manager.dispatch(UPS, {**PROMPT_DATA, "prompt": "forbidden"})).blocked
    await manager.dispatch(UPS, PROMPT_DATA)
    assert await drain(5)
    assert sorted(ran) == ["forbidden", "forbidden", "hello", "hello"]


async def test_a_disabled_async_hook_is_not_queued() -> None:
    ran: list[str] = []

    async def audit(ctx: HookContext) -> None:
        ran.append("ran")

    manager = HookManager()
    hook_id = manager.register(UPS, audit, mode="async")
    manager.set_enabled(hook_id, False)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert await drain(5)
    assert (ran, history.runs()) == ([], [])


# -- declared in code, config and manifests ---------------------------------------------------


def test_an_async_fail_closed_hook_is_refused_at_registration() -> None:
    async def policy(ctx: HookContext) -> None:
        pass

    with pytest.raises(ValueError, match="fail_closed"):
        HookManager().register(UPS, policy, mode="async", fail_closed=True)


def test_an_async_fail_closed_hook_config_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="fail_closed"):
        HookConfig(event="user_prompt_submit", command="audit", mode="async", fail_closed=True)


def test_an_unknown_mode_is_refused() -> None:
    async def hook(ctx: HookContext) -> None:
        pass

    with pytest.raises(ValueError, match="mode"):
        HookManager().register(UPS, hook, mode="later")
    with pytest.raises(ValidationError, match="mode"):
        HookConfig(event="user_prompt_submit", command="audit", mode="later")  # type: ignore[arg-type]


async def test_an_async_command_hook_from_config_really_runs_in_the_background(
    tmp_path: Path, make_script: ScriptFactory
) -> None:
    out = tmp_path / "notified"
    script = make_script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        open({str(out)!r}, "w").write(event["data"]["outcome"])
        """
    )
    hook = HookConfig(event="task_completed", command=[script], mode="async", name="notify")
    process = scripted(hooks=[hook])
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
    assert out.read_text() == "success"  # stop() drained it
    [run] = process.hook_runs(hook="notify")
    assert (run.mode, run.source, run.outcome) == ("async", "config", "passed")


# -- recorded like any run ----------------------------------------------------------------


async def test_an_async_run_is_recorded_in_the_dispatch_it_belongs_to() -> None:
    async def sync_audit(ctx: HookContext) -> None:
        pass

    async def async_audit(ctx: HookContext) -> None:
        pass

    process = scripted()
    process.hooks.register(UPS, sync_audit, name="sync")
    process.hooks.register(UPS, async_audit, name="async", mode="async")
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
    [sync_run] = process.hook_runs(hook="sync")
    [async_run] = process.hook_runs(hook="async")
    assert (async_run.mode, async_run.source, async_run.outcome) == ("async", "code", "passed")
    assert async_run.dispatch_id == sync_run.dispatch_id
    assert async_run.dispatch_depth == sync_run.dispatch_depth == 0
    assert async_run.recorded_at >= sync_run.recorded_at


async def test_a_failing_async_hook_is_recorded_failed_and_reported() -> None:
    async def crashes(ctx: HookContext) -> None:
        raise RuntimeError("slack is down")

    errors: list[str] = []
    manager = HookManager()
    manager.register(UPS, crashes, mode="async", name="notify")
    manager.on_error(lambda info: errors.append(f"{info.hook_name}: {info.error}"))
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert await drain(5)
    [run] = history.runs()
    assert (run.outcome, run.error, run.mode) == ("failed", "slack is down", "async")
    assert errors == ["notify: slack is down"]


async def test_an_async_hook_past_its_timeout_is_recorded_timed_out() -> None:
    slow = Gated()
    manager = HookManager()
    manager.register(UPS, slow, mode="async", timeout=0.05)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert await drain(5)
    [run] = history.runs()
    assert run.outcome == "timed_out"
    assert run.error is not None
    assert "timed out after 0.05s" in run.error


async def test_a_dispatch_made_by_an_async_hook_is_one_level_deeper() -> None:
    """Regression: the background worker ran hooks at depth 0, so what they dispatched looked
    like a top-level dispatch."""
    manager = HookManager()

    async def follow_up(ctx: HookContext) -> None:
        await manager.dispatch(HookEvent.TASK_CREATED, CREATED)

    async def audit(ctx: HookContext) -> None:
        pass

    manager.register(HookEvent.TASK_COMPLETED, follow_up, mode="async", name="follow_up")
    manager.register(HookEvent.TASK_CREATED, audit, name="audit")
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(HookEvent.TASK_COMPLETED, {**CREATED, "outcome": "success"})
    assert await drain(5)
    assert history.runs(hook="follow_up")[0].dispatch_depth == 0
    assert history.runs(hook="audit")[0].dispatch_depth == 1


# -- a full queue ---------------------------------------------------------------------------


async def test_a_full_queue_records_the_async_hooks_it_could_not_take_as_dropped() -> None:
    slow = Gated()
    manager = HookManager()
    manager.register(HookEvent.TASK_CREATED, slow, mode="async", name="slow")
    manager.recorder = history = HistoryRecorder("p", size=QUEUE_SIZE + 100)
    extra = 5
    # No dispatch suspends (the chain is async only), so no worker starts before the queue is
    # full: QUEUE_SIZE jobs wait and the rest are dropped.
    for n in range(QUEUE_SIZE + extra):
        await manager.dispatch(HookEvent.TASK_CREATED, {**CREATED, "event_id": f"e{n}"})
    dropped = history.runs(outcome="dropped")
    assert len(dropped) == extra
    assert all((r.hook_name, r.mode) == ("slow", "async") for r in dropped)
    slow.gate.set()
    assert await drain(30)
    assert slow.finished == QUEUE_SIZE
    assert len(history.runs(outcome="passed")) == QUEUE_SIZE


@pytest.mark.slow
async def test_a_process_records_dropped_async_hooks_in_its_history(tmp_path: Path) -> None:
    slow = Gated()
    process = scripted(journal_path=str(tmp_path / "tether.db"), max_queue_size=QUEUE_SIZE + 100)
    process.hooks.register(HookEvent.TASK_CREATED, slow, mode="async", name="slow")
    await process.start()
    # inject() waits for its journal write off the loop, so workers take jobs meanwhile: the
    # first MANAGER_WORKERS hooks run (gated), then the queue fills and 3 more are dropped.
    for n in range(MANAGER_WORKERS):
        await process.inject(TriggerEvent("desk", "manual", {"n": n}))
    await eventually(lambda: slow.active == MANAGER_WORKERS, what="the workers to be busy")
    for n in range(QUEUE_SIZE + 3):
        await process.inject(TriggerEvent("desk", "manual", {"n": n}))
    slow.gate.set()
    await process.stop()
    assert len(process.hook_runs(hook="slow", outcome="dropped")) == 3
    assert len(process.hook_runs(hook="slow", outcome="passed")) == QUEUE_SIZE + MANAGER_WORKERS


# -- drained at stop -----------------------------------------------------------------------


async def test_stop_waits_for_pending_async_hooks_to_finish() -> None:
    async def slow_notify(ctx: HookContext) -> None:
        await asyncio.sleep(0.1)

    process = scripted()
    process.hooks.register(HookEvent.TASK_COMPLETED, slow_notify, mode="async", name="notify")
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
        assert process.hook_runs(hook="notify") == []
    [run] = process.hook_runs(hook="notify")
    assert run.outcome == "passed"


async def test_stop_cancels_async_hooks_still_running_at_the_deadline_and_drops_queued_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stuck = Gated()
    process = scripted(stop_timeout=0.1)
    process.hooks.register(HookEvent.TASK_CREATED, stuck, mode="async", name="stuck")
    await process.start()
    for _ in range(MANAGER_WORKERS + 2):
        await process.inject(ticket())
    await eventually(lambda: stuck.active == MANAGER_WORKERS, what="a busy share of the pool")
    await process.stop()
    assert (stuck.cancelled, stuck.active) == (MANAGER_WORKERS, 0)
    runs = process.hook_runs(hook="stuck")
    assert sorted(r.outcome for r in runs) == ["dropped"] * 2 + ["timed_out"] * MANAGER_WORKERS
    for run in process.hook_runs(outcome="timed_out"):
        assert run.error is not None
        assert "drain deadline" in run.error
    assert "drain deadline" in caplog.text


async def test_stopping_a_process_neither_waits_for_nor_cancels_another_ones_async_hooks() -> None:
    other_hook = Gated()
    other = scripted()
    other.hooks.register(HookEvent.TASK_CREATED, other_hook, mode="async", name="other")
    quick = AgentProcess("quick", ProcessConfig(model=ScriptedModel(), stop_timeout=0.1))
    await other.start()
    await quick.start()
    await other.inject(ticket())
    await eventually(lambda: other_hook.active == 1, what="the other process's hook")
    await quick.stop()
    assert (other_hook.active, other_hook.cancelled) == (1, 0)
    other_hook.gate.set()
    await other.stop()
    assert [r.outcome for r in other.hook_runs(hook="other")] == ["passed"]


async def test_drain_of_one_manager_leaves_other_managers_jobs_alone() -> None:
    first, second = Gated(), Gated()
    a, b = HookManager(), HookManager()
    a.register(UPS, first, mode="async")
    b.register(UPS, second, mode="async")
    await a.dispatch(UPS, PROMPT_DATA)
    await b.dispatch(UPS, PROMPT_DATA)
    await eventually(lambda: first.active and second.active, what="both hooks")
    assert await drain(0.05, a) is False
    assert (first.cancelled, second.cancelled, second.active) == (1, 0, 1)
    second.gate.set()
    assert await drain(5, b)
    assert second.finished == 1


# -- one process's async hooks do not starve another's ------------------------------------------


class Turns:
    """Async hooks that note, by label, the order they start in; each waits to be released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.held: dict[str, list[asyncio.Event]] = {}

    def hook(self, label: str) -> Callable[[HookContext], Awaitable[None]]:
        async def waits(ctx: HookContext) -> None:
            held = asyncio.Event()
            self.held.setdefault(label, []).append(held)
            self.started.append(label)
            await held.wait()

        return waits

    def release(self, label: str) -> None:
        self.held[label].pop(0).set()

    def release_all(self) -> None:
        for held in self.held.values():
            for event in held:
                event.set()


async def test_a_process_flooding_its_async_hook_queue_gets_no_other_process_hooks_dropped() -> (
    None
):
    """Regression: every process shared one queue and every worker, so one whose async hooks
    hung or came in a flood filled them and another process's async hooks were dropped."""
    flood, audit = Gated(), Gated()
    noisy, quiet = HookManager(), HookManager()
    noisy.register(TC, flood, mode="async", name="flood")
    quiet.register(TC, audit, mode="async", name="audit")
    noisy.recorder = noisy_history = HistoryRecorder("noisy", size=QUEUE_SIZE + 100)
    quiet.recorder = quiet_history = HistoryRecorder("quiet")
    extra = 3
    # No dispatch suspends (the chains are async only): no worker starts before both are queued.
    for n in range(QUEUE_SIZE + extra):
        await noisy.dispatch(TC, {**CREATED, "event_id": f"e{n}"}, process_id="noisy")
    for _ in range(3):
        await quiet.dispatch(TC, CREATED, process_id="quiet")
    await eventually(lambda: audit.active == 3, what="the quiet process's hooks to run")
    assert (flood.active, flood.finished) == (MANAGER_WORKERS, 0)  # the flood still hangs
    audit.gate.set()
    assert await drain(5, quiet)
    assert [r.outcome for r in quiet_history.runs()] == ["passed"] * 3
    dropped = noisy_history.runs(outcome="dropped")
    assert len(dropped) == extra
    assert {r.error for r in dropped} == {
        f"async hook queue of process 'noisy' full ({QUEUE_SIZE} jobs)"
    }
    flood.gate.set()
    assert await drain(30, noisy)
    assert flood.finished == QUEUE_SIZE


async def test_draining_a_flooding_manager_leaves_another_ones_running_and_queued_hooks() -> None:
    flood, audit = Gated(), Gated()
    noisy, quiet = HookManager(), HookManager()
    noisy.register(TC, flood, mode="async", name="flood")
    quiet.register(TC, audit, mode="async", name="audit")
    noisy.recorder = noisy_history = HistoryRecorder("noisy")
    for _ in range(MANAGER_WORKERS * 2):
        await noisy.dispatch(TC, CREATED)
    for _ in range(MANAGER_WORKERS + 2):  # two wait for a worker of the quiet manager's share
        await quiet.dispatch(TC, CREATED)
    await eventually(
        lambda: flood.active == audit.active == MANAGER_WORKERS, what="both shares busy"
    )
    assert await drain(0.05, noisy) is False
    assert (flood.cancelled, audit.cancelled, audit.active) == (MANAGER_WORKERS, 0, MANAGER_WORKERS)
    runs = noisy_history.runs()
    assert sorted(r.outcome for r in runs) == (
        ["dropped"] * MANAGER_WORKERS + ["timed_out"] * MANAGER_WORKERS
    )
    for run in runs:
        assert run.error is not None
        assert "0.05s drain deadline" in run.error
    audit.gate.set()
    assert await drain(5, quiet)
    assert audit.finished == MANAGER_WORKERS + 2


async def test_free_workers_take_the_managers_with_waiting_hooks_in_turn() -> None:
    turns = Turns()
    holders = [HookManager() for _ in range(WORKERS // MANAGER_WORKERS)]
    for holder in holders:
        holder.register(TC, turns.hook("hold"), mode="async")
        for _ in range(MANAGER_WORKERS):
            await holder.dispatch(TC, CREATED)
    await eventually(lambda: len(turns.started) == WORKERS, what="a full pool")
    waiting = {label: HookManager() for label in "abc"}
    for label, manager in waiting.items():  # all of a's jobs first, then b's, then c's
        manager.register(TC, turns.hook(label), mode="async")
        for _ in range(3):
            await manager.dispatch(TC, CREATED)
    # Each runs none: each gets a worker above the pool's at once, for one job at a time.
    await eventually(lambda: len(turns.started) == WORKERS + 3, what="one job of each")
    assert sorted(turns.started[WORKERS:]) == ["a", "b", "c"]
    for freed in range(1, 7):  # then a worker of the pool at a time takes them in turn
        turns.release("hold")
        started = WORKERS + 3 + freed
        await eventually(lambda n=started: len(turns.started) == n, what="the next job")
    assert turns.started[WORKERS + 3 :] == ["a", "b", "c", "a", "b", "c"]
    turns.release_all()
    assert await drain(5)


async def test_the_pool_runs_at_most_its_workers_and_each_manager_at_most_its_share() -> None:
    gated = [Gated() for _ in range(WORKERS // MANAGER_WORKERS + 1)]
    managers = [HookManager() for _ in gated]
    for manager, slow in zip(managers, gated, strict=True):
        manager.register(TC, slow, mode="async")
        for _ in range(MANAGER_WORKERS * 2):
            await manager.dispatch(TC, CREATED)
    await eventually(lambda: sum(g.active for g in gated) == WORKERS, what="a full pool")
    await asyncio.sleep(0.02)
    assert sum(g.started for g in gated) == WORKERS
    assert all(0 < g.peak <= MANAGER_WORKERS for g in gated)
    for slow in gated:
        slow.gate.set()
    assert await drain(5)
    assert [g.finished for g in gated] == [MANAGER_WORKERS * 2] * len(gated)


@pytest.mark.parametrize("steps", [0, 1, 2, 3])
async def test_every_admitted_job_is_recorded_even_if_a_drain_cancels_it_before_it_starts(
    steps: int,
) -> None:
    """Regression: a drain landing between a worker creating a job's task and that task's
    first step cancelled the job before it ran, and nothing recorded it."""
    entered: list[str] = []

    async def quick(ctx: HookContext) -> None:
        entered.append("quick")

    async def slow(ctx: HookContext) -> None:
        entered.append("slow")
        await asyncio.sleep(10)

    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")
    manager.register(TC, quick, mode="async", name="quick")
    await manager.dispatch(TC, CREATED)
    manager.register(TC, slow, mode="async", name="slow")
    for _ in range(4):
        await manager.dispatch(TC, CREATED)  # 9 jobs admitted in all
    for _ in range(steps):
        await asyncio.sleep(0)
    await drain(0, manager)
    await eventually(lambda: len(history.runs()) >= 9, what="nine records")
    await asyncio.sleep(0.02)
    runs = history.runs()
    assert len(runs) == 9
    started_and_passed = [r for r in runs if r.outcome == "passed"]
    assert len(started_and_passed) == entered.count("quick")


async def test_two_processes_whose_async_hooks_all_hang_leave_a_third_a_worker() -> None:
    """Regression: two processes with hung async hooks held all WORKERS workers (a share of
    MANAGER_WORKERS each), and a third process's async hooks waited for one to end."""
    from tether.hooks._background import _pool

    hung_a, hung_b, audit = Gated(), Gated(), Gated()
    first, second, third = HookManager(), HookManager(), HookManager()
    first.register(TC, hung_a, mode="async")
    second.register(TC, hung_b, mode="async")
    third.register(TC, audit, mode="async")
    for _ in range(MANAGER_WORKERS + 2):
        await first.dispatch(TC, CREATED)
        await second.dispatch(TC, CREATED)
    await eventually(
        lambda: hung_a.active + hung_b.active == WORKERS, what="every worker taken by the two"
    )
    for _ in range(3):
        await third.dispatch(TC, CREATED)
    await eventually(lambda: audit.active == 1, what="the third process's hook to start")
    pool = _pool()
    assert len(pool.workers) == WORKERS + 1  # one worker more, for the manager running none
    assert (hung_a.active, hung_b.active) == (MANAGER_WORKERS, MANAGER_WORKERS)
    audit.gate.set()
    assert await drain(5, third)
    assert audit.finished == 3  # all of them, one at a time on the extra worker
    assert audit.peak == 1
    hung_a.gate.set()
    hung_b.gate.set()
    assert await drain(5)
    assert hung_a.finished == hung_b.finished == MANAGER_WORKERS + 2
    assert len(pool.workers) == 0
