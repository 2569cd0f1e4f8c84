"""Compactions of runs that end together (concurrency > 1) while pre_compact hooks wait."""

from __future__ import annotations

import asyncio

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ContextConfig, HookContext, HookEvent, ProcessConfig
from tether.models import ScriptedModel


async def test_overlapping_compactions_drop_what_their_hooks_were_shown_and_no_more() -> None:
    """Regression: each run dropped what was over the limit when it looked, before the other's
    pre_compact hooks were done: together they emptied the buffer (max 4, left 0) and dropped
    messages no pre_compact hook had been shown, while one message was shown twice."""
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(reply="Triaged."),
            concurrency=2,
            context=ContextConfig(conversation_max_messages=4),
        ),
    )
    rec = Recorder().attach(process.hooks, HookEvent.PRE_COMPACT, HookEvent.TASK_COMPLETED)

    async def slow_archive(ctx: HookContext) -> None:
        await asyncio.sleep(0.05)  # the other run ends meanwhile

    process.hooks.register(HookEvent.PRE_COMPACT, slow_archive)
    async with process:
        for n in range(6):
            await process.inject(ticket(f"ticket {n}"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 6, what="six runs")
        kept = list(process.context.conversation.messages)
    shown = [m for d in rec.of(HookEvent.PRE_COMPACT) for m in d["dropping"]]
    assert len(kept) == 4
    assert len(shown) == 8  # each dropped message shown once: the tickets tell them apart
    asked = [m["content"].split("\n")[0] for m in shown + kept if m["role"] == "user"]
    assert sorted(asked) == [f"ticket: ticket {n}" for n in range(6)]  # none twice, none lost
