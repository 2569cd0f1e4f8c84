"""Review: stop() and start() during the teardown of a crash that is not restarted.

A crash the policy does not restart tears the process down ("failed"): it halts the workers
and dead-letters what was queued, firing task_completed for each. A stop() or start() arriving
meanwhile must wait for that teardown, not run a second one beside it.
"""

from __future__ import annotations

import asyncio

import pytest

from _process_support import Messages, Recorder, Tools, eventually, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig, ProcessState, RestartPolicy
from tether.models import ModelReply, ModelUnavailableError, ScriptedModel


class Abort(BaseException):
    """A BaseException of the user's own: the worker treats it as a crash."""


def crashing_without_restart() -> tuple[AgentProcess, asyncio.Event, asyncio.Event]:
    """A process that crashes on a "crash" ticket and does not restart; the task_completed of
    each dead letter of that crash's teardown waits for the second event it returns."""
    config = ProcessConfig(
        model=ScriptedModel(), restart=RestartPolicy(policy="never", max_consecutive_failures=1)
    )
    process = AgentProcess("triage", config)
    in_teardown, release = asyncio.Event(), asyncio.Event()

    async def crash(ctx: HookContext) -> None:
        if "crash" in ctx.data["prompt"]:
            raise Abort("the ticket system is gone")

    async def slow_notice(ctx: HookContext) -> None:
        if ctx.data["outcome"] == "dead_lettered":
            in_teardown.set()
            await release.wait()

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, crash)
    process.hooks.register(HookEvent.TASK_COMPLETED, slow_notice)
    return process, in_teardown, release


async def test_stop_during_a_crash_teardown_waits_for_it_and_leaves_the_process_stopped() -> None:
    """Regression: stop() ran a second teardown beside the crash's and returned while that one
    still fired task_completed; the crash's then ended and set the process "failed"."""
    process, in_teardown, release = crashing_without_restart()
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=10)
    crash, queued = ticket("crash"), ticket("queued")
    await process.inject(crash)
    await process.inject(queued)
    await process.start()
    await in_teardown.wait()
    teardown = process._supervision.failing
    assert teardown is not None
    stopping = asyncio.create_task(process.stop())
    await asyncio.wait([stopping], timeout=0.1)
    assert not stopping.done()  # the crash's teardown still fires task_completed
    release.set()
    await stopping
    assert [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)] == [
        (crash.event_id, "failed"),
        (queued.event_id, "dead_lettered"),
    ]
    await asyncio.wait([teardown])
    assert process.state == ProcessState.STOPPED


async def test_start_during_the_teardown_of_a_crash_waits_for_it_and_the_process_runs() -> None:
    """Regression: start() began beside the crash's teardown, which then set the process
    "failed" (and forgot the new workers) under a start that had succeeded."""
    process, in_teardown, release = crashing_without_restart()
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=10)
    await process.inject(ticket("crash"))
    await process.inject(ticket("queued"))
    await process.start()
    await in_teardown.wait()
    teardown = process._supervision.failing
    assert teardown is not None
    starting = asyncio.create_task(process.start())
    await asyncio.wait([starting], timeout=0.1)
    assert not starting.done()
    release.set()
    await starting
    await asyncio.wait([teardown])
    assert process.state == ProcessState.RUNNING
    after = ticket("after the restart")
    await process.inject(after)
    await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED)[-1]["event_id"] == after.event_id)
    assert rec.outcomes()[-1] == "success"
    await process.stop()
    assert process.state == ProcessState.STOPPED


class PoolClosedModel:
    """A model (the public Model protocol) whose aclose() fails, as a broken pool's may."""

    name = "pool-closed"

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        return ModelReply(content="done")

    async def aclose(self) -> None:
        raise RuntimeError("connection pool already closed")


async def test_a_model_that_fails_to_close_does_not_leave_the_process_stopping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: stop() raised the model's error and left the process "stopping" for good: a
    second stop() waited forever and start() was refused."""
    process = AgentProcess("triage", ProcessConfig(model=PoolClosedModel()))
    await process.start()
    await asyncio.wait_for(process.stop(), 10)
    assert process.state == ProcessState.STOPPED
    assert "closing the model failed during the teardown" in caplog.text
    await asyncio.wait_for(process.stop(), 10)
    await asyncio.wait_for(process.start(), 10)
    assert process.state == ProcessState.RUNNING
    await process.stop()


class FirstCallFails:
    """A model that fails the first call for each ticket; the call for a "slow" ticket fails
    only once ``gate`` is set."""

    name = "first-call-fails"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()
        self.seen: set[str] = set()

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        text = str(messages[-1]["content"]).split("\n")[0]
        if text in self.seen:
            return ModelReply(content="done")
        self.seen.add(text)
        if "slow" in text:
            self.waiting.set()
            await self.gate.wait()
        raise ModelUnavailableError(f"{text} failed")

    async def aclose(self) -> None:
        pass


async def test_a_run_failing_while_a_crash_restarts_the_process_is_retried_after_it() -> None:
    """Regression: a run still in flight when a crash halted the workers, which then failed
    with retries left, was dead-lettered; the restart keeps the queue, and its retry too."""
    model = FirstCallFails()
    config = ProcessConfig(
        model=model,
        concurrency=2,
        max_retries=1,
        retry_backoff=0.001,
        restart=RestartPolicy(max_consecutive_failures=1, backoff=0.001),
    )
    process = AgentProcess("triage", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
    slow, crash = ticket("slow"), ticket("crash")
    async with process:
        await process.inject(slow)
        await model.waiting.wait()
        await process.inject(crash)  # fails at once: a crash, while "slow" is in flight
        await eventually(lambda: process.state == ProcessState.FAILED, what="the crash")
        model.gate.set()
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 4, what="4 attempts")
    outcomes = [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]
    assert sorted(o for e, o in outcomes if e == slow.event_id) == ["retrying", "success"]
    assert sorted(o for e, o in outcomes if e == crash.event_id) == ["retrying", "success"]
    assert process.dead_letters == []
    assert [d["restart"] for d in rec.of(HookEvent.SESSION_START)] == [False, True]
