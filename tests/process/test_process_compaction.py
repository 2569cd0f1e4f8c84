"""pre_compact / post_compact: the conversation buffer drops its oldest messages past N."""

from __future__ import annotations

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ContextConfig, HookEvent, ProcessConfig
from tether.models import ScriptedModel


async def test_a_buffer_over_its_limit_fires_pre_and_post_compact_with_the_documented_keys() -> (
    None
):
    model = ScriptedModel(reply="Triaged.")
    process = AgentProcess(
        "triage",
        ProcessConfig(model=model, context=ContextConfig(conversation_max_messages=3)),
    )
    rec = Recorder().attach(
        process.hooks, HookEvent.PRE_COMPACT, HookEvent.POST_COMPACT, HookEvent.TASK_COMPLETED
    )
    async with process:
        await process.inject(ticket("first"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 1, what="run 1")
        assert rec.of(HookEvent.PRE_COMPACT) == []  # two messages fit in three
        await process.inject(ticket("second"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="run 2")
    [pre] = rec.of(HookEvent.PRE_COMPACT)
    [post] = rec.of(HookEvent.POST_COMPACT)
    assert set(pre) == {"buffer_size", "max_messages", "dropping"}
    assert (pre["buffer_size"], pre["max_messages"]) == (4, 3)
    [dropped_message] = pre["dropping"]
    assert dropped_message["role"] == "user"
    assert dropped_message["content"].startswith("ticket: first")
    assert post == {"buffer_size": 3, "dropped": 1}
    assert len(process.context.conversation) == 3
    assert rec.events == ["task_completed", "pre_compact", "post_compact", "task_completed"]


async def test_the_next_run_sees_only_the_messages_left_after_compaction() -> None:
    model = ScriptedModel(reply="Triaged.")
    process = AgentProcess(
        "triage",
        ProcessConfig(model=model, context=ContextConfig(conversation_max_messages=2)),
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        for text in ("first", "second", "third"):
            await process.inject(ticket(text))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, what="3 runs")
    sent = model.requests[-1]["messages"]
    # system, the previous exchange (the limit), then the new prompt
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"].startswith("ticket: second")
    assert sent[3]["content"].startswith("ticket: third")


async def test_a_compaction_hook_that_changes_its_data_does_not_change_the_buffer() -> None:
    async def meddle(ctx: object) -> None:
        ctx.data["dropping"].clear()  # type: ignore[attr-defined]

    process = AgentProcess(
        "triage",
        ProcessConfig(model=ScriptedModel(), context=ContextConfig(conversation_max_messages=1)),
    )
    process.hooks.register(HookEvent.PRE_COMPACT, meddle)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")
    assert [m["role"] for m in process.context.conversation.messages] == ["assistant"]
