"""Supervision over a long life: max_restarts counts the automatic restarts in a row."""

from __future__ import annotations

from _process_support import Messages, Recorder, Tools, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig, RestartPolicy
from tether.models import ModelReply, ModelUnavailableError


class DownAt:
    """A model whose endpoint is down for the calls numbered in ``down`` (from 1)."""

    name = "down-at"

    def __init__(self, *down: int) -> None:
        self.down = set(down)
        self.calls = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        if self.calls in self.down:
            raise ModelUnavailableError(f"the endpoint is down (call {self.calls})")
        return ModelReply(content="Triaged.")

    async def aclose(self) -> None:
        pass


async def test_a_process_that_recovers_after_each_crash_keeps_being_restarted() -> None:
    """Regression: max_restarts counted every automatic restart of the process's life, so a
    process that crashed once a day and recovered each time was given up on (left failed,
    its events dead-lettered) on the day after its max_restarts-th crash."""
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=DownAt(1, 3, 5),
            max_retries=0,
            restart=RestartPolicy(max_consecutive_failures=1, max_restarts=1, backoff=0.001),
        ),
    )
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_END, HookEvent.TASK_COMPLETED)
    async with process:
        for n in range(6):  # fails, runs; fails, runs; fails, runs
            await process.inject(ticket(f"ticket {n}"))
            await eventually(lambda n=n: len(rec.outcomes()) == n + 1, what=f"ticket {n}")  # type: ignore[misc]
            await eventually(lambda: process.state.value == "running", what="running")
        assert process.status()["restart_count"] == 3
    assert rec.outcomes() == ["failed", "success"] * 3
    assert [d["reason"] for d in rec.of(HookEvent.SESSION_END)] == ["restart"] * 3 + ["stop"]
