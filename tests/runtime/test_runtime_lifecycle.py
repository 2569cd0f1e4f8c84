"""AgentRuntime start-up and shutdown when one process fails, and publish() to several."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tether import AgentRuntime, EventTrigger, ProcessConfig, ProcessState
from tether.hooks import HookContext, HookEvent, HookManager


class Abort(BaseException):
    """A BaseException of the user's own (not an Exception: the engine does not isolate it)."""


def with_events(event_type: str = "deploy") -> ProcessConfig:
    return ProcessConfig(model="scripted", triggers=[EventTrigger(event_type=event_type)])


async def test_a_runtime_whose_start_fails_stops_the_processes_it_started() -> None:
    """Regression: `async with AgentRuntime()` raised when its second process failed to start,
    and the first one went on running: no __aexit__ would ever stop it."""
    shared = HookManager()

    @shared.on(HookEvent.SESSION_START)
    async def refuse_b(ctx: HookContext) -> None:
        if ctx.process_id == "b":
            raise Abort("b may not start")

    runtime = AgentRuntime(hooks=shared)
    a = await runtime.add_process("a", ProcessConfig(model="scripted"))
    b = await runtime.add_process("b", ProcessConfig(model="scripted"))
    with pytest.raises(Abort, match="b may not start"):
        async with runtime:
            raise AssertionError("the body must not run")
    assert a.state == ProcessState.STOPPED
    assert b.state != ProcessState.RUNNING
    assert runtime.running is False


async def test_stop_all_stops_every_process_when_one_stop_raises() -> None:
    """Regression: the first stop to raise ended stop_all() at once, with the other processes
    still stopping and none of their model clients released."""
    shared = HookManager()

    @shared.on(HookEvent.SESSION_END)
    async def end(ctx: HookContext) -> None:
        if ctx.process_id == "quick":
            raise Abort("the audit sink is gone")
        await asyncio.sleep(0.3)  # "slow" is still stopping when "quick" raises

    runtime = AgentRuntime(hooks=shared)
    quick = await runtime.add_process("quick", ProcessConfig(model="scripted"))
    slow = await runtime.add_process("slow", ProcessConfig(model="scripted"))
    await runtime.start_all()
    with pytest.raises(Abort, match="the audit sink is gone"):
        await runtime.stop_all()
    assert (quick.state, slow.state) == (ProcessState.STOPPED, ProcessState.STOPPED)
    assert runtime.running is False


async def test_publish_reaches_every_process_when_one_task_created_hook_raises() -> None:
    """Regression: the first process whose inject() raised kept the event from every process
    after it: their events were never made."""
    shared = HookManager()

    @shared.on(HookEvent.TASK_CREATED)
    async def abort_first(ctx: HookContext) -> None:
        if ctx.process_id == "first":
            raise Abort("the ticket system is gone")

    runtime = AgentRuntime(hooks=shared)
    first = await runtime.add_process("first", with_events())
    second = await runtime.add_process("second", with_events())
    with pytest.raises(Abort):
        await runtime.publish("deploy", {"version": "1.2"})
    [dead] = first.dead_letters
    assert dead["reason"] == "process failed"
    await second.stop()  # never started: what it queued is dead-lettered, to redeliver
    [queued] = second.dead_letters
    assert queued["event"].payload == {"version": "1.2"}


async def test_each_published_event_has_its_own_copy_of_the_payload() -> None:
    """Regression: the events shared the caller's nested values (and each other's), so
    changing them after publish() changed what every queued event would run with."""
    runtime = AgentRuntime()
    one = await runtime.add_process("one", with_events())
    two = await runtime.add_process("two", with_events())
    payload = {"release": {"version": "1.2", "hosts": ["a"]}}
    await runtime.publish("deploy", payload)
    payload["release"]["hosts"].append("b")
    await one.stop()  # never started: what it queued is dead-lettered
    await two.stop()
    events = [p.dead_letters[0]["event"] for p in (one, two)]
    assert [e.payload for e in events] == [{"release": {"version": "1.2", "hosts": ["a"]}}] * 2
    assert events[0].payload["release"] is not events[1].payload["release"]


async def test_a_payload_that_is_no_json_is_refused_before_any_event_is_made() -> None:
    from tether import InvalidEventError

    runtime = AgentRuntime()
    one = await runtime.add_process("one", with_events())
    with pytest.raises(InvalidEventError):
        await runtime.publish("deploy", {"when": object()})
    await one.stop()
    assert one.dead_letters == []


async def test_a_process_whose_start_fails_gives_up_its_journal_lease(tmp_path: Path) -> None:
    """Regression: a process whose session_start hook raised kept the lease it took on the
    journal while anything referenced it (the error's traceback does), so the runtime could
    not add a process of that name again: "in use by another live process"."""
    shared = HookManager()
    starts: list[str] = []

    @shared.on(HookEvent.SESSION_START)
    async def first_start_fails(ctx: HookContext) -> None:
        starts.append(ctx.process_id)
        if len(starts) == 1:
            raise Abort("the audit sink is gone")

    config = ProcessConfig(model="scripted", journal_path=str(tmp_path / "tether.db"))
    async with AgentRuntime(hooks=shared) as runtime:
        with pytest.raises(Abort) as failed:
            await runtime.add_process("triage", config)
        assert "triage" not in runtime
        again = await runtime.add_process("triage", config)
        assert again.state == ProcessState.RUNNING
        assert failed.value.__traceback__ is not None  # the first object is still referenced
