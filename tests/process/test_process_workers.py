"""The workers of a process: made at its first event queued (an idle process holds none), or
at its start when events wait already; every event queued still runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from _process_support import Messages, Recorder, Tools, eventually, finished, ticket
from tether import AgentProcess, HookContext, HookEvent, ProcessConfig, RestartPolicy
from tether.models import ModelReply, ModelUnavailableError, ScriptedModel
from tether.store import Journal


def workers(name: str = "triage") -> list[str]:
    """The names of the worker tasks of the process ``name`` running now."""
    return sorted(
        task.get_name()
        for task in asyncio.all_tasks()
        if task.get_name().startswith(f"{name}-worker-") and not task.done()
    )


class FailsFirstWhenLetGo:
    """A model whose first call fails once ``go`` is set (``waiting`` is set meanwhile);
    later calls answer."""

    name = "fails-first"

    def __init__(self) -> None:
        self.waiting, self.go = asyncio.Event(), asyncio.Event()
        self.calls = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            self.waiting.set()
            await self.go.wait()
            raise ModelUnavailableError("the endpoint is down")
        return ModelReply(content="done")

    async def aclose(self) -> None:
        pass


def outcomes(rec: Recorder) -> list[tuple[str, str]]:
    return [(d["event_id"], d["outcome"]) for d in rec.of(HookEvent.TASK_COMPLETED)]


async def test_a_started_process_holds_no_worker_until_its_first_event() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), concurrency=3))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await asyncio.sleep(0.01)  # (a worker made at the start would be running by now)
        assert workers() == []
        event = await process.inject(ticket())
        assert workers() == ["triage-worker-0", "triage-worker-1", "triage-worker-2"]
        await finished(rec)
        assert outcomes(rec) == [(event, "success")]
    assert workers() == []


async def test_an_event_injected_before_the_start_runs_at_the_start() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    event = await process.inject(ticket())
    assert workers() == []
    async with process:
        assert workers() == ["triage-worker-0"]
        await finished(rec)
    assert outcomes(rec) == [(event, "success")]


async def test_an_event_recovered_from_the_journal_runs_at_the_start(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    event = ticket("left queued by a host that died")
    Journal(db, "triage").queued(event.to_dict(), 0)
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), journal_path=str(db)))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await finished(rec)
    assert outcomes(rec) == [(event.event_id, "success")]
    assert Journal(db, "triage").unfinished() == []


async def test_a_process_that_never_received_an_event_stops_and_starts_again() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    await process.stop()
    assert (process.state, process.dead_letters) == ("stopped", [])
    await process.restart()
    assert workers() == []
    event = await process.inject(ticket())
    await finished(rec)
    await process.stop()
    assert outcomes(rec) == [(event, "success")]
    assert workers() == []


async def test_an_event_queued_after_a_stop_is_dead_lettered_and_wakes_no_worker() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    async with process:
        pass
    await process.inject(ticket())
    assert [d["reason"] for d in process.dead_letters] == ["process stopped"]
    assert workers() == []


async def test_an_event_a_worker_gave_back_during_a_crash_runs_after_the_restart() -> None:
    """The crash's workers take no new event: one queued while its session_end hooks run is
    given back by the idle worker that took it, and the restart (nothing queued) runs it."""
    ending, release = asyncio.Event(), asyncio.Event()

    async def session_end(ctx: HookContext) -> None:
        ending.set()
        await release.wait()

    model = FailsFirstWhenLetGo()
    config = ProcessConfig(
        model=model,
        concurrency=2,
        max_retries=0,
        restart=RestartPolicy(max_consecutive_failures=1, backoff=0.001),
    )
    process = AgentProcess("triage", config)
    process.hooks.register(HookEvent.SESSION_END, session_end)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
    async with process:
        failing = await process.inject(ticket("fails"))
        await model.waiting.wait()  # the other worker waits on the queue by now
        model.go.set()
        await ending.wait()  # the crash is supervised: its restart comes once the hook is over
        second = await process.inject(ticket("second"))
        await eventually(lambda: process._live.queue.empty(), what="a worker to give it back")
        assert process.status()["queue_size"] == 1
        release.set()
        await finished(rec, 2)
    assert outcomes(rec) == [(failing, "failed"), (second, "success")]
    assert [d["restart"] for d in rec.of(HookEvent.SESSION_START)] == [False, True]
