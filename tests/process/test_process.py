"""Review findings on agent processes, the runtime and the control API: one behaviour per test."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from _process_support import FailingModel, Recorder, eventually, ticket
from tether import AgentProcess, AgentRuntime, OrchestrationAPI, ProcessConfig, RestartPolicy
from tether.agent import ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookContext, HookEvent
from tether.models import ModelUnavailableError, ScriptedModel

EVENT_A: dict[str, Any] = {"type": "event", "id": "event-1", "event_type": "a"}


async def test_a_finished_run_is_not_dead_lettered_when_stop_cuts_its_completion_hook() -> None:
    """A slow task_completed hook still running at stop_timeout must not undo a finished run."""
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, stop_timeout=0.05))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=10)
    in_hook = asyncio.Event()

    async def slow_notifier(ctx: HookContext) -> None:
        in_hook.set()
        await asyncio.sleep(5)

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_notifier)
    await process.start()
    event = ticket()
    await process.inject(event)
    await asyncio.wait_for(in_hook.wait(), 5)
    await process.stop()
    assert len(model.requests) == 1
    assert process.dead_letters == []
    assert rec.outcomes() == ["success"]


async def test_a_handler_denial_fires_permission_denied_with_only_the_documented_keys() -> None:
    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=False, reviewer_id="alice", reason="not during the freeze")

    model = ScriptedModel(tool_calls=[("update_state", {"key": "k", "value": 1})])
    config = ProcessConfig(
        model=model,
        context=ContextConfig(state_tool=True),
        approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
    )
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.PERMISSION_DENIED, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert set(denied) == {"kind", "tool_name", "request_id", "reason", "decided_by"}
    assert (denied["kind"], denied["decided_by"]) == ("approval", "alice")


async def test_an_event_injected_before_start_with_a_journal_runs_once(tmp_path: Path) -> None:
    model = ScriptedModel()
    config = ProcessConfig(model=model, journal_path=str(tmp_path / "tether.db"))
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    await process.inject(ticket())
    async with process:
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
        await asyncio.sleep(0.05)
    assert rec.outcomes() == ["success"]
    assert len(model.requests) == 1
    assert rec.of(HookEvent.SESSION_START)[0]["recovered"] is None


async def test_an_event_whose_task_created_hooks_outlast_stop_is_dead_lettered() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow_gate(ctx: HookContext) -> None:
        entered.set()
        await release.wait()

    process.hooks.register(HookEvent.TASK_CREATED, slow_gate)
    await process.start()
    injecting = asyncio.create_task(process.inject(ticket()))
    await asyncio.wait_for(entered.wait(), 5)
    await process.stop()
    release.set()
    event_id = await injecting
    assert [(d["event_id"], d["reason"]) for d in process.dead_letters] == [
        (event_id, "process stopped")
    ]
    assert process.status()["queue_size"] == 0


async def test_an_added_trigger_without_an_id_never_takes_an_id_already_in_use() -> None:
    """PATCH add_triggers: the default id type-N must not collide (it answered 500)."""
    async with AgentRuntime() as runtime:
        api = OrchestrationAPI(runtime, port=0, webhooks=False)
        await api.start()
        try:
            async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
                config = {"model": "scripted", "triggers": [EVENT_A]}
                r = await client.post("/processes", json={"name": "triage", "config": config})
                assert r.status_code == 201
                change = {"add_triggers": [{"type": "event", "event_type": "b"}]}
                r = await client.patch("/processes/triage/config", json=change)
        finally:
            await api.stop()
    assert r.status_code == 200
    ids = [t["id"] for t in r.json()["triggers"]]
    assert ids[0] == "event-1"
    assert len(set(ids)) == 2


async def test_a_tool_error_that_quotes_a_secret_is_logged_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def crm(query: str) -> str:
        """Query the CRM."""
        raise ConnectionError("crm refused token tok-7f3a9")

    model = ScriptedModel(tool_calls=[("crm", {"query": "x"})])
    config = ProcessConfig(model=model, tools=[crm], secrets={"crm_token": SecretStr("tok-7f3a9")})
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    caplog.set_level(logging.DEBUG, logger="tether")
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    assert "crm refused token" in caplog.text
    assert "tok-7f3a9" not in caplog.text


async def test_start_during_a_pending_automatic_restart_starts_the_process_once() -> None:
    policy = RestartPolicy(max_consecutive_failures=1, backoff=0.2)
    process = AgentProcess(
        "triage", ProcessConfig(model=FailingModel(), max_retries=0, restart=policy)
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.SESSION_END)
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: rec.of(HookEvent.SESSION_END), what="the crash")
    assert process.state.value == "failed"
    await process.start()
    assert process.state.value == "running"
    await asyncio.sleep(0.3)
    await process.stop()
    assert [d["restart"] for d in rec.of(HookEvent.SESSION_START)] == [False, True]
    assert process.restart_count == 1


class FailsWhenReleased:
    """A model whose call waits for ``release`` and then fails as a down endpoint would."""

    name = "fails-when-released"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls = 0

    async def complete(self, messages: list[Any], tools: list[Any] | None = None) -> Any:
        self.calls += 1
        await self.release.wait()
        raise ModelUnavailableError("the endpoint is down")

    async def aclose(self) -> None:
        pass


async def test_a_run_failing_while_stop_runs_session_end_does_not_restart_the_process() -> None:
    model = FailsWhenReleased()
    policy = RestartPolicy(max_consecutive_failures=1, backoff=0)
    process = AgentProcess("triage", ProcessConfig(model=model, max_retries=0, restart=policy))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.SESSION_END)

    async def fail_the_run_now(ctx: HookContext) -> None:
        model.release.set()
        await asyncio.sleep(0.05)  # the run fails while session_end hooks still run

    process.hooks.register(HookEvent.SESSION_END, fail_the_run_now, once=True)
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: model.calls == 1, what="the run in flight")
    await process.stop()
    await asyncio.sleep(0.1)
    assert process.state.value == "stopped"
    assert [d["reason"] for d in rec.of(HookEvent.SESSION_END)] == ["stop"]
    assert len(rec.of(HookEvent.SESSION_START)) == 1


async def test_a_process_spawned_by_a_run_that_outlasts_stop_is_stopped_with_its_parent() -> None:
    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    model = ScriptedModel(tool_calls=[spawn], latency=0.2)
    parent = AgentProcess("triage", ProcessConfig(model=model, execution_mode="open"))
    await parent.start()
    await parent.inject(ticket())
    await eventually(lambda: model.requests, what="the run in flight")
    await parent.stop()  # the run asks for the spawn while the parent is stopping
    assert len(model.requests) == 2
    assert [c.name for c in parent.children.values() if c.state.value == "running"] == []


async def test_a_restarted_child_stays_the_parents_child_and_stops_with_it() -> None:
    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    parent = AgentProcess(
        "triage", ProcessConfig(model=ScriptedModel(tool_calls=[spawn]), execution_mode="open")
    )
    rec = Recorder().attach(parent.hooks, HookEvent.SUBAGENT_STOP)
    await parent.start()
    await parent.inject(ticket())
    await eventually(lambda: "bugs" in parent.children, what="the spawn")
    child = parent.children["bugs"]
    await child.restart()
    assert rec.of(HookEvent.SUBAGENT_STOP) == []
    await parent.stop()
    assert child.state.value == "stopped"
    assert rec.of(HookEvent.SUBAGENT_STOP) == [{"process_name": "bugs", "state": "stopped"}]


async def test_a_child_that_failed_fires_subagent_stop_once_even_when_stopped_again() -> None:
    """Regression: stop() on a child that had already failed fired subagent_stop a second
    time (the child's teardown told its parent again)."""
    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    parent = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(tool_calls=[spawn]),
            execution_mode="open",
            max_retries=0,
            restart=RestartPolicy(policy="never", max_consecutive_failures=1),
        ),
    )
    broken = FailingModel()

    def child_model(event: Any, process: str) -> Any:
        return broken if process == "bugs" else None

    parent.hooks.register("model.for_run", child_model)  # the child inherits the parent's hooks
    rec = Recorder().attach(parent.hooks, HookEvent.SUBAGENT_STOP)
    await parent.start()
    await parent.inject(ticket())
    await eventually(lambda: "bugs" in parent.children, what="the spawn")
    child = parent.children["bugs"]
    await child.inject(ticket())
    await eventually(lambda: child.state.value == "failed", what="the child's failure")
    await eventually(lambda: rec.of(HookEvent.SUBAGENT_STOP), what="subagent_stop")
    await child.stop()
    await parent.stop()
    assert broken.calls == 1
    assert rec.of(HookEvent.SUBAGENT_STOP) == [{"process_name": "bugs", "state": "failed"}]
