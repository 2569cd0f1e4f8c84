"""Open mode: subagent_start / subagent_stop from spawn_process, and config_change."""

from __future__ import annotations

from typing import Any

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, CronTrigger, ProcessConfig
from tether.agent import BudgetConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager
from tether.models import ScriptedModel

SPAWN = ("spawn_process", {"name": "bugs", "instructions": "You file bug reports."})


def open_process(
    calls: list[tuple[str, dict[str, Any]]], *, shared: HookManager | None = None, **config: Any
) -> tuple[AgentProcess, ScriptedModel]:
    model = ScriptedModel(reply="Done.", tool_calls=calls)
    process = AgentProcess(
        "triage",
        ProcessConfig(model=model, execution_mode="open", **config),
        hooks=shared,
    )
    return process, model


async def one_run(process: AgentProcess, rec: Recorder) -> None:
    await process.inject(ticket())
    await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")


def last_tool_message(model: ScriptedModel) -> str:
    return [m for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]


# -- subagents ------------------------------------------------------------------------------


async def test_open_mode_offers_spawn_process_and_the_self_modifying_tools() -> None:
    process, model = open_process([])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
    offered = {t["function"]["name"] for t in model.requests[0]["tools"]}
    assert offered == {"spawn_process", "update_instructions", "add_trigger"}


async def test_strict_mode_offers_no_meta_tools() -> None:
    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
    assert "tools" not in model.requests[0]


async def test_spawning_fires_subagent_start_and_stopping_fires_subagent_stop() -> None:
    process, model = open_process([SPAWN])
    rec = Recorder().attach(
        process.hooks, HookEvent.SUBAGENT_START, HookEvent.SUBAGENT_STOP, HookEvent.TASK_COMPLETED
    )
    async with process:
        await one_run(process, rec)
        child = process.children["bugs"]
        assert child.state.value == "running"
        assert child.config.instructions == "You file bug reports."
        assert process.status()["children"] == ["bugs"]
        assert rec.of(HookEvent.SUBAGENT_START) == [
            {"process_name": "bugs", "execution_mode": "strict", "trigger_count": 0}
        ]
    assert rec.of(HookEvent.SUBAGENT_STOP) == [{"process_name": "bugs", "state": "stopped"}]
    assert child.state.value == "stopped"
    assert last_tool_message(model) == "process 'bugs' started"


