"""The reference's sentences on a process's own hook manager.

"process.hooks is the process's own HookManager. It holds the hooks from config.hooks and
whatever you register in code." -- "The manager an AgentProcess creates has a default timeout of
30 seconds" -- "process.status()["hook_count"] reports how many hooks the process's own manager
holds." -- "A once=True hook is removed before it runs, so it runs at most once".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig
from tether.agent import ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager
from tether.models import ScriptedModel


async def nothing(ctx: HookContext) -> None:
    pass


def test_the_manager_a_process_creates_has_a_default_timeout_of_30_seconds() -> None:
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel()))
    assert process.hooks.default_timeout == 30


def test_hook_count_counts_the_config_and_code_hooks_of_the_process_only() -> None:
    shared = HookManager()
    shared.register(HookEvent.SESSION_START, nothing)
    shared.register(HookEvent.SESSION_END, nothing)
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(),
            hooks=[HookConfig(event="task_completed", callback=nothing)],
        ),
        hooks=shared,
    )
    process.hooks.register(HookEvent.TASK_CREATED, nothing)
    assert process.status()["hook_count"] == 2


async def test_a_shared_manager_passed_to_the_process_runs_after_its_own_hooks() -> None:
    order: list[tuple[str, str]] = []

    def hook(label: str) -> Callable[[HookContext], Awaitable[None]]:
        async def record(ctx: HookContext) -> None:
            order.append((label, ctx.process_id))

        return record

    shared = HookManager()
    shared.register(HookEvent.SESSION_START, hook("shared"))
    # A higher priority in the shared manager does not move it ahead of the process's hooks.
    shared.register(HookEvent.SESSION_START, hook("shared, priority 100"), priority=100)
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(), hooks=[HookConfig(event="session_start", callback=hook("own"))]
        ),
        hooks=shared,
    )
    async with process:
        pass
    assert order == [
        ("own", "triage"),
        ("shared, priority 100", "triage"),
        ("shared", "triage"),
    ]


async def test_a_once_hook_of_a_process_runs_for_the_first_event_only() -> None:
    calls: list[str] = []

    async def first_only(ctx: HookContext) -> None:
        calls.append(ctx.data["event_id"])

    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(),
            hooks=[HookConfig(event="task_created", callback=first_only, once=True)],
        ),
    )
    assert process.status()["hook_count"] == 1
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        first = await process.inject(ticket())
        await process.inject(ticket("Printer jammed"))
        await eventually(lambda: len(rec.outcomes()) == 2, what="two runs")
    assert calls == [first]
    assert process.status()["hook_count"] == 1  # the recorder


async def test_a_parents_permission_request_hook_governs_the_tool_calls_of_its_child() -> None:
    """The reference: a permission_request hook on the parent governs every process it spawns."""
    asked: list[str] = []
    gated: list[tuple[str, str]] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision(approved=True, reviewer_id="ops")

    async def no_state_changes(ctx: HookContext) -> None:
        gated.append((ctx.process_id, ctx.data["tool_name"]))
        raise HookBlocked("spawned processes keep no notes")

    spawn = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})
    model = ScriptedModel(tool_calls=[spawn])
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=model,
            execution_mode="open",
            context=ContextConfig(state_tool=True),
            approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
            hooks=[HookConfig(event="permission_request", callback=no_state_changes)],
        ),
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.PERMISSION_DENIED)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: rec.outcomes(), what="the parent's run")
        child = process.children["bugs"]
        model.tool_calls.append(("update_state", {"key": "k", "value": 1}))
        await child.inject(ticket("A bug for the child"))
        await eventually(lambda: len(rec.outcomes()) == 2, what="the child's run")
        assert child.context.state_snapshot() == {}
    assert gated == [("bugs", "update_state")]
    assert asked == []
    [denial] = rec.of(HookEvent.PERMISSION_DENIED)
    assert (denial["decided_by"], denial["reason"]) == ("hook", "spawned processes keep no notes")
