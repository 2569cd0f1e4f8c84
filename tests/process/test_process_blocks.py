"""The reference's sentences on what a block does, and on which hook changes a process uses.

"Only the six blockable events can be refused; a block of any other event is logged as a
warning and ignored." -- "SESSION_END ... No (a stop always proceeds)." -- "The process reads one
value back: the prompt of USER_PROMPT_SUBMIT ... Changes to data of other events are not used."
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _process_support import GatedModel, Recorder, eventually, ticket
from tether import AgentProcess, FileWatchTrigger, ProcessConfig
from tether.agent import ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookBlocked, HookContext, HookEvent
from tether.models import ScriptedModel


async def refuse(ctx: HookContext) -> None:
    raise HookBlocked("refused by policy")


async def crash(ctx: HookContext) -> None:
    raise RuntimeError("the policy service is down")


# -- informational events: a block is ignored -----------------------------------------------


async def run_approved_call(
    model: ScriptedModel,
    reviewer: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]],
    event: HookEvent,
    hook: Callable[[HookContext], Awaitable[None]],
) -> tuple[AgentProcess, Recorder]:
    """Run one ticket whose update_state call needs ``reviewer``'s approval, with ``hook`` on
    ``event``; the stopped process and a recorder of its task_completed."""
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=model,
            context=ContextConfig(state_tool=True),
            approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
        ),
    )
    process.hooks.register(event, hook)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
    return process, rec


async def test_a_session_end_block_does_not_stop_the_stop() -> None:
    model = GatedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    process.hooks.register(HookEvent.SESSION_END, refuse)
    process.hooks.register(HookEvent.SESSION_END, crash, fail_closed=True)
    await process.start()
    await process.inject(ticket())
    await process.inject(ticket("Printer jammed"))
    await eventually(lambda: model.active == 1, what="the first run")
    model.gate.set()
    await process.stop()
    assert process.state.value == "stopped"
    assert process.status()["queue_size"] == 0


async def test_session_end_fires_before_teardown_while_the_queue_still_holds_its_events() -> None:
    model = GatedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    seen: list[tuple[str, int, int, int]] = []

    async def look(ctx: HookContext) -> None:
        status = process.status()
        seen.append(
            (status["state"], status["queue_size"], status["in_flight"], len(process.dead_letters))
        )

    process.hooks.register(HookEvent.SESSION_END, look)
    await process.start()
    await process.inject(ticket())
    queued = await process.inject(ticket("Printer jammed"))
    await eventually(lambda: model.active == 1, what="the first run")
    stopping = asyncio.create_task(process.stop())
    await eventually(lambda: seen, what="session_end")
    model.gate.set()
    await stopping
    assert seen == [("stopping", 1, 1, 0)]
    assert [d["event_id"] for d in process.dead_letters] == [queued]


async def test_a_task_completed_block_changes_neither_the_outcome_nor_the_next_event() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    process.hooks.register(HookEvent.TASK_COMPLETED, refuse, priority=10)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await process.inject(ticket("Printer jammed"))
        await eventually(lambda: len(rec.outcomes()) == 2, what="two runs")
    # The block stopped the later hook of that dispatch, so the recorder runs first.
    assert rec.outcomes() == ["success", "success"]
    assert process.dead_letters == []
    assert process.invocation_count == 2


async def test_a_permission_denied_block_neither_undoes_the_denial_nor_fails_the_run() -> None:
    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=False, reviewer_id="ops", reason="not now")

    model = ScriptedModel(reply="Noted.", tool_calls=[("update_state", {"key": "k", "value": 1})])
    process, rec = await run_approved_call(model, reviewer, HookEvent.PERMISSION_DENIED, refuse)
    assert rec.outcomes() == ["success"]
    assert process.context.state_snapshot() == {}
    tool_answers = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_answers[0]["content"] == "refused: not now"


# -- changes to the data of events other than user_prompt_submit are not used ---------------


async def test_a_task_created_hook_that_rewrites_the_ids_changes_nothing_queued() -> None:
    async def rewrite(ctx: HookContext) -> None:
        for key in ("event_id", "trigger_id", "trigger_type"):
            ctx.set(key, "rewritten")

    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    process.hooks.register(HookEvent.TASK_CREATED, rewrite)
    rec = Recorder().attach(process.hooks, HookEvent.USER_PROMPT_SUBMIT, HookEvent.TASK_COMPLETED)
    event = ticket()
    async with process:
        assert await process.inject(event) == event.event_id
        await eventually(lambda: rec.outcomes(), what="the run")
    for data in (*rec.of(HookEvent.USER_PROMPT_SUBMIT), *rec.of(HookEvent.TASK_COMPLETED)):
        assert (data["event_id"], data["trigger_id"], data["trigger_type"]) == (
            event.event_id,
            "helpdesk",
            "webhook",
        )


async def test_a_permission_request_hook_that_rewrites_the_call_changes_neither_what_is_asked_nor_run() -> (  # noqa: E501
    None
):
    asked: list[tuple[str, dict[str, Any]]] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append((request.tool_name, dict(request.arguments)))
        return ApprovalDecision(approved=True, reviewer_id="ops")

    async def rewrite(ctx: HookContext) -> None:
        ctx.set("tool_name", "something_else")
        ctx.data["arguments"]["key"] = "rewritten"

    model = ScriptedModel(tool_calls=[("update_state", {"key": "priority", "value": "high"})])
    process, _ = await run_approved_call(model, reviewer, HookEvent.PERMISSION_REQUEST, rewrite)
    assert asked == [("update_state", {"key": "priority", "value": "high"})]
    assert process.context.state_snapshot() == {"priority": "high"}


async def test_a_subagent_start_hook_that_renames_the_child_does_not_rename_it() -> None:
    async def rename(ctx: HookContext) -> None:
        ctx.set("process_name", "renamed")
        ctx.set("execution_mode", "open")

    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    process = AgentProcess(
        "triage",
        ProcessConfig(model=ScriptedModel(tool_calls=[spawn]), execution_mode="open"),
    )
    process.hooks.register(HookEvent.SUBAGENT_START, rename)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
        assert list(process.children) == ["bugs"]
        assert process.children["bugs"].config.execution_mode == "strict"


async def test_a_file_changed_hook_that_rewrites_the_path_does_not_change_the_event(
    tmp_path: Path,
) -> None:
    async def rewrite(ctx: HookContext) -> None:
        ctx.set("path", "/etc/passwd")
        ctx.set("event_id", "rewritten")

    model = ScriptedModel()
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), patterns=["*.txt"])
    process = AgentProcess("watcher", ProcessConfig(model=model, triggers=[trigger]))
    process.hooks.register(HookEvent.FILE_CHANGED, rewrite)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_CREATED, HookEvent.TASK_COMPLETED)
    seen = Recorder().attach(process.hooks, HookEvent.FILE_CHANGED, priority=10)
    target = tmp_path / "ticket.txt"
    async with process:
        n = 0
        while not rec.outcomes():  # the watcher may start after the first write
            n += 1
            await asyncio.to_thread(target.write_text, f"version {n}\n")
            for _ in range(100):
                if rec.outcomes():
                    break
                await asyncio.sleep(0.01)
            assert n < 50, "no file_changed event"
    first = seen.of(HookEvent.FILE_CHANGED)[0]
    assert rec.of(HookEvent.TASK_CREATED)[0]["event_id"] == first["event_id"]
    assert "/etc/passwd" not in model.prompts[0]
    assert f"path: {target}" in model.prompts[0]
