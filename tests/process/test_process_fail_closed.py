"""fail_closed in a running process, for each blockable event it can refuse.

"A hook with fail_closed=True turns its error or timeout into a block (reason starts with "hook
failed (fail_closed)")" -- "Without fail_closed=True, a crashed or slow policy hook lets the action
through." -- "On a non-blockable event, fail_closed has no effect."
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, FileWatchTrigger, ProcessConfig
from tether.agent import ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel

FAILED = "hook failed (fail_closed)"


async def crash(ctx: HookContext) -> None:
    raise RuntimeError("the policy service is down")


async def hang(ctx: HookContext) -> None:
    await asyncio.sleep(60)


def process_with(event: str, fail_closed: bool, **config: Any) -> AgentProcess:
    hook = HookConfig(event=event, callback=crash, fail_closed=fail_closed)
    config.setdefault("model", ScriptedModel())
    return AgentProcess("triage", ProcessConfig(hooks=[hook], **config))


@pytest.mark.parametrize("event", ["task_created", "user_prompt_submit"])
async def test_a_failing_fail_closed_hook_dead_letters_the_event_as_blocked(event: str) -> None:
    process = process_with(event, fail_closed=True)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: process.dead_letters, what="the dead letter")
    [dead] = process.dead_letters
    assert dead["reason"] == "blocked by hook"
    assert dead["error"].startswith(FAILED)
    assert "the policy service is down" in dead["error"]
    assert process.invocation_count == 0


@pytest.mark.parametrize("event", ["task_created", "user_prompt_submit"])
async def test_a_failing_hook_without_fail_closed_lets_the_event_run(event: str) -> None:
    process = process_with(event, fail_closed=False)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
    assert rec.outcomes() == ["success"]
    assert process.dead_letters == []


async def test_a_fail_closed_user_prompt_submit_hook_that_times_out_blocks_the_prompt() -> None:
    hook = HookConfig(event="user_prompt_submit", callback=hang, timeout=0.05, fail_closed=True)
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, hooks=[hook]))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the outcome")
    assert rec.outcomes() == ["blocked"]
    assert process.dead_letters[0]["error"].startswith(FAILED)
    assert model.requests == []


@pytest.mark.parametrize(("fail_closed", "asked"), [(True, 0), (False, 1)])
async def test_a_failing_permission_request_hook_denies_the_call_only_when_fail_closed(
    fail_closed: bool, asked: int
) -> None:
    requests: list[ApprovalRequest] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        requests.append(request)
        return ApprovalDecision(approved=True, reviewer_id="ops")

    model = ScriptedModel(tool_calls=[("update_state", {"key": "priority", "value": "high"})])
    process = process_with(
        "permission_request",
        fail_closed,
        model=model,
        context=ContextConfig(state_tool=True),
        approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
    )
    rec = Recorder().attach(process.hooks, HookEvent.PERMISSION_DENIED, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
    assert len(requests) == asked
    denials = rec.of(HookEvent.PERMISSION_DENIED)
    if fail_closed:
        [denial] = denials
        assert (denial["kind"], denial["tool_name"], denial["decided_by"]) == (
            "approval",
            "update_state",
            "hook",
        )
        assert denial["reason"].startswith(FAILED)
        assert process.context.state_snapshot() == {}
    else:
        assert denials == []
        assert process.context.state_snapshot() == {"priority": "high"}


@pytest.mark.parametrize(("fail_closed", "children"), [(True, []), (False, ["bugs"])])
async def test_a_failing_subagent_start_hook_refuses_the_spawn_only_when_fail_closed(
    fail_closed: bool, children: list[str]
) -> None:
    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    model = ScriptedModel(tool_calls=[spawn])
    process = process_with("subagent_start", fail_closed, model=model, execution_mode="open")
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
        assert sorted(process.children) == children
    answer = next(m for m in model.requests[-1]["messages"] if m["role"] == "tool")["content"]
    assert answer.startswith(f"refused: {FAILED}") == fail_closed


@pytest.mark.parametrize(("source", "applied"), [("agent", False), ("operator", True)])
async def test_a_failing_fail_closed_config_change_hook_refuses_only_the_agents_change(
    source: str, applied: bool
) -> None:
    process = process_with("config_change", fail_closed=True, instructions="Triage tickets.")
    async with process:
        ok = await process.update_instructions("File bug reports.", source=source)
    assert ok is applied
    expected = "File bug reports." if applied else "Triage tickets."
    assert process.config.instructions == expected


async def test_a_failing_fail_closed_file_changed_hook_filters_the_change(tmp_path: Path) -> None:
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), patterns=["*.txt"])
    model = ScriptedModel()
    process = process_with("file_changed", fail_closed=True, model=model, triggers=[trigger])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_CREATED)
    target = tmp_path / "ticket.txt"
    async with process:
        n = 0
        while not process.status()["filtered_count"]:  # the watcher may start after a write
            n += 1
            assert n < 50, "no file_changed event"
            await asyncio.to_thread(target.write_text, f"version {n}\n")
            for _ in range(100):
                if process.status()["filtered_count"]:
                    break
                await asyncio.sleep(0.01)
    assert rec.seen == []
    assert model.requests == []


@pytest.mark.parametrize("event", ["task_completed", "session_end", "session_start"])
async def test_a_failing_fail_closed_hook_on_an_informational_event_changes_nothing(
    event: str,
) -> None:
    process = process_with(event, fail_closed=True)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        assert process.state.value == "running"
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the run")
    assert rec.outcomes() == ["success"]
    assert process.dead_letters == []
    assert process.state.value == "stopped"