async def test_a_subagent_start_block_refuses_the_spawn() -> None:
    async def no_spawning(ctx: HookContext) -> None:
        raise HookBlocked("this agent may not spawn processes")

    process, model = open_process(
        [SPAWN], hooks=[HookConfig(event="subagent_start", callback=no_spawning)]
    )
    rec = Recorder().attach(process.hooks, HookEvent.SUBAGENT_STOP, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
        assert process.children == {}
    assert last_tool_message(model) == "refused: this agent may not spawn processes"
    assert rec.outcomes() == ["success"]
    assert rec.of(HookEvent.SUBAGENT_STOP) == []


async def test_a_child_runs_its_own_then_its_parents_then_the_shared_hooks() -> None:
    order: list[tuple[str, str]] = []

    def hook(label: str) -> Any:
        async def record(ctx: HookContext) -> None:
            order.append((label, ctx.process_id))

        return record

    shared = HookManager()
    shared.register(HookEvent.USER_PROMPT_SUBMIT, hook("shared"))
    process, _ = open_process([SPAWN], shared=shared)
    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, hook("parent"), priority=50)

    async def give_the_child_a_hook(child: AgentProcess) -> None:
        child.hooks.register(HookEvent.USER_PROMPT_SUBMIT, hook("child"), priority=-50)

    process.on_spawn = give_the_child_a_hook
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
        order.clear()
        await process.children["bugs"].inject(ticket("A bug for the child"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="child run")
    # Priorities order hooks within one manager only: the chain is own, inherited, shared.
    assert order == [("child", "bugs"), ("parent", "bugs"), ("shared", "bugs")]


async def test_a_parents_user_prompt_submit_hook_governs_its_child() -> None:
    async def no_passwords(ctx: HookContext) -> None:
        if "password" in ctx.data["prompt"]:
            raise HookBlocked("no passwords")

    process, _ = open_process(
        [SPAWN], hooks=[HookConfig(event="user_prompt_submit", callback=no_passwords)]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
        child = process.children["bugs"]
        await child.inject(ticket("my password leaked"))
        await eventually(lambda: child.dead_letters, what="the child's dead letter")
    assert (child.dead_letters[0]["reason"], child.dead_letters[0]["error"]) == (
        "blocked by hook",
        "no passwords",
    )


async def test_a_spawn_past_max_children_is_refused() -> None:
    from tether import OpenModeConfig

    process, model = open_process([SPAWN], open_mode=OpenModeConfig(max_children=0))
    rec = Recorder().attach(process.hooks, HookEvent.SUBAGENT_START, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
    assert last_tool_message(model) == "refused: this process may run at most 0 spawned processes"
    assert rec.of(HookEvent.SUBAGENT_START) == []


# -- config_change --------------------------------------------------------------------------


async def refuse_everything(ctx: HookContext) -> None:
    raise HookBlocked("configuration is frozen")


async def test_an_operator_instructions_change_applies_even_when_a_hook_blocks() -> None:
    model = ScriptedModel()
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=model,
            instructions="old",
            hooks=[HookConfig(event="config_change", callback=refuse_everything)],
        ),
    )
    rec = Recorder().attach(
        process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED, priority=10
    )
    async with process:
        assert await process.update_instructions("You triage tickets politely.") is True
        await one_run(process, rec)
    assert rec.of(HookEvent.CONFIG_CHANGE) == [
        {
            "source": "operator",
            "change": "instructions",
            "instructions": "You triage tickets politely.",
        }
    ]
    assert model.requests[0]["messages"][0] == {
        "role": "system",
        "content": "You triage tickets politely.",
    }


async def test_an_agents_instructions_change_is_refused_by_a_block() -> None:
    process, model = open_process(
        [("update_instructions", {"instructions": "You obey every ticket."})],
        instructions="You triage support tickets.",
        hooks=[HookConfig(event="config_change", callback=refuse_everything)],
    )
    rec = Recorder().attach(
        process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED, priority=10
    )
    async with process:
        await one_run(process, rec)
    assert rec.of(HookEvent.CONFIG_CHANGE) == [
        {"source": "agent", "change": "instructions", "instructions": "You obey every ticket."}
    ]
    assert process.config.instructions == "You triage support tickets."
    assert last_tool_message(model) == "refused: the change was not allowed"


async def test_an_agents_instructions_change_applies_when_no_hook_blocks() -> None:
    process, model = open_process(
        [("update_instructions", {"instructions": "You triage, briefly."})],
        instructions="You triage support tickets.",
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
        await process.inject(ticket("second"))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="2nd run")
    assert process.config.instructions == "You triage, briefly."
    assert model.requests[-1]["messages"][0]["content"] == "You triage, briefly."


async def test_a_trigger_the_agent_adds_is_refused_by_a_block() -> None:
    process, model = open_process(
        [("add_trigger", {"trigger": {"type": "cron", "cron_expression": "0 * * * *"}})],
        hooks=[HookConfig(event="config_change", callback=refuse_everything)],
    )
    rec = Recorder().attach(
        process.hooks, HookEvent.CONFIG_CHANGE, HookEvent.TASK_COMPLETED, priority=10
    )
    async with process:
        await one_run(process, rec)
        assert process.triggers == []
    [change] = rec.of(HookEvent.CONFIG_CHANGE)
    assert (change["source"], change["change"], change["trigger_id"]) == (
        "agent",
        "trigger_added",
        "cron-0",
    )
    assert change["trigger"]["cron_expression"] == "0 * * * *"
    assert last_tool_message(model) == "refused: the change was not allowed"


async def test_a_trigger_the_agent_adds_applies_when_no_hook_blocks() -> None:
    process, model = open_process(
        [("add_trigger", {"trigger": {"type": "cron", "cron_expression": "0 * * * *"}})]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await one_run(process, rec)
        [(trigger_id, trigger)] = process.triggers
    assert trigger_id == "cron-0"
    assert isinstance(trigger, CronTrigger)
    assert last_tool_message(model) == "trigger added"


async def test_operator_tool_budget_and_trigger_changes_each_fire_config_change() -> None:
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        return "shipped"

    process = AgentProcess(
        "triage",
        ProcessConfig(
            model=ScriptedModel(),
            hooks=[HookConfig(event="config_change", callback=refuse_everything)],
        ),
    )
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, priority=10)
    async with process:
        assert await process.add_tool(lookup)
        assert await process.set_budget(BudgetConfig(max_runs_per_day=5))
        assert await process.add_trigger(CronTrigger(id="hourly", cron_expression="0 * * * *"))
        assert await process.remove_trigger("hourly")
        assert await process.remove_tool("lookup")
    changes = [(d["source"], d["change"]) for d in rec.of(HookEvent.CONFIG_CHANGE)]
    assert changes == [
        ("operator", "tool"),
        ("operator", "budget"),
        ("operator", "trigger_added"),
        ("operator", "trigger_removed"),
        ("operator", "tool"),
    ]
    assert process.config.budget == BudgetConfig(max_runs_per_day=5)
    assert process.triggers == []
