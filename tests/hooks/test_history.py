"""Hook-run history: every hook execution of a real dispatch is recorded with its outcome.

The process tests drive a real AgentProcess (ScriptedModel) and read the records back through
``process.hook_runs``; the engine tests attach a HistoryRecorder to a HookManager.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest

from _process_support import Recorder, completions, eventually, finished, scripted, ticket
from conftest import HOOK_RUN_FIELDS, ScriptFactory
from tether import AgentProcess, ProcessConfig, TriggerEvent
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager, HookRun
from tether.hooks._history import HistoryRecorder
from tether.hooks._records import OUTCOMES
from tether.models import ScriptedModel

UPS = HookEvent.USER_PROMPT_SUBMIT
PROMPT_DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


async def handled(process: AgentProcess, event: TriggerEvent | None = None) -> Recorder:
    """Start ``process``, let it handle one ticket (``event`` or a default one), and stop it."""
    rec = completions(process)
    async with process:
        await process.inject(event or ticket())
        await finished(rec)
    return rec


def only(runs: list[HookRun]) -> HookRun:
    assert len(runs) == 1, runs
    return runs[0]


async def appends_please(ctx: HookContext) -> None:
    ctx.data["prompt"] += "\nPlease answer in one sentence."


async def reads_only(ctx: HookContext) -> None:
    assert ctx.data["prompt"]


async def refuses(ctx: HookContext) -> None:
    raise HookBlocked("prompts about printers are refused")


async def crashes(ctx: HookContext) -> None:
    raise RuntimeError("the audit database is unreachable")


async def hangs(ctx: HookContext) -> None:
    await asyncio.Event().wait()


# -- outcomes from a real process ---------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "outcome", "patch_applied"),
    [
        pytest.param(appends_please, "applied", True, id="changes_the_prompt-applied_patch_used"),
        pytest.param(reads_only, "passed", False, id="changes_nothing-passed"),
    ],
)
async def test_a_hook_that_returns_is_recorded_applied_or_passed_by_what_it_changed(
    hook: Callable[[HookContext], Awaitable[None]], outcome: str, patch_applied: bool
) -> None:
    process = scripted()
    process.hooks.register(UPS, hook)
    await handled(process)
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert (run.outcome, run.patch_applied, run.error) == (outcome, patch_applied, None)


async def test_a_hook_that_blocks_is_recorded_blocked_with_its_reason() -> None:
    process = scripted()
    process.hooks.register(UPS, refuses)
    await handled(process, ticket("The printer is on fire"))
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert run.outcome == "blocked"
    assert run.error == "prompts about printers are refused"
    assert process.dead_letters[0]["reason"] == "blocked by hook"


async def test_a_hook_that_raises_is_recorded_failed_with_the_error_text() -> None:
    process = scripted()
    process.hooks.register(UPS, crashes)
    rec = await handled(process)
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert (run.outcome, run.error) == ("failed", "the audit database is unreachable")
    assert rec.outcomes() == ["success"]  # an isolated error does not stop the run


async def test_a_hook_past_its_timeout_is_recorded_timed_out() -> None:
    process = scripted()
    process.hooks.register(UPS, hangs, timeout=0.05)
    await handled(process)
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert run.outcome == "timed_out"
    assert run.error is not None
    assert "timed out after 0.05s" in run.error


async def test_a_command_hook_that_exits_non_zero_is_recorded_failed_with_its_stderr(
    make_script: ScriptFactory,
) -> None:
    script = make_script(
        """
        import sys
        sys.stderr.write("quota exceeded")
        sys.exit(3)
        """
    )
    process = scripted(hooks=[HookConfig(event="user_prompt_submit", command=[script])])
    await handled(process)
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert run.outcome == "failed"
    assert run.error is not None
    assert "quota exceeded" in run.error


async def test_every_outcome_is_produced_by_real_dispatches_and_nothing_else() -> None:
    """applied, passed, blocked, failed, timed_out and skipped from one process; dropped (a full
    async queue) has its own tests in test_async_hooks.py."""
    process = scripted()
    process.hooks.register(UPS, appends_please, priority=50)
    process.hooks.register(UPS, reads_only, priority=40)
    process.hooks.register(UPS, crashes, priority=30)
    process.hooks.register(UPS, hangs, priority=20, timeout=0.05)
    process.hooks.register(UPS, refuses, priority=10, matcher={"trigger_id": "printers"})
    rec = completions(process)
    async with process:
        await process.inject(ticket(trigger_id="helpdesk"))
        await process.inject(ticket(trigger_id="printers"))
        await finished(rec, 2)
    seen = {run.outcome for run in process.hook_runs()}
    assert seen == set(OUTCOMES) - {"dropped"}


# -- the fields of a record -----------------------------------------------------------------


async def test_a_record_names_the_hook_the_event_and_the_process() -> None:
    process = scripted("billing")
    hook_id = process.hooks.register(UPS, reads_only, name="prompt-audit")
    await handled(process)
    run = only(process.hook_runs(event="user_prompt_submit"))
    assert (run.hook_id, run.hook_name, run.event, run.process_id) == (
        hook_id,
        "prompt-audit",
        "user_prompt_submit",
        "billing",
    )
    assert (run.source, run.mode, run.dispatch_depth) == ("code", "sync", 0)


async def test_a_callback_without_a_name_is_recorded_under_its_qualified_name() -> None:
    process = scripted()
    process.hooks.register(UPS, reads_only)
    await handled(process)
    assert only(process.hook_runs(event="user_prompt_submit")).hook_name == "reads_only"


async def test_a_config_command_hook_is_recorded_with_source_config_and_its_command(
    make_script: ScriptFactory,
) -> None:
    script = make_script("import sys; sys.stdin.read()\n")
    process = scripted(hooks=[HookConfig(event="task_completed", command=[script])])
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
        await eventually(lambda: process.hook_runs(hook=script), what="the command's record")
    run = only(process.hook_runs(hook=script))
    assert (run.source, run.mode, run.outcome, run.event) == (
        "config",
        "sync",
        "passed",
        "task_completed",
    )


async def test_a_shared_managers_hook_is_recorded_with_source_shared() -> None:
    shared = HookManager()
    shared.register(UPS, reads_only, name="fleet-audit")
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()), hooks=shared)
    await handled(process)
    run = only(process.hook_runs(hook="fleet-audit"))
    assert (run.source, run.process_id) == ("shared", "triage")


async def test_a_parents_hook_is_recorded_as_inherited_in_the_history_of_a_spawned_child() -> None:
    model = ScriptedModel(
        reply="Done.",
        tool_calls=[("spawn_process", {"name": "bugs", "instructions": "File bug reports."})],
    )
    parent = AgentProcess("triage", ProcessConfig(model=model, execution_mode="open"))
    parent.hooks.register(UPS, reads_only, name="parent-policy")
    rec = completions(parent)
    async with parent:
        await parent.inject(ticket())
        await finished(rec)
        child = parent.children["bugs"]
        child_done = completions(child)
        await child.inject(ticket("A bug for the child"))
        await finished(child_done)
        runs = child.hook_runs(hook="parent-policy")
    run = only(runs)
    assert (run.source, run.process_id) == ("inherited", "bugs")
    assert only(parent.hook_runs(hook="parent-policy")).source == "code"


async def test_an_inherited_managers_hook_is_recorded_as_inherited() -> None:
    parent = HookManager()
    parent.register(UPS, reads_only, name="org-policy")
    child = HookManager()
    child.inherit(parent)
    child.recorder = history = HistoryRecorder("child")
    await child.dispatch(UPS, PROMPT_DATA, process_id="child")
    assert only(history.runs()).source == "inherited"


async def test_an_async_hook_is_recorded_with_mode_async() -> None:
    process = scripted()
    process.hooks.register(HookEvent.TASK_COMPLETED, reads_only_anything, mode="async")
    await handled(process)
    run = only(process.hook_runs(hook="reads_only_anything"))
    assert (run.mode, run.outcome) == ("async", "passed")


async def reads_only_anything(ctx: HookContext) -> None:
    assert ctx.data is not None


async def test_the_duration_covers_the_time_the_hook_ran() -> None:
    async def slow(ctx: HookContext) -> None:
        await asyncio.sleep(0.06)

    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.register(UPS, slow, priority=-1)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    fast_run, slow_run = history.runs()
    assert slow_run.duration_ms >= 50
    assert 0 <= fast_run.duration_ms < slow_run.duration_ms


async def test_runs_of_one_dispatch_share_a_dispatch_id_and_dispatches_differ() -> None:
    process = scripted()
    process.hooks.register(UPS, reads_only)
    process.hooks.register(UPS, appends_please, priority=-1)
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await process.inject(ticket("Another ticket"))
        await finished(rec, 2)
    runs = process.hook_runs(event="user_prompt_submit")
    assert len(runs) == 4
    ids = [run.dispatch_id for run in runs]
    assert ids[0] == ids[1]
    assert ids[2] == ids[3]
    assert ids[0] != ids[2]
    assert all(ids)


async def test_a_dispatch_inside_a_hook_is_recorded_one_level_deeper() -> None:
    process = scripted()

    async def follow_up(ctx: HookContext) -> None:
        if ctx.data["trigger_id"] == "helpdesk":
            await process.inject(TriggerEvent("follow-up", "manual", {"ticket": "check back"}))

    process.hooks.register(HookEvent.TASK_COMPLETED, follow_up, name="follow_up")
    process.hooks.register(HookEvent.TASK_CREATED, reads_only_anything, name="created-audit")
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec, 2)
    created = process.hook_runs(hook="created-audit")
    assert [run.dispatch_depth for run in created] == [0, 1]
    outer = process.hook_runs(event="task_completed", hook="follow_up")[0]
    assert outer.dispatch_depth == 0
    assert created[1].dispatch_id != outer.dispatch_id


# -- patch_applied ----------------------------------------------------------------------------


async def test_a_prompt_change_undone_by_a_later_block_is_not_marked_applied() -> None:
    process = scripted()
    process.hooks.register(UPS, appends_please, priority=10)
    process.hooks.register(UPS, refuses)
    await handled(process)
    changed, blocker = process.hook_runs(event="user_prompt_submit")
    assert (changed.outcome, changed.patch_applied) == ("applied", False)
    assert blocker.outcome == "blocked"


async def test_a_prompt_change_followed_by_a_fail_closed_failure_is_not_marked_applied() -> None:
    process = scripted()
    process.hooks.register(UPS, appends_please, priority=10)
    process.hooks.register(UPS, crashes, fail_closed=True)
    rec = await handled(process)
    changed, failing = process.hook_runs(event="user_prompt_submit")
    assert (changed.outcome, changed.patch_applied) == ("applied", False)
    assert failing.outcome == "failed"
    assert rec.outcomes() == ["blocked"]


async def test_a_changed_prompt_that_reaches_the_model_is_marked_applied() -> None:
    model = ScriptedModel()
    process = scripted(model=model)
    process.hooks.register(UPS, appends_please)
    process.hooks.register(UPS, crashes, priority=-1)  # a plain failure does not block
    await handled(process)
    assert model.prompts[0].endswith("Please answer in one sentence.")
    changed, _ = process.hook_runs(event="user_prompt_submit")
    assert changed.patch_applied is True


async def test_a_data_change_of_an_event_whose_data_is_not_used_is_applied_but_not_used() -> None:
    async def rewrites_outcome(ctx: HookContext) -> None:
        ctx.data["outcome"] = "rewritten"

    process = scripted()
    process.hooks.register(HookEvent.TASK_COMPLETED, rewrites_outcome, name="rewrites_outcome")
    await handled(process)
    run = only(process.hook_runs(hook="rewrites_outcome"))
    assert (run.outcome, run.patch_applied) == ("applied", False)


async def test_a_hook_that_writes_the_same_prompt_back_is_not_marked_applied() -> None:
    async def same_again(ctx: HookContext) -> None:
        ctx.data["prompt"] = ctx.data["prompt"]

    manager = HookManager()
    manager.register(UPS, same_again)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert only(history.runs()).patch_applied is False


async def test_a_hook_that_replaces_the_data_dict_is_recorded_applied() -> None:
    async def replaces(ctx: HookContext) -> None:
        ctx.data = {**ctx.data, "prompt": "rewritten"}

    manager = HookManager()
    manager.register(UPS, replaces)
    manager.register(UPS, reads_only, priority=-1)
    manager.recorder = history = HistoryRecorder("p")
    result = await manager.dispatch(UPS, PROMPT_DATA)
    assert result.data["prompt"] == "rewritten"
    first, second = history.runs()
    assert (first.outcome, first.patch_applied) == ("applied", True)
    assert second.outcome == "passed"


# -- the ring -------------------------------------------------------------------------------


async def test_the_in_memory_ring_keeps_only_the_newest_dispatches() -> None:
    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = history = HistoryRecorder("p", size=3)
    for n in range(10):
        await manager.dispatch(UPS, {**PROMPT_DATA, "event_id": f"e{n}"})
    runs = history.runs()
    assert len(runs) == len(history) == 3
    assert len({run.dispatch_id for run in runs}) == 3


async def test_a_process_keeps_its_history_in_a_bounded_ring_without_a_journal() -> None:
    from tether.hooks._history import RING_SIZE

    process = scripted()
    process.hooks.register(HookEvent.TASK_CREATED, reads_only_anything)
    for _ in range(RING_SIZE + 5):
        await process.inject(ticket())
    assert len(process.hook_runs()) == RING_SIZE
    await process.stop()


async def test_runs_are_read_oldest_first_and_never_dated_in_the_future() -> None:
    """Regression: a run was dated from the end of its dispatch plus its offset from the start,
    so the first hook of a slow dispatch looked later than the last one of the dispatch."""
    marks: dict[str, float] = {}

    async def slow(ctx: HookContext) -> None:
        marks["slow_started"] = time.time()
        await asyncio.sleep(0.1)

    manager = HookManager()
    manager.register(UPS, reads_only, priority=1)
    manager.register(UPS, slow)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    after = time.time()
    first, second = history.runs()
    assert first.recorded_at <= marks["slow_started"] <= second.recorded_at <= after


async def test_runs_of_a_nested_dispatch_are_read_between_those_of_the_outer_one() -> None:
    manager = HookManager()

    async def nests(ctx: HookContext) -> None:
        await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e2"})

    async def last(ctx: HookContext) -> None:
        await asyncio.sleep(0.01)

    manager.register(UPS, reads_only, name="first", priority=1)
    manager.register(UPS, nests, name="nests")
    manager.register(UPS, last, name="last", priority=-1)
    manager.register(HookEvent.TASK_CREATED, reads_only_anything, name="nested")
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert [(r.hook_name, r.dispatch_depth) for r in history.runs()] == [
        ("first", 0),
        ("nested", 1),
        ("nests", 0),
        ("last", 0),
    ]


async def test_a_dispatch_without_a_recorder_records_nothing_and_costs_no_depth() -> None:
    manager = HookManager()
    manager.register(UPS, reads_only)
    result = await manager.dispatch(UPS, PROMPT_DATA)
    assert (result.fired, result.runs) == (1, [])


async def test_a_recorder_given_to_one_dispatch_overrides_the_managers() -> None:
    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = usual = HistoryRecorder("p")
    once = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA, recorder=once)
    assert (len(usual.runs()), len(once.runs())) == (0, 1)


# -- filters --------------------------------------------------------------------------------


@pytest.fixture
async def filled() -> tuple[HistoryRecorder, dict[str, str], float]:
    """Three dispatches of two events: passed, failed and blocked runs, with a time between."""
    manager = HookManager()
    ids = {
        "audit": manager.register(UPS, reads_only, name="audit"),
        "gate": manager.register(
            HookEvent.TASK_CREATED, refuses, name="gate", matcher={"trigger_id": "printers"}
        ),
        "crash": manager.register(HookEvent.TASK_CREATED, crashes, name="crash", priority=5),
    }
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e1", "trigger_id": "desk"})
    await asyncio.sleep(0.02)
    middle = time.time()
    await asyncio.sleep(0.02)
    await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e2", "trigger_id": "printers"})
    return history, ids, middle


async def test_runs_filter_by_event(filled: tuple[HistoryRecorder, dict[str, str], float]) -> None:
    history, _, _ = filled
    assert {r.event for r in history.runs(event="task_created")} == {"task_created"}
    assert len(history.runs(event="task_created")) == 4
    assert history.runs(event="session_start") == []


async def test_runs_filter_by_outcome(
    filled: tuple[HistoryRecorder, dict[str, str], float],
) -> None:
    history, _, _ = filled
    assert [r.hook_name for r in history.runs(outcome="failed")] == ["crash", "crash"]
    assert [r.hook_name for r in history.runs(outcome="blocked")] == ["gate"]
    assert [r.hook_name for r in history.runs(outcome="skipped")] == ["gate"]


async def test_runs_filter_by_hook_id_or_name(
    filled: tuple[HistoryRecorder, dict[str, str], float],
) -> None:
    history, ids, _ = filled
    by_id = history.runs(hook=ids["gate"])
    assert by_id == history.runs(hook="gate")
    assert [r.outcome for r in by_id] == ["skipped", "blocked"]


@pytest.mark.parametrize("form", ["float", "datetime", "iso", "iso-z"])
async def test_runs_filter_by_time_since(
    filled: tuple[HistoryRecorder, dict[str, str], float], form: str
) -> None:
    history, _, middle = filled
    when = datetime.fromtimestamp(middle, UTC)
    since: object = {
        "float": middle,
        "datetime": when,
        "iso": when.isoformat(),
        "iso-z": when.isoformat().replace("+00:00", "Z"),
    }[form]
    recent = history.runs(since=since)
    assert [(r.hook_name, r.outcome) for r in recent] == [("crash", "failed"), ("gate", "blocked")]


async def test_runs_filter_keeps_the_last_n(
    filled: tuple[HistoryRecorder, dict[str, str], float],
) -> None:
    history, _, _ = filled
    everything = history.runs()
    assert history.runs(last=2) == everything[-2:]
    assert history.runs(last=0) == []
    assert history.runs(last=100) == everything


async def test_runs_filters_combine(
    filled: tuple[HistoryRecorder, dict[str, str], float],
) -> None:
    history, _, _ = filled
    runs = history.runs(event="task_created", outcome="failed", last=1)
    assert [(r.hook_name, r.dispatch_id) for r in runs] == [
        ("crash", history.runs(hook="gate")[-1].dispatch_id)
    ]


async def test_a_record_serializes_to_json_ready_fields() -> None:
    manager = HookManager()
    manager.register(UPS, reads_only)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    record = only(history.runs()).as_dict()
    assert set(record) == HOOK_RUN_FIELDS
    assert datetime.fromisoformat(record["recorded_at"]).tzinfo is not None


async def test_since_text_without_an_offset_is_utc_not_the_hosts_local_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time as time_module
    from datetime import UTC, datetime

    from tether.hooks._history import filter_runs
    from tether.hooks._records import HookRun

    monkeypatch.setenv("TZ", "America/New_York")  # UTC-5 in December
    time_module.tzset()
    try:
        at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC).timestamp()
        run = HookRun(
            at,
            "hook-1",
            "h",
            "task_created",
            "p",
            "code",
            "sync",
            "passed",
            0.1,
            None,
            False,
            "",
            0,
        )
        # 11:00 without an offset is an hour before the run in UTC (local time would be 16:00)
        assert filter_runs([run], since="2026-12-01T11:00:00") == [run]
        assert filter_runs([run], since="2026-12-01T12:30:00") == []
    finally:
        monkeypatch.delenv("TZ")
        time_module.tzset()
