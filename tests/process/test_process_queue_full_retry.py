"""An event whose retry finds the queue full: dead-lettered, and its hooks hear how it ended."""

from __future__ import annotations

import asyncio

from _process_support import FailsOnceModel, Messages, Recorder, Tools, eventually, ticket
from tether import AgentProcess, HookEvent, ProcessConfig
from tether.models import ModelReply


class FailsThenHolds(FailsOnceModel):
    """Call 1 fails (the endpoint is down); call 2 waits for ``gate``; later calls answer."""

    name = "fails-then-holds"

    def __init__(self) -> None:
        super().__init__("Triaged.")
        self.gate = asyncio.Event()

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        reply = await super().complete(messages, tools)
        if self.calls == 2:
            await self.gate.wait()
        return reply


async def test_a_retry_that_finds_the_queue_full_completes_dead_lettered() -> None:
    """Regression: the event's last task_completed said "retrying"; its retry then found the
    queue full and it was dead-lettered with no task_completed, so a hook pairing the two
    never heard how it ended."""
    model = FailsThenHolds()
    process = AgentProcess(
        "triage",
        ProcessConfig(model=model, max_queue_size=1, max_retries=1, retry_backoff=0.2),
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    first, second, third = ticket("first"), ticket("second"), ticket("third")
    async with process:
        await process.inject(first)
        await eventually(lambda: rec.outcomes() == ["retrying"], what="the failed attempt")
        await process.inject(second)  # runs, held by the model
        await eventually(lambda: model.calls == 2, what="the held run")
        await process.inject(third)  # fills the queue
        await eventually(lambda: len(rec.outcomes()) == 2, what="the retry's end")
        model.gate.set()
        await eventually(lambda: len(rec.outcomes()) == 4, what="the other two runs")
    ended = [(d["event_id"], d["outcome"], d["error"]) for d in rec.of(HookEvent.TASK_COMPLETED)]
    assert ended[1] == (first.event_id, "dead_lettered", "queue full")
    [dead] = process.dead_letters
    assert (dead["event_id"], dead["reason"], dead["attempts"]) == (first.event_id, "queue full", 1)
