"""pre_tool_use and post_tool_use: fired around every tool call, with refusal and rewrites."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from _process_support import Recorder, run_task
from _tool_support import search
from tether import AgentProcess, OpenModeConfig, ProcessConfig
from tether.agent import Tool
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel

TOOL_KEYS = {"tool_name", "arguments", "call_id", "event_id", "server", "idempotency_key"}


def lookup_tool(ran: list[dict[str, Any]]) -> Any:
    async def lookup_order(order_id: int, verbose: bool = False) -> dict[str, Any]:
        """Look an order up."""
        ran.append({"order_id": order_id, "verbose": verbose})
        return {"order": order_id, "status": "shipped"}

    return lookup_order


def shop(
    calls: list[tuple[str, dict[str, Any] | str]], ran: list[dict[str, Any]], **config: Any
) -> tuple[AgentProcess, ScriptedModel]:
    model = ScriptedModel(reply="Done.", tool_calls=calls)
    tools = config.pop("tools", [lookup_tool(ran)])
    process = AgentProcess("shop", ProcessConfig(model=model, tools=tools, **config))
    return process, model


def tool_results(model: ScriptedModel) -> list[str]:
    last = model.requests[-1]["messages"]
    return [m["content"] for m in last if m.get("role") == "tool"]


def record(process: AgentProcess, *events: HookEvent) -> Recorder:
    return Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, *events)


async def run_one(process: AgentProcess, *events: HookEvent) -> Recorder:
    """Run one task through ``process``, recording task_completed and ``events``."""
    rec = record(process, *events)
    async with process:
        await run_task(process, rec)
    return rec


def approved_shop(ran: list[dict[str, Any]], asked: list[ApprovalRequest]) -> AgentProcess:
    """A shop looking order 1 up, each call approved by alice and its request kept in ``asked``."""

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(approved=True, reviewer_id="alice")

    process, _ = shop(
        [("lookup_order", {"order_id": 1})],
        ran,
        approval=ApprovalPolicy(tools=["lookup_order"], handler=reviewer),
    )
    return process


# -- what the hooks see -----------------------------------------------------------------------


async def test_pre_tool_use_carries_the_tool_its_parsed_arguments_and_the_call() -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": "42"})], ran)
    rec = record(process, HookEvent.PRE_TOOL_USE)
    async with process:
        event_id = await run_task(process, rec)
    [data] = rec.of(HookEvent.PRE_TOOL_USE)
    assert set(data) == TOOL_KEYS
    assert data["tool_name"] == "lookup_order"
    assert data["arguments"] == {"order_id": 42, "verbose": False}  # parsed, defaults filled
    assert data["call_id"] == "call_1"
    assert data["event_id"] == event_id
    assert data["server"] is None
    assert ran == [{"order_id": 42, "verbose": False}]


async def test_post_tool_use_carries_the_result_the_model_sees_and_the_duration() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 7})], ran)
    rec = record(process, HookEvent.POST_TOOL_USE)
    async with process:
        event_id = await run_task(process, rec)
    [data] = rec.of(HookEvent.POST_TOOL_USE)
    assert set(data) == TOOL_KEYS | {"result", "error", "duration_ms", "run_usage", "process_usage"}
    assert data["arguments"] == {"order_id": 7, "verbose": False}
    assert json.loads(data["result"]) == {"order": 7, "status": "shipped"}
    assert data["result"] == tool_results(model)[0]
    assert data["error"] is None
    assert data["event_id"] == event_id
    assert isinstance(data["duration_ms"], float)
    assert data["duration_ms"] >= 0


async def test_post_tool_use_fires_after_a_tool_that_raised_with_the_error_text() -> None:
    async def charge_card(amount: int) -> str:
        """Charge the card."""
        raise RuntimeError("card declined")

    process, model = shop([("charge_card", {"amount": 5})], [], tools=[charge_card])
    rec = await run_one(process, HookEvent.POST_TOOL_USE)
    [data] = rec.of(HookEvent.POST_TOOL_USE)
    assert data["error"] == "RuntimeError: card declined"
    assert data["result"] == "error: RuntimeError: card declined"
    assert tool_results(model) == ["error: RuntimeError: card declined"]


async def test_a_tool_from_an_mcp_server_fires_both_events_with_its_server_name() -> None:
    crm = replace(search, name="mcp__crm__search", server="crm")  # as an MCP server names it
    process, _ = shop([("mcp__crm__search", {"query": "acme"})], [], tools=[crm])
    rec = await run_one(process, HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE)
    [pre] = rec.of(HookEvent.PRE_TOOL_USE)
    [post] = rec.of(HookEvent.POST_TOOL_USE)
    assert pre["server"] == post["server"] == "crm"
    assert post["result"] == "found acme"


async def test_hooks_see_declared_secrets_redacted_and_the_tool_gets_the_real_value() -> None:
    ran: list[str] = []

    async def login(password: str) -> str:
        """Log in."""
        ran.append(password)
        return "logged in"

    process, _ = shop(
        [("login", {"password": "hunter2-secret"})],
        [],
        tools=[login],
        secrets={"DB_PASSWORD": "hunter2-secret"},
    )
    rec = await run_one(process, HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE)
    assert "hunter2-secret" not in json.dumps(rec.of(HookEvent.PRE_TOOL_USE))
    assert "hunter2-secret" not in json.dumps(rec.of(HookEvent.POST_TOOL_USE))
    assert ran == ["hunter2-secret"]


# -- refusing a call ---------------------------------------------------------------------------


async def test_a_blocking_pre_tool_use_hook_stops_the_call_and_the_model_is_told_why() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 1})], ran)

    async def no_lookups(ctx: HookContext) -> None:
        raise HookBlocked("orders are frozen today")

    process.hooks.register(HookEvent.PRE_TOOL_USE, no_lookups, name="freeze")
    rec = await run_one(process, HookEvent.PERMISSION_DENIED, HookEvent.POST_TOOL_USE)
    assert ran == []
    [text] = tool_results(model)
    assert "refused" in text
    assert "orders are frozen today" in text
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["kind"] == "hook"
    assert denied["tool_name"] == "lookup_order"
    assert denied["reason"] == "orders are frozen today"
    assert denied["decided_by"] == "freeze"
    assert rec.of(HookEvent.POST_TOOL_USE) == []  # no call was made
    assert rec.outcomes() == ["success"]


async def test_a_fail_closed_pre_tool_use_hook_that_times_out_refuses_the_call() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 1})], ran)

    async def slow(ctx: HookContext) -> None:
        await asyncio.sleep(30)

    process.hooks.register_config(
        HookConfig(
            event="pre_tool_use", callback=slow, timeout=0.05, fail_closed=True, name="policy"
        )
    )
    rec = await run_one(process, HookEvent.PERMISSION_DENIED)
    assert ran == []
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["decided_by"] == "policy"
    assert "fail_closed" in denied["reason"]
    assert "refused" in tool_results(model)[0]


async def test_a_failing_pre_tool_use_hook_that_is_not_fail_closed_lets_the_call_run() -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": 1})], ran)

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("audit log is down")

    process.hooks.register(HookEvent.PRE_TOOL_USE, broken)
    await run_one(process)
    assert ran == [{"order_id": 1, "verbose": False}]


async def test_a_command_hook_refuses_a_tool_call(make_script: Any) -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 9})], ran)
    script = make_script(
        """
        import json, sys
        envelope = json.load(sys.stdin)
        order = envelope["data"]["arguments"]["order_id"]
        print(json.dumps({"block": True, "reason": f"order {order} is under audit"}))
        """
    )
    process.hooks.register_config(HookConfig(event="pre_tool_use", command=[script]))
    rec = await run_one(process, HookEvent.PERMISSION_DENIED)
    assert ran == []
    assert "order 9 is under audit" in tool_results(model)[0]
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["decided_by"] == script


async def test_pre_tool_use_runs_before_approval_so_a_refused_call_never_reaches_the_reviewer() -> (
    None
):
    asked: list[ApprovalRequest] = []
    ran: list[dict[str, Any]] = []
    process = approved_shop(ran, asked)

    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("no")

    process.hooks.register(HookEvent.PRE_TOOL_USE, refuse)
    await run_one(process)
    assert asked == []
    assert ran == []


# -- rewriting ---------------------------------------------------------------------------------


async def test_a_pre_tool_use_hook_rewrites_the_arguments_and_approval_sees_the_rewrite() -> None:
    asked: list[ApprovalRequest] = []
    ran: list[dict[str, Any]] = []
    process = approved_shop(ran, asked)

    async def quieter(ctx: HookContext) -> None:
        ctx.set("arguments", {**ctx.get("arguments"), "order_id": 2})

    process.hooks.register(HookEvent.PRE_TOOL_USE, quieter)
    rec = await run_one(process, HookEvent.POST_TOOL_USE)
    assert ran == [{"order_id": 2, "verbose": False}]
    assert asked[0].arguments == {"order_id": 2, "verbose": False}
    assert rec.of(HookEvent.POST_TOOL_USE)[0]["arguments"] == {"order_id": 2, "verbose": False}


async def test_an_invalid_rewrite_is_that_hooks_error_and_the_original_arguments_stand() -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran)

    async def breaks_it(ctx: HookContext) -> None:
        ctx.set("arguments", {"order_id": "not a number", "colour": "red"})

    process.hooks.register(HookEvent.PRE_TOOL_USE, breaks_it, name="breaks-it")
    await run_one(process)
    assert ran == [{"order_id": 5, "verbose": False}]
    [run] = process.history.runs(event="pre_tool_use", hook="breaks-it")
    assert run.outcome == "failed"
    assert run.error is not None
    assert "schema refuses" in run.error
    assert "original arguments stand" in run.error


async def test_an_invalid_rewrite_by_a_command_hook_is_its_error_and_changes_nothing(
    make_script: Any,
) -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran)
    script = make_script(
        """
        import json, sys
        data = json.load(sys.stdin)["data"]
        data["arguments"] = {"order_id": [1, 2]}
        print(json.dumps({"data": data}))
        """
    )
    process.hooks.register_config(HookConfig(event="pre_tool_use", command=[script], name="cmd"))
    await run_one(process)
    assert ran == [{"order_id": 5, "verbose": False}]
    [run] = process.history.runs(event="pre_tool_use", hook="cmd")
    assert run.outcome == "failed"
    assert "schema refuses" in (run.error or "")


async def test_a_valid_rewrite_by_a_command_hook_is_what_runs(make_script: Any) -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": 5})], ran)
    script = make_script(
        """
        import json, sys
        data = json.load(sys.stdin)["data"]
        data["arguments"]["verbose"] = True
        print(json.dumps({"data": data}))
        """
    )
    process.hooks.register_config(HookConfig(event="pre_tool_use", command=[script]))
    await run_one(process)
    assert ran == [{"order_id": 5, "verbose": True}]


async def test_a_post_tool_use_hook_replaces_what_the_model_sees() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 3})], ran)

    async def redact(ctx: HookContext) -> None:
        ctx.set("result", ctx.get("result").replace("shipped", "[status hidden]"))

    process.hooks.register(HookEvent.POST_TOOL_USE, redact)
    await run_one(process)
    [text] = tool_results(model)
    assert "shipped" not in text
    assert "[status hidden]" in text


async def test_a_hook_asking_for_approval_without_a_handler_denies_the_call() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 3})], ran)

    async def ask(ctx: HookContext) -> None:
        ctx.set("require_approval", True)

    process.hooks.register(HookEvent.PRE_TOOL_USE, ask)
    rec = await run_one(process, HookEvent.PERMISSION_DENIED, HookEvent.PERMISSION_REQUEST)
    assert ran == []
    assert rec.of(HookEvent.PERMISSION_REQUEST)[0]["tool_name"] == "lookup_order"
    [denied] = rec.of(HookEvent.PERMISSION_DENIED)
    assert denied["kind"] == "approval"
    assert denied["reason"] == "no approval handler configured"
    assert "refused" in tool_results(model)[0]


# -- matchers ----------------------------------------------------------------------------------


async def test_a_command_hook_is_never_spawned_for_a_tool_its_matcher_does_not_match(
    make_script: Any, tmp_path: Path
) -> None:
    async def deploy(target: str) -> str:
        """Deploy."""
        return f"deployed {target}"

    ran: list[dict[str, Any]] = []
    process, _ = shop(
        [("lookup_order", {"order_id": 1}), ("deploy", {"target": "prod"})],
        ran,
        tools=[lookup_tool(ran), deploy],
    )
    spawned = tmp_path / "spawned.txt"
    script = make_script(
        f"""
        import json, sys
        tool = json.load(sys.stdin)["data"]["tool_name"]
        with open({str(spawned)!r}, "a") as f:
            f.write(tool + "\\n")
        """
    )
    process.hooks.register_config(
        HookConfig(event="pre_tool_use", command=[script], matcher={"tool_name": "dep*"})
    )
    await run_one(process)
    assert spawned.read_text().splitlines() == ["deploy"]


async def test_a_matcher_on_server_runs_a_hook_only_for_that_servers_tools() -> None:
    async def search(query: str) -> str:
        return "ok"

    crm = Tool(name="mcp__crm__search", fn=search, server="crm")
    ran: list[dict[str, Any]] = []
    process, _ = shop(
        [("mcp__crm__search", {"query": "x"}), ("lookup_order", {"order_id": 1})],
        ran,
        tools=[crm, lookup_tool(ran)],
    )
    seen: list[str] = []

    async def crm_only(ctx: HookContext) -> None:
        seen.append(ctx.get("tool_name"))

    process.hooks.register(HookEvent.PRE_TOOL_USE, crm_only, matcher={"server": "crm"})
    await run_one(process)
    assert seen == ["mcp__crm__search"]


# -- everywhere --------------------------------------------------------------------------------


async def test_open_mode_spawn_process_goes_through_pre_tool_use() -> None:
    process, _ = shop(
        [("spawn_process", {"name": "helper", "instructions": "Help."})],
        [],
        tools=[],
        execution_mode="open",
        open_mode=OpenModeConfig(allow_spawn=True),
    )

    async def no_spawns(ctx: HookContext) -> None:
        raise HookBlocked("no helpers today")

    process.hooks.register(
        HookEvent.PRE_TOOL_USE, no_spawns, matcher={"tool_name": "spawn_process"}
    )
    rec = await run_one(process, HookEvent.SUBAGENT_START, HookEvent.PERMISSION_DENIED)
    assert process.children == {}
    assert rec.of(HookEvent.SUBAGENT_START) == []
    assert rec.of(HookEvent.PERMISSION_DENIED)[0]["tool_name"] == "spawn_process"


async def test_a_spawned_childs_tool_calls_fire_the_parents_pre_tool_use_hooks() -> None:
    ran: list[dict[str, Any]] = []
    model = ScriptedModel(
        reply="Done.",
        tool_calls=[("spawn_process", {"name": "helper", "instructions": "Look orders up."})],
    )
    parent = AgentProcess(
        "lead",
        ProcessConfig(
            model=model,
            tools=[lookup_tool(ran)],
            execution_mode="open",
            open_mode=OpenModeConfig(allow_spawn=True),
        ),
    )
    seen: list[tuple[str, str]] = []

    async def audit(ctx: HookContext) -> None:
        seen.append((ctx.metadata["process_name"], ctx.get("tool_name")))

    parent.hooks.register(HookEvent.PRE_TOOL_USE, audit)
    rec = record(parent)
    async with parent:
        await run_task(parent, rec)
        child = parent.children["helper"]
        model.tool_calls.append(("lookup_order", {"order_id": 4}))
        await run_task(child, record(child))
    assert seen == [("lead", "spawn_process"), ("helper", "lookup_order")]
    assert ran == [{"order_id": 4, "verbose": False}]


async def test_additional_context_from_a_pre_tool_use_hook_follows_the_result() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop([("lookup_order", {"order_id": 3})], ran)

    async def note(ctx: HookContext) -> None:
        ctx.set("additional_context", "Orders ship on weekdays only.")

    process.hooks.register(HookEvent.PRE_TOOL_USE, note)
    await run_one(process)
    [text] = tool_results(model)
    assert text.startswith('{"order": 3')
    assert text.endswith("\n\nOrders ship on weekdays only.")


async def test_a_rewrite_written_around_the_context_is_still_checked() -> None:
    """``ctx.data["arguments"] = ...`` skips ctx.set: the loop checks the arguments again, and
    an invalid rewrite leaves the original ones."""
    ran: list[dict[str, Any]] = []
    process, _ = shop([("lookup_order", {"order_id": 6})], ran)

    async def around(ctx: HookContext) -> None:
        ctx.data["arguments"] = {"order_id": "six"}

    process.hooks.register(HookEvent.PRE_TOOL_USE, around)
    await run_one(process)
    assert ran == [{"order_id": 6, "verbose": False}]


def mcp_search_tool(ran: list[dict[str, Any]]) -> Tool:
    async def search(**arguments: Any) -> str:
        ran.append(arguments)
        return "found"

    return Tool(
        name="mcp__crm__search",
        fn=search,
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "sort": {"enum": ["asc", "desc"]},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        server="crm",
    )


async def test_a_rewrite_of_an_mcp_tools_arguments_is_checked_against_its_json_schema() -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("mcp__crm__search", {"query": "acme"})], [], tools=[mcp_search_tool(ran)])

    async def breaks_it(ctx: HookContext) -> None:
        ctx.set("arguments", {"limit": "ten", "colour": "red"})

    process.hooks.register(HookEvent.PRE_TOOL_USE, breaks_it, name="breaks-it")
    await run_one(process)
    assert ran == [{"query": "acme"}]
    [run] = process.history.runs(event="pre_tool_use", hook="breaks-it")
    assert run.error is not None
    for problem in (
        "arguments.query: missing required argument",
        "arguments.limit: expected integer, got str",
        "arguments.colour: not an argument of this tool",
    ):
        assert problem in run.error


async def test_a_valid_rewrite_of_an_mcp_tools_arguments_is_what_runs() -> None:
    ran: list[dict[str, Any]] = []
    process, _ = shop([("mcp__crm__search", {"query": "acme"})], [], tools=[mcp_search_tool(ran)])

    async def narrows(ctx: HookContext) -> None:
        ctx.set("arguments", {"query": "acme", "limit": 5, "sort": "desc"})

    process.hooks.register(HookEvent.PRE_TOOL_USE, narrows)
    await run_one(process)
    assert ran == [{"query": "acme", "limit": 5, "sort": "desc"}]


async def test_a_refusal_quoting_a_declared_secret_reaches_the_model_redacted() -> None:
    ran: list[dict[str, Any]] = []
    process, model = shop(
        [("lookup_order", {"order_id": 1})], ran, secrets={"CRM_TOKEN": "tok-9f8e7d6c5b"}
    )

    async def leaky(ctx: HookContext) -> None:
        raise HookBlocked("token tok-9f8e7d6c5b is expired")

    process.hooks.register(HookEvent.PRE_TOOL_USE, leaky)
    rec = await run_one(process, HookEvent.PERMISSION_DENIED)
    assert "tok-9f8e7d6c5b" not in tool_results(model)[0]
    assert "tok-9f8e7d6c5b" not in rec.of(HookEvent.PERMISSION_DENIED)[0]["reason"]


async def test_an_invalid_rewrite_is_in_the_dispatch_results_errors_and_the_data_stands() -> None:
    from tether import HookManager
    from tether.agent import InvalidArgumentsRewrite, ToolCallContext, as_tool

    tool = as_tool(lookup_tool([]))
    hooks = HookManager()

    async def breaks_it(ctx: HookContext) -> None:
        ctx.set("arguments", {"order_id": "x"})

    async def later(ctx: HookContext) -> None:
        ctx.set("seen_by_later", dict(ctx.get("arguments")))

    hooks.register(HookEvent.PRE_TOOL_USE, breaks_it, priority=1)
    hooks.register(HookEvent.PRE_TOOL_USE, later)
    data = {
        "tool_name": "lookup_order",
        "arguments": {"order_id": 1, "verbose": False},
        "call_id": "c1",
        "event_id": None,
        "server": None,
    }
    result = await hooks.dispatch(
        HookEvent.PRE_TOOL_USE,
        data,
        context_factory=lambda *a: ToolCallContext(*a, tool=tool),
    )
    [(_, error)] = result.errors
    assert isinstance(error, InvalidArgumentsRewrite)
    assert result.fired == 1  # the hook that erred is not counted
    assert result.data["arguments"] == {"order_id": 1, "verbose": False}
    assert result.data["seen_by_later"] == {"order_id": 1, "verbose": False}
