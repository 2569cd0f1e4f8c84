"""Mission, health, MCP servers and rollback: each one fires config_change like the others."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from _process_support import FailingModel, Recorder, eventually, ticket
from tether import (
    AgentProcess,
    CronTrigger,
    EventTrigger,
    McpServerConfig,
    NothingToRollBackError,
    ProcessConfig,
    ProcessState,
    ProcessStateError,
    RestartPolicy,
)
from tether.agent import BudgetConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.hooks._taxonomy import CHANGES, describe_events
from tether.models import ScriptedModel

HTTP_SERVER: dict[str, Any] = {"name": "docs", "url": "https://mcp.example.com/docs"}


async def refuse_everything(ctx: HookContext) -> None:
    raise HookBlocked("configuration is frozen")


def make(*, frozen: bool = False, **config: Any) -> tuple[AgentProcess, Recorder, ScriptedModel]:
    """A process whose config_change events are recorded (and all refused when ``frozen``)."""
    model = ScriptedModel()
    hooks = [HookConfig(event="config_change", callback=refuse_everything)] if frozen else []
    process = AgentProcess("triage", ProcessConfig(model=model, hooks=hooks, **config))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, priority=10)
    return process, rec, model


def changes(rec: Recorder) -> list[tuple[str, str]]:
    return [(d["source"], d["change"]) for d in rec.of(HookEvent.CONFIG_CHANGE)]


async def one_run(process: AgentProcess, text: str = "Login page is down") -> None:
    done = len(process.transcripts)
    await process.inject(ticket(text))
    await eventually(lambda: len(process.transcripts) > done and process.status()["in_flight"] == 0)


# -- mission --------------------------------------------------------------------------------


async def test_a_mission_fires_config_change_and_reaches_the_model_after_the_instructions() -> None:
    process, rec, model = make(instructions="You triage support tickets.")
    async with process:
        assert await process.set_mission("  Keep the login page up.  ") is True
        await one_run(process)
    assert rec.of(HookEvent.CONFIG_CHANGE) == [
        {"source": "operator", "change": "mission", "mission": "Keep the login page up."}
    ]
    assert process.config.mission == "Keep the login page up."
    assert model.requests[0]["messages"][0]["content"] == (
        "You triage support tickets.\n\nYour standing mission: Keep the login page up."
    )


async def test_a_mission_set_in_the_config_reaches_the_model_and_none_clears_it() -> None:
    process, rec, model = make(mission="Close every ticket within a day.")
    async with process:
        await one_run(process)
        assert await process.set_mission(None)
        await one_run(process, "second")
    first, second = (r["messages"][0]["content"] for r in model.requests)
    assert first == "Your standing mission: Close every ticket within a day."
    assert second == ""
    assert rec.of(HookEvent.CONFIG_CHANGE)[-1]["mission"] is None


@pytest.mark.parametrize(
    ("mission", "says"),
    [("   ", "must not be blank"), ("x" * 2001, "2001 characters long; at most 2000")],
)
async def test_a_blank_or_too_long_mission_is_refused_before_any_hook_runs(
    mission: str, says: str
) -> None:
    process, rec, _ = make()
    with pytest.raises(ValueError, match=says):
        await process.set_mission(mission)
    with pytest.raises(ValidationError, match=says):
        ProcessConfig(mission=mission)
    assert rec.seen == []


async def test_an_agents_mission_blocked_by_a_hook_is_not_applied() -> None:
    process, rec, _ = make(frozen=True, mission="Be helpful.")
    assert await process.set_mission("Obey every ticket.", source="agent") is False
    assert process.config.mission == "Be helpful."
    assert changes(rec) == [("agent", "mission")]


async def test_an_operators_mission_applies_even_when_a_hook_blocks() -> None:
    process, _, _ = make(frozen=True)
    assert await process.set_mission("Keep the queue short.") is True
    assert process.config.mission == "Keep the queue short."


async def test_a_source_other_than_agent_or_operator_is_refused() -> None:
    process, rec, _ = make()
    with pytest.raises(ValueError, match="source must be one of agent, operator, got 'admin'"):
        await process.set_mission("x", source="admin")
    assert rec.seen == []


# -- health ---------------------------------------------------------------------------------


async def test_set_health_changes_the_named_supervision_fields_and_keeps_the_others() -> None:
    process, rec, _ = make(restart=RestartPolicy(max_restarts=7))
    assert await process.set_health({"max_consecutive_failures": 2, "backoff": 0.25})
    assert process.config.restart == RestartPolicy(
        max_restarts=7, max_consecutive_failures=2, backoff=0.25
    )
    [data] = rec.of(HookEvent.CONFIG_CHANGE)
    assert (data["source"], data["change"]) == ("operator", "health")
    assert data["health"] == process.config.restart.model_dump(mode="json")


async def test_a_bad_health_value_names_the_field_and_changes_nothing() -> None:
    process, rec, _ = make()
    with pytest.raises(ValidationError, match="max_restarts") as info:
        await process.set_health({"max_restarts": -1})
    assert "greater than or equal to 0" in str(info.value)
    with pytest.raises(ValidationError, match="unknown_field"):
        await process.set_health({"unknown_field": 1})
    with pytest.raises(TypeError, match="RestartPolicy or a mapping"):
        await process.set_health(3)  # type: ignore[arg-type]
    assert process.config.restart == RestartPolicy()
    assert rec.seen == []


async def test_the_supervisor_uses_the_health_settings_set_at_run_time() -> None:
    process = AgentProcess("triage", ProcessConfig(model=FailingModel(), max_retries=0))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_END)
    async with process:
        await process.set_health(RestartPolicy(policy="never", max_consecutive_failures=1))
        await process.inject(ticket())
        await eventually(lambda: process.state == ProcessState.FAILED, what="the crash")
    assert rec.of(HookEvent.SESSION_END)[0]["reason"] == "stop"  # policy "never": no restart


async def test_an_agents_health_change_blocked_by_a_hook_is_not_applied() -> None:
    process, rec, _ = make(frozen=True)
    assert await process.set_health({"policy": "never"}, source="agent") is False
    assert process.config.restart.policy == "on_failure"
    assert changes(rec) == [("agent", "health")]


# -- MCP servers ----------------------------------------------------------------------------


async def test_adding_and_removing_an_mcp_server_fire_mcp_server_changes() -> None:
    process, rec, _ = make(frozen=True)
    assert await process.add_mcp_server(HTTP_SERVER)
    assert process.config.mcp_servers == [{**HTTP_SERVER, "transport": "http"}]
    assert await process.remove_mcp_server("docs")
    assert process.config.mcp_servers == []
    added, removed = rec.of(HookEvent.CONFIG_CHANGE)
    assert added == {
        "source": "operator",
        "change": "mcp_server",
        "action": "added",
        "server_name": "docs",
        "server": {**HTTP_SERVER, "transport": "http"},
    }
    assert removed == {
        "source": "operator",
        "change": "mcp_server",
        "action": "removed",
        "server_name": "docs",
    }


async def test_an_mcp_servers_secret_values_are_masked_for_hooks_and_kept_for_the_process() -> None:
    process, rec, _ = make()
    server = {"name": "fs", "command": ["mcp-fs", "/srv"], "env": {"FS_TOKEN": "tok-123456"}}
    assert await process.add_mcp_server(server)
    [data] = rec.of(HookEvent.CONFIG_CHANGE)
    assert data["server"] == {
        "name": "fs",
        "transport": "stdio",
        "command": ["mcp-fs", "/srv"],
        "env": {"FS_TOKEN": "**********"},
    }
    [kept] = process.config.mcp_servers
    assert kept["env"]["FS_TOKEN"].get_secret_value() == "tok-123456"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"name": "fs", "transport": "stdio"}, "a stdio MCP server needs 'command'"),
        ({"name": "docs", "transport": "sse"}, "transport 'sse' needs 'url'"),
        ({"name": "docs", "url": "ftp://example.com"}, "url must start with http:// or https://"),
        ({"name": "docs", "url": "https://x.example", "cwd": "/tmp"}, "'cwd' is for stdio"),
        ({"name": "../etc", "url": "https://x.example"}, "name '../etc' is not allowed"),
        ({"name": "docs", "url": "https://x.example", "port": 1}, "port"),
        ({"url": "https://x.example"}, "name"),
    ],
)
async def test_a_bad_mcp_server_entry_is_refused_naming_what_is_wrong(
    entry: dict[str, Any], says: str
) -> None:
    process, rec, _ = make()
    with pytest.raises(ValidationError, match=says):
        await process.add_mcp_server(entry)
    assert process.config.mcp_servers == []
    assert rec.seen == []


async def test_an_mcp_server_name_must_be_new_and_known_to_be_removed() -> None:
    process, _, _ = make(mcp_servers=[{"name": "docs", "url": "https://a.example"}])
    with pytest.raises(ValueError, match="already has an MCP server 'docs'"):
        await process.add_mcp_server(McpServerConfig(name="docs", url="https://b.example"))
    with pytest.raises(KeyError, match="has no MCP server 'nope'"):
        await process.remove_mcp_server("nope")


async def test_an_agents_mcp_server_blocked_by_a_hook_is_not_added() -> None:
    process, rec, _ = make(frozen=True)
    assert await process.add_mcp_server(HTTP_SERVER, source="agent") is False
    assert process.config.mcp_servers == []
    assert changes(rec) == [("agent", "mcp_server")]


# -- rollback -------------------------------------------------------------------------------


async def test_rollback_restores_the_previous_instructions_and_fires_rollback() -> None:
    process, rec, model = make(instructions="You triage support tickets.")
    async with process:
        await process.update_instructions("You obey every ticket.")
        assert await process.rollback() is True
        await one_run(process)
    assert process.config.instructions == "You triage support tickets."
    assert model.requests[0]["messages"][0]["content"] == "You triage support tickets."
    assert rec.of(HookEvent.CONFIG_CHANGE)[-1] == {
        "source": "operator",
        "change": "rollback",
        "undone": "instructions",
        "undone_source": "operator",
        "undone_details": {"instructions": "You obey every ticket."},
        "restored": {"instructions": "You triage support tickets."},
    }


async def test_rollback_walks_back_one_change_at_a_time() -> None:
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        return "shipped"

    process, rec, model = make(instructions="v1", budget=BudgetConfig(max_runs_per_day=9))
    original = process.config
    await process.update_instructions("v2")
    await process.set_mission("Keep the queue short.")
    await process.set_budget(BudgetConfig(max_runs_per_day=1))
    await process.set_health({"max_restarts": 0})
    await process.add_mcp_server(HTTP_SERVER)
    await process.add_trigger(EventTrigger(id="deploys", event_type="deploy"))
    await process.add_tool(lookup)
    assert [c["change"] for c in process.config_history] == [
        "instructions",
        "mission",
        "budget",
        "health",
        "mcp_server",
        "trigger_added",
        "tool",
    ]
    for _ in range(7):
        await process.rollback()
    assert process.config == original
    assert process.triggers == []
    async with process:
        await one_run(process)
    assert "tools" not in model.requests[0]
    undone = [d["undone"] for d in rec.of(HookEvent.CONFIG_CHANGE) if d["change"] == "rollback"]
    assert undone == [
        "tool",
        "trigger_added",
        "mcp_server",
        "health",
        "budget",
        "mission",
        "instructions",
    ]
    with pytest.raises(NothingToRollBackError, match="no applied configuration change"):
        await process.rollback()


async def test_two_concurrent_rollbacks_undo_two_changes() -> None:
    """Regression: both rollbacks read the newest change before their config_change dispatch,
    so they undid the same change twice and fired the same "undone" twice."""

    async def audit(ctx: HookContext) -> None:
        await asyncio.sleep(0)  # the other rollback runs while this one's hooks do

    process, rec, _ = make(instructions="v0")
    await process.update_instructions("v1")
    await process.update_instructions("v2")
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    assert await asyncio.gather(process.rollback(), process.rollback()) == [True, True]
    assert process.config.instructions == "v0"
    assert process.config_history == []
    undone = [d["undone_details"] for d in rec.of(HookEvent.CONFIG_CHANGE)[2:]]
    assert undone == [{"instructions": "v2"}, {"instructions": "v1"}]


async def test_a_config_change_hook_awaiting_a_change_of_its_own_process_gets_an_error() -> None:
    """It would wait for the change that fires it; scheduled instead, it applies after it."""
    errors: list[BaseException] = []
    scheduled: list[asyncio.Task[bool]] = []

    async def follow_up(ctx: HookContext) -> None:
        if ctx.data["change"] != "instructions":
            return
        try:
            await process.set_mission("Keep the queue short.")
        except ProcessStateError as exc:
            errors.append(exc)
        scheduled.append(asyncio.create_task(process.set_mission("Answer within a day.")))

    process, rec, _ = make()
    process.hooks.register(HookEvent.CONFIG_CHANGE, follow_up)
    await process.update_instructions("v2")
    assert await scheduled[0] is True
    [error] = errors
    assert str(error) == (
        "a 'mission' change of process 'triage' was awaited from inside a hook of another "
        "change of it, which would wait on itself; schedule it instead (asyncio.create_task(...)): "
        "it applies once that change has"
    )
    assert changes(rec) == [("operator", "instructions"), ("operator", "mission")]
    assert process.config.mission == "Answer within a day."


async def test_rollback_with_nothing_applied_raises_and_fires_nothing() -> None:
    process, rec, _ = make()
    with pytest.raises(NothingToRollBackError, match="process 'triage' has no applied"):
        await process.rollback()
    assert rec.seen == []


async def test_rolling_back_an_added_cron_trigger_stops_it_and_a_removed_one_comes_back() -> None:
    process, _, _ = make(triggers=[CronTrigger(id="nightly", cron_expression="0 3 * * *")])
    async with process:
        await process.add_trigger(CronTrigger(id="hourly", cron_expression="0 * * * *"))
        assert sorted(process._runners) == ["hourly", "nightly"]
        await process.rollback()
        assert sorted(process._runners) == ["nightly"]
        await process.remove_trigger("nightly")
        assert process._runners == {}
        await process.rollback()
        assert sorted(process._runners) == ["nightly"]
        assert [i for i, _ in process.triggers] == ["nightly"]


def runner_tasks() -> list[asyncio.Task[Any]]:
    """The trigger runner tasks (cron, file watch) still alive in this event loop."""
    return [
        t
        for t in asyncio.all_tasks()
        if not t.done() and getattr(t.get_coro(), "__qualname__", "").endswith("Runner._run")
    ]


async def test_two_concurrent_trigger_additions_get_two_ids_and_no_runner_outlives_stop() -> None:
    """Regression: add_trigger() chose the id before taking the change lock, so two concurrent
    additions both got 'cron-0'; one runner was left out of the process's runners and kept
    firing after remove_trigger() and stop()."""

    async def audit(ctx: HookContext) -> None:
        await asyncio.sleep(0.01)  # the other addition runs while this one's hooks do

    process, rec, _ = make()
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    async with process:
        added = await asyncio.gather(
            process.add_trigger(CronTrigger(cron_expression="* * * * *")),
            process.add_trigger(CronTrigger(cron_expression="*/5 * * * *")),
        )
        assert added == [True, True]
        assert [i for i, _ in process.triggers] == ["cron-0", "cron-1"]
        assert sorted(process._runners) == ["cron-0", "cron-1"]
        await process.remove_trigger("cron-0")
    assert runner_tasks() == []
    assert [d["trigger_id"] for d in rec.of(HookEvent.CONFIG_CHANGE)] == [
        "cron-0",
        "cron-1",
        "cron-0",
    ]


async def test_two_concurrent_additions_of_one_mcp_server_name_add_it_once() -> None:
    """Regression: the name was checked before taking the change lock, so both additions
    passed the check and the server was declared twice."""

    async def audit(ctx: HookContext) -> None:
        await asyncio.sleep(0.01)

    process, rec, _ = make()
    process.hooks.register(HookEvent.CONFIG_CHANGE, audit)
    first, second = await asyncio.gather(
        process.add_mcp_server(HTTP_SERVER),
        process.add_mcp_server(HTTP_SERVER),
        return_exceptions=True,
    )
    assert first is True
    assert isinstance(second, ValueError)
    assert str(second) == "process 'triage' already has an MCP server 'docs'"
    assert len(process.config.mcp_servers) == 1
    assert changes(rec) == [("operator", "mcp_server")]


async def test_rolling_back_a_budget_restores_its_limits_and_keeps_the_days_counts() -> None:
    process, _, _ = make()
    async with process:
        await process.set_budget(BudgetConfig(max_runs_per_day=1))
        await one_run(process)
        await process.rollback()
        assert process.config.budget is None
        await one_run(process, "second")  # no limit any more
        await process.set_budget(BudgetConfig(max_runs_per_day=2))
        await process.inject(ticket("third"))
        await eventually(lambda: process.dead_letters, what="the refusal")
    assert process.invocation_count == 2
    assert process.dead_letters[0]["reason"] == "budget exceeded"  # the two runs still count


async def test_rolling_back_a_removed_tool_brings_it_back_for_the_next_run() -> None:
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        return "shipped"

    model = ScriptedModel()
    process = AgentProcess("triage", ProcessConfig(model=model, tools=[lookup]))
    async with process:
        await process.remove_tool("lookup")
        await process.rollback()
        await one_run(process)
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["lookup"]


async def test_an_agents_rollback_blocked_by_a_hook_keeps_the_change() -> None:
    process, rec, _ = make(instructions="v1")
    await process.update_instructions("v2")
    process.hooks.register(HookEvent.CONFIG_CHANGE, refuse_everything)
    assert await process.rollback(source="agent") is False
    assert process.config.instructions == "v2"
    assert [c["change"] for c in process.config_history] == ["instructions"]
    assert changes(rec)[-1] == ("agent", "rollback")


async def test_an_agents_blocked_change_is_not_kept_for_rollback() -> None:
    process, _, _ = make(frozen=True)
    await process.set_mission("Obey every ticket.", source="agent")
    assert process.config_history == []


async def test_the_rollback_history_keeps_the_last_twenty_changes() -> None:
    process, _, _ = make(instructions="v0")
    for n in range(1, 26):
        await process.update_instructions(f"v{n}")
    assert len(process.config_history) == 20
    for _ in range(20):
        await process.rollback()
    assert process.config.instructions == "v5"
    with pytest.raises(NothingToRollBackError, match="the last 20 are kept"):
        await process.rollback()


async def test_the_history_redacts_secret_values() -> None:
    process, _, _ = make(secrets={"CRM_TOKEN": "crm-secret-value"})
    await process.update_instructions("Use crm-secret-value to log in.")
    [entry] = process.config_history
    assert entry["details"] == {"instructions": "Use [REDACTED:CRM_TOKEN] to log in."}
    assert entry["source"] == "operator"


# -- the documented names -------------------------------------------------------------------


async def test_tether_fires_every_change_name_the_reference_lists() -> None:
    async def lookup(order_id: str) -> str:
        """Look an order up."""
        return "shipped"

    process, rec, _ = make()
    async with process:
        await one_run(process)
        await process.update_instructions("Be brief.")
        await process.add_tool(lookup)
        await process.add_mcp_server(HTTP_SERVER)
        await process.add_trigger(EventTrigger(id="deploys", event_type="deploy"))
        await process.remove_trigger("deploys")
        await process.set_budget(BudgetConfig(max_runs_per_day=5))
        await process.set_health({"max_restarts": 1})
        await process.set_mission("Keep the queue short.")
        await process.rollback()
        await process.rewind(2)
    [schema] = [e["payload_schema"] for e in describe_events() if e["event"] == "config_change"]
    fired = [d["change"] for d in rec.of(HookEvent.CONFIG_CHANGE)]
    assert fired == list(CHANGES)
    assert schema["properties"]["change"]["enum"] == list(CHANGES)
