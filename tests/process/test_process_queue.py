"""The queue: bounds, concurrent workers, retries, dead letters, stop and redelivery, status."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from _process_support import FailingModel, GatedModel, Recorder, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig, RestartPolicy, TriggerEvent
from tether.models import ScriptedModel


def process_with(model: Any, **config: Any) -> AgentProcess:
    return AgentProcess("triage", ProcessConfig(model=model, **config))


def completed(rec: Recorder) -> list[tuple[str, str]]:
    return [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]


async def test_an_event_past_max_queue_size_is_dead_lettered_queue_full() -> None:
    process = process_with(ScriptedModel(), max_queue_size=2)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    events = [ticket(f"ticket {i}") for i in range(3)]
    for event in events:  # before start(): nothing takes them off the queue yet
        await process.inject(event)
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"], dead["attempts"]) == (
        events[2].event_id,
        "queue full",
        0,
    )
    assert "max_queue_size=2" in dead["error"]
    async with process:
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="both runs")
    assert completed(rec) == [(events[0].event_id, "success"), (events[1].event_id, "success")]


async def test_concurrency_n_runs_n_events_at_once() -> None:
    model = GatedModel()
    process = process_with(model, concurrency=3)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        for i in range(5):
            await process.inject(ticket(f"ticket {i}"))
        await eventually(lambda: model.active == 3, what="three runs in flight")
        assert process.status()["in_flight"] == 3
        assert process.status()["queue_size"] == 2
        model.gate.set()
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 5, what="all runs")
    assert model.peak == 3


async def test_one_worker_runs_events_one_at_a_time_in_order() -> None:
    model = ScriptedModel()
    process = process_with(model)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    events = [ticket(f"ticket {i}") for i in range(4)]
    async with process:
        for event in events:
            await process.inject(event)
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 4, what="all runs")
    assert [e for e, _ in completed(rec)] == [e.event_id for e in events]


async def test_a_failing_run_is_retried_then_dead_lettered_process_failed() -> None:
    model = FailingModel()
    process = process_with(model, max_retries=2, retry_backoff=0.001)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        event = ticket()
        await process.inject(event)
        await eventually(lambda: process.dead_letters, what="the dead letter")
    assert [o for _, o in completed(rec)] == ["retrying", "retrying", "failed"]
    assert model.calls == 3
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"], dead["attempts"]) == (
        event.event_id,
        "process failed",
        3,
    )
    assert "the endpoint is down (call 3)" in dead["error"]


async def test_a_run_that_fails_once_succeeds_on_its_retry() -> None:
    class FlakyModel(ScriptedModel):
        async def complete(self, messages: Any, tools: Any = None) -> Any:
            if not self.requests:
                self.requests.append({})
                raise ConnectionError("blip")
            return await super().complete(messages, tools)

    process = process_with(FlakyModel(), retry_backoff=0.001)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="the retry")
    assert [o for _, o in completed(rec)] == ["retrying", "success"]
    assert process.dead_letters == []


async def test_stop_dead_letters_queued_events_and_a_restart_redelivers_them() -> None:
    model = GatedModel()
    process = process_with(model)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    first, second, third = ticket("one"), ticket("two"), ticket("three")
    for event in (first, second, third):
        await process.inject(event)
    await eventually(lambda: model.active == 1, what="the first run")
    stopping = asyncio.create_task(process.stop())
    await eventually(lambda: process.state.value == "stopping", what="stop() to begin")
    model.gate.set()
    await stopping
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (second.event_id, "process stopped"),
        (third.event_id, "process stopped"),
    ]
    assert completed(rec) == [
        (first.event_id, "success"),
        (second.event_id, "dead_lettered"),
        (third.event_id, "dead_lettered"),
    ]
    await process.start()
    assert await process.redeliver_dead_letters() == 2
    assert process.dead_letters == []
    await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 5, what="the redelivery")
    await process.stop()
    assert completed(rec)[3:] == [(second.event_id, "success"), (third.event_id, "success")]


async def test_redeliver_dead_letters_can_pick_events_by_id() -> None:
    process = process_with(ScriptedModel(), max_queue_size=1)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    events = [ticket(f"ticket {i}") for i in range(3)]
    for event in events:
        await process.inject(event)
    async with process:
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the queued run")
        assert await process.redeliver_dead_letters([events[2].event_id]) == 1
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="redelivery")
    assert [d["event_id"] for d in process.dead_letters] == [events[1].event_id]


async def test_inject_into_a_stopped_process_dead_letters_the_event() -> None:
    process = process_with(ScriptedModel())
    async with process:
        pass
    event = ticket()
    assert await process.inject(event) == event.event_id
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == ("process stopped", "process is stopped")


async def test_status_reports_the_documented_keys() -> None:
    process = process_with(ScriptedModel(), hooks=[])
    process.hooks.register(HookEvent.SESSION_START, Recorder())
    status = process.status()
    assert {
        "name",
        "state",
        "invocation_count",
        "hook_count",
        "queue_size",
        "dead_letter_count",
        "restart_count",
        "filtered_count",
        "journal_errors",
        "journal_error",
    } <= set(status)
    assert (status["name"], status["state"], status["hook_count"]) == ("triage", "created", 1)
    assert (status["queue_size"], status["dead_letter_count"], status["restart_count"]) == (0, 0, 0)
    assert (status["journal_errors"], status["journal_error"]) == (0, None)


async def test_status_counts_runs_and_dead_letters() -> None:
    process = process_with(ScriptedModel(), max_queue_size=1)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.inject(ticket())
    await process.inject(ticket())
    async with process:
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
        status = process.status()
        assert (status["state"], status["invocation_count"], status["dead_letter_count"]) == (
            "running",
            1,
            1,
        )


async def test_a_dead_letter_entry_has_the_event_reason_error_attempts_and_a_timestamp() -> None:
    process = process_with(ScriptedModel(), max_queue_size=1)
    event = TriggerEvent("helpdesk", "webhook", {"ticket": "x"})
    await process.inject(ticket())
    before = datetime.now(UTC)
    await process.inject(event)
    [dead] = process.dead_letters
    assert {"event", "reason", "error", "attempts", "timestamp"} <= set(dead)
    assert dead["event"] is event
    assert dead["timestamp"].tzinfo is not None
    assert dead["timestamp"] >= before


async def test_clear_dead_letters_forgets_them() -> None:
    process = process_with(ScriptedModel(), max_queue_size=1)
    await process.inject(ticket())
    await process.inject(ticket())
    assert process.clear_dead_letters() == 1
    assert process.dead_letters == []


async def test_restart_policy_never_leaves_a_crashed_process_failed() -> None:
    process = process_with(
        FailingModel(),
        max_retries=0,
        restart=RestartPolicy(policy="never", max_consecutive_failures=2),
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_END, HookEvent.SESSION_START)
    await process.start()
    await process.inject(ticket())
    await process.inject(ticket())
    await eventually(lambda: process.state.value == "failed", what="the crash")
    await eventually(lambda: rec.of(HookEvent.SESSION_END), what="session_end")
    [end] = rec.of(HookEvent.SESSION_END)
    assert (end["reason"], end["invocation_count"]) == ("stop", 2)
    assert process.status()["restart_count"] == 0
    assert "2 runs failed in a row" in process.status()["last_error"]
    await process.stop()
    assert process.state.value == "stopped"


# -- supervision ----------------------------------------------------------------------------


class FailsAtFirst(ScriptedModel):
    """Fails its first ``failures`` calls, then answers from the script after ``latency``."""

    def __init__(self, failures: int, latency: float = 0.0) -> None:
        super().__init__(latency=latency)
        self.failures = failures

    async def complete(self, messages: Any, tools: Any = None) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("the endpoint is down")
        return await super().complete(messages, tools)


async def test_consecutive_failures_crash_the_process_and_it_restarts_itself() -> None:
    """Regression: session_end after a crash carried an undocumented 'error' key."""
    process = process_with(
        FailingModel(),
        max_retries=0,
        restart=RestartPolicy(max_consecutive_failures=2, backoff=0.001),
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.SESSION_END)
    async with process:
        await process.inject(ticket())
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.SESSION_START)) == 2, what="the restart")
        assert process.state.value == "running"
        assert process.status()["restart_count"] == 1
    without_usage = [
        (event, {k: v for k, v in data.items() if k != "process_usage"}, name)
        for event, data, name in rec.seen
    ]
    assert without_usage[:3] == [
        ("session_start", {"restart": False, "recovered": None}, "triage"),
        ("session_end", {"reason": "restart", "invocation_count": 2}, "triage"),
        ("session_start", {"restart": True, "recovered": None}, "triage"),
    ]


async def test_events_queued_at_a_crash_run_after_the_automatic_restart() -> None:
    """Regression: a run in flight at a crash was dead-lettered, with no task_completed."""
    model = FailsAtFirst(2, latency=0.01)  # the third run is in flight when the crash is handled
    process = process_with(
        model,
        max_retries=0,
        restart=RestartPolicy(max_consecutive_failures=2, backoff=0.001),
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
    events = [ticket(f"ticket {i}") for i in range(4)]
    async with process:
        for event in events:
            await process.inject(event)
        await eventually(lambda: len(rec.of(HookEvent.SESSION_START)) == 2, what="the restart")
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 4, what="all events")
    assert completed(rec) == [
        (events[0].event_id, "failed"),
        (events[1].event_id, "failed"),
        (events[2].event_id, "success"),
        (events[3].event_id, "success"),
    ]
    assert [d["event_id"] for d in process.dead_letters] == [e.event_id for e in events[:2]]


def crashes_on_each_run() -> tuple[AgentProcess, Recorder]:
    """A process whose every run fails and counts as a crash, restarted at most once."""
    process = process_with(
        FailingModel(),
        max_retries=0,
        restart=RestartPolicy(max_consecutive_failures=1, max_restarts=1, backoff=0.001),
    )
    return process, Recorder().attach(process.hooks, HookEvent.SESSION_END)


async def test_a_process_that_keeps_crashing_stops_restarting_after_max_restarts() -> None:
    process, rec = crashes_on_each_run()
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: process.status()["restart_count"] == 1, what="the first restart")
    await eventually(lambda: process.state.value == "running", what="running again")
    await process.inject(ticket())
    await eventually(lambda: process.state.value == "failed", what="the final failure")
    await eventually(lambda: len(rec.of(HookEvent.SESSION_END)) == 2, what="session_end")
    assert [d["reason"] for d in rec.of(HookEvent.SESSION_END)] == ["restart", "stop"]
    await process.stop()


async def test_restarts_by_hand_do_not_use_up_the_automatic_ones() -> None:
    """Regression: restart() counted toward max_restarts, so after one manual restart a crash
    under max_restarts=1 was not restarted."""
    process, rec = crashes_on_each_run()
    await process.start()
    await process.restart()
    assert process.status()["restart_count"] == 1
    await process.inject(ticket())
    await eventually(lambda: process.status()["restart_count"] == 2, what="the automatic restart")
    await eventually(lambda: process.state.value == "running", what="running again")
    assert [d["reason"] for d in rec.of(HookEvent.SESSION_END)] == ["restart", "restart"]
    await process.stop()


async def test_stop_before_start_dead_letters_what_was_injected_and_it_can_be_redelivered() -> None:
    process = process_with(ScriptedModel(reply="Triaged."))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_END)
    events = [ticket(), ticket()]
    for event in events:
        await process.inject(event)
    await process.stop()
    assert process.state.value == "stopped"
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (e.event_id, "process stopped") for e in events
    ]
    assert [d["outcome"] for d in rec.of(HookEvent.TASK_COMPLETED)] == ["dead_lettered"] * 2
    assert rec.of(HookEvent.SESSION_END) == []  # no session was started
    await process.start()
    assert await process.redeliver_dead_letters() == 2
    await eventually(lambda: process.invocation_count == 2, what="the redelivered runs")
    await process.stop()
