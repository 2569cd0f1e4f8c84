"""MCP servers over stdio: a real server (the SDK's MCPServer, FastMCP in mcp 1.x) run by a real
AgentProcess, its tools called by a ScriptedModel through the agent loop."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from _mcp_support import pids, stdio_entry
from _process_support import Recorder, alive, eventually
from tether import AgentProcess, ProcessConfig, TriggerEvent, load_manifest
from tether.agent import BudgetConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookConfig, HookContext, HookEvent
from tether.manifest import manifest_to_process_config
from tether.models import ScriptedModel

pytestmark = pytest.mark.slow

#: Seconds a test waits for a server to (re)connect: a cold Python start of the SDK is slow on a
#: busy machine.
CONNECT = 60.0


def make(*servers: dict[str, Any], **config: Any) -> tuple[AgentProcess, ScriptedModel, Recorder]:
    model = ScriptedModel(reply="done")
    config.setdefault("stop_timeout", 2.0)
    process = AgentProcess("desk", ProcessConfig(model=model, mcp_servers=list(servers), **config))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.CONFIG_CHANGE)
    return process, model, rec


async def run_calls(
    process: AgentProcess, model: ScriptedModel, rec: Recorder, *calls: tuple[str, dict[str, Any]]
) -> list[str]:
    """One run making ``calls``; the tool results the model read, in order."""
    model.tool_calls = list(calls)
    done = len(rec.outcomes())
    asked = len(model.requests)
    await process.inject(TriggerEvent("desk", "webhook", {"ticket": "t"}))
    await eventually(lambda: len(rec.outcomes()) > done, timeout=CONNECT, what="the run")
    return [r["messages"][-1]["content"] for r in model.requests[asked + 1 :]]


def offered(model: ScriptedModel) -> dict[str, dict[str, Any]]:
    """The tools offered to the model in its last request, by name."""
    return {t["function"]["name"]: t["function"] for t in model.requests[-1].get("tools") or []}


async def test_a_stdio_servers_tools_are_offered_as_prefixed_tools_with_its_schemas() -> None:
    process, model, rec = make(stdio_entry("crm"))
    async with process:
        status = process.status()["mcp_servers"]["crm"]
        assert status["state"] == "connected"
        assert status["tools"] == 7
        await run_calls(process, model, rec)
        tools = offered(model)
        add = tools["mcp__crm__add"]
        # The server's own JSON input schema, as it listed it.
        assert add["parameters"]["properties"]["a"]["type"] == "integer"
        assert add["parameters"]["required"] == ["a", "b"]
        assert add["description"] == "Add two integers."
        assert set(tools) == {
            "mcp__crm__add",
            "mcp__crm__fail",
            "mcp__crm__environment",
            "mcp__crm__order",
            "mcp__crm__sleep",
            "mcp__crm__grow",
            "mcp__crm__meta",
        }
        # Each is a Tool of the agent loop naming its server (what tool hooks match on).
        assert process.agent_loop is not None
        assert process.agent_loop.tools["mcp__crm__add"].server == "crm"


async def test_a_call_is_answered_an_is_error_result_is_its_error_and_structured_content_json() -> (
    None
):
    process, model, rec = make(stdio_entry("crm"))
    async with process:
        add, fail, order = await run_calls(
            process,
            model,
            rec,
            ("mcp__crm__add", {"a": 2, "b": 3}),
            ("mcp__crm__fail", {"reason": "no stock"}),
            ("mcp__crm__order", {"order_id": "A-17"}),
        )
    assert add == "5"
    assert fail == "error: McpToolError: Error executing tool fail: refused: no stock"
    assert '"status": "shipped"' in order
    assert rec.outcomes() == ["success"]


async def test_an_mcp_call_carries_its_idempotency_key_in_meta() -> None:
    process, model, rec = make(stdio_entry("crm"))
    keys = Recorder().attach(process.hooks, HookEvent.PRE_TOOL_USE)
    async with process:
        (seen,) = await run_calls(
            process, model, rec, ("mcp__crm__meta", {"key": "tether/idempotency_key"})
        )
    (pre,) = keys.of(HookEvent.PRE_TOOL_USE)
    assert seen == pre["idempotency_key"]
    assert len(seen) == 32


async def test_approval_and_budget_apply_to_mcp_tools_as_to_any_tool(tmp_path: Path) -> None:
    mark = tmp_path / "called"
    asked: list[str] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.tool_name)
        return ApprovalDecision(False, reason="not on a Sunday")

    approval = ApprovalPolicy(tools=["mcp__crm__sleep"], handler=reviewer)
    budget = BudgetConfig(max_tool_calls_per_run=2)  # (a refused call counts)
    process, model, rec = make(stdio_entry("crm"), approval=approval, budget=budget)
    async with process:
        refused, added, over = await run_calls(
            process,
            model,
            rec,
            ("mcp__crm__sleep", {"seconds": 0, "mark": str(mark)}),
            ("mcp__crm__add", {"a": 1, "b": 1}),
            ("mcp__crm__add", {"a": 2, "b": 2}),
        )
    assert asked == ["mcp__crm__sleep"]
    assert refused == "refused: not on a Sunday"
    assert not mark.exists()  # refused: the server never heard of it
    assert added == "2"
    assert over.startswith("refused: ")
    assert "max_tool_calls_per_run" in over


async def test_tool_hooks_fire_for_mcp_tools_with_the_server_name_and_a_rewrite_is_checked(
    tmp_path: Path, make_script: Any
) -> None:
    seen: list[tuple[str, Any, Any]] = []

    async def rewrite(ctx: HookContext) -> None:
        seen.append(("pre", ctx.data["tool_name"], ctx.data["server"]))
        ctx.set("arguments", {"a": 40, "b": 2} if ctx.data["arguments"]["a"] == 1 else {"a": "x"})

    async def audit(ctx: HookContext) -> None:
        seen.append(("post", ctx.data["result"], ctx.data["error"]))

    refuse = make_script(
        "import sys\nprint('no fails on this desk', file=sys.stderr)\nsys.exit(2)\n"
    )
    hooks = [
        HookConfig(event="pre_tool_use", callback=rewrite, matcher={"server": "crm"}),
        HookConfig(event="pre_tool_use", callback=rewrite, matcher={"server": "other"}),
        HookConfig(
            event="pre_tool_use",
            command=[refuse],
            protocol="claude-code",
            matcher={"tool_name": "mcp__crm__fail"},
        ),
        HookConfig(event="post_tool_use", callback=audit, matcher={"server": "crm"}),
    ]
    process, model, rec = make(stdio_entry("crm"), hooks=hooks)
    async with process:
        rewritten, kept, refused = await run_calls(
            process,
            model,
            rec,
            ("mcp__crm__add", {"a": 1, "b": 1}),
            ("mcp__crm__add", {"a": 2, "b": 2}),
            ("mcp__crm__fail", {"reason": "r"}),
        )
    assert rewritten == "42"  # the hook's arguments, valid for the server's schema
    assert kept == "4"  # {"a": "x"} fails the schema: the original arguments stand
    assert refused.startswith("refused: ")
    assert "no fails on this desk" in refused
    assert seen[:2] == [("pre", "mcp__crm__add", "crm"), ("post", "42", None)]
    assert ("post", "4", None) in seen


async def test_the_program_gets_a_minimal_environment_plus_its_entrys_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOST_ONLY_SECRET", "host-secret-value")
    monkeypatch.setenv("ACME_KEY", "resolved-from-host")
    entry = stdio_entry("crm", env={"GIVEN": "given-value", "REF": "${ACME_KEY}"})
    process, model, rec = make(entry)
    async with process:
        results = await run_calls(
            process,
            model,
            rec,
            ("mcp__crm__environment", {"name": "HOST_ONLY_SECRET"}),
            ("mcp__crm__environment", {"name": "GIVEN"}),
            ("mcp__crm__environment", {"name": "REF"}),
            ("mcp__crm__environment", {"name": "PATH"}),
        )
        # A value resolved from the host is a secret of the process from then on.
        assert process.redactor.text("key resolved-from-host") == "key [REDACTED:mcp.crm.REF]"
    host_only, given, ref, path = results
    assert host_only == "<unset>"
    assert (given, ref) == ("given-value", "resolved-from-host")
    assert path != "<unset>"


async def test_a_server_that_hangs_is_found_out_by_a_ping_and_replaced(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process, model, rec = make(stdio_entry("crm", "--pidfile", str(pidfile)))
    async with process:
        [hung] = pids(pidfile)
        os.kill(hung, signal.SIGSTOP)  # alive, its pipes open, answering nothing
        try:
            await eventually(
                lambda: process.status()["mcp_servers"]["crm"]["connects"] == 2,
                timeout=CONNECT,
                what="the ping to fail and the server to be replaced",
            )
        finally:
            if alive(hung):
                os.kill(hung, signal.SIGCONT)
        assert not alive(hung)  # killed with its group on the way out
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 1, "b": 1})) == ["2"]


async def test_an_env_reference_to_an_unset_variable_is_that_servers_error() -> None:
    process, model, rec = make(stdio_entry("crm", env={"KEY": "${TETHER_TEST_UNSET_VAR}"}))
    async with process:
        status = process.status()["mcp_servers"]["crm"]
        assert status["state"] == "reconnecting"
        assert status["last_error"] == (
            "ValueError: mcp_servers['crm'].env.KEY: environment variable "
            "'TETHER_TEST_UNSET_VAR' is not set"
        )
        assert await run_calls(process, model, rec) == []  # the process runs on


async def test_a_call_to_a_server_lost_since_its_run_began_gets_a_clear_error_at_once(
    tmp_path: Path,
) -> None:
    pidfile, refuse = tmp_path / "pids", tmp_path / "refuse"
    entry = stdio_entry("crm", "--pidfile", str(pidfile), "--refuse-if", str(refuse))
    holder: list[AgentProcess] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        # The run holds the server's tools already; the server goes down before the call.
        (process,) = holder
        refuse.touch()
        os.kill(pids(pidfile)[0], signal.SIGKILL)
        await eventually(
            lambda: process.status()["mcp_servers"]["crm"]["state"] == "reconnecting",
            timeout=CONNECT,
            what="the loss to be seen",
        )
        return ApprovalDecision(True)

    approval = ApprovalPolicy(tools=["mcp__crm__add"], handler=reviewer)
    process, model, rec = make(entry, approval=approval)
    holder.append(process)
    async with process:
        [result] = await run_calls(process, model, rec, ("mcp__crm__add", {"a": 1, "b": 1}))
    assert result.startswith(
        "error: McpServerUnavailableError: MCP server 'crm' is not connected (reconnecting: "
    )
    assert result.endswith("'add' cannot be called until it is back")


async def test_a_server_killed_during_a_call_gives_a_clear_error_result_and_is_reconnected(
    tmp_path: Path,
) -> None:
    pidfile, mark = tmp_path / "pids", tmp_path / "called"
    process, model, rec = make(stdio_entry("crm", "--pidfile", str(pidfile)))
    async with process:
        [first] = pids(pidfile)
        model.tool_calls = [("mcp__crm__sleep", {"seconds": 60, "mark": str(mark)})]
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": "t"}))
        await eventually(mark.exists, timeout=CONNECT, what="the call to reach the server")
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: rec.outcomes() == ["success"], timeout=CONNECT, what="the run")
        error = model.requests[-1]["messages"][-1]["content"]
        assert error == (
            "error: McpServerUnavailableError: MCP server 'crm' went away during the call of "
            "'sleep'; it is being reconnected"
        )
        await eventually(
            lambda: process.status()["mcp_servers"]["crm"]["connects"] == 2,
            timeout=CONNECT,
            what="the reconnect",
        )
        assert pids(pidfile) != [first]
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 1, "b": 1})) == ["2"]


async def test_while_a_server_is_down_its_tools_are_not_offered_and_its_error_is_shown(
    tmp_path: Path,
) -> None:
    pidfile, refuse = tmp_path / "pids", tmp_path / "refuse"
    entry = stdio_entry("crm", "--pidfile", str(pidfile), "--refuse-if", str(refuse))
    process, model, rec = make(entry)
    async with process:
        [first] = pids(pidfile)
        refuse.touch()  # it will not come back until this file is gone
        os.kill(first, signal.SIGKILL)
        await eventually(
            lambda: "refusing" in (process.status()["mcp_servers"]["crm"]["last_error"] or ""),
            timeout=CONNECT,
            what="a failed reconnect",
        )
        down = process.status()["mcp_servers"]["crm"]
        assert down["state"] == "reconnecting"
        assert down["tools"] == 0
        assert down["last_error"] == (
            f"the server's program exited with code 3: refusing to start: {refuse} exists"
        )
        await run_calls(process, model, rec)
        assert not any(name.startswith("mcp__crm__") for name in offered(model))
        refuse.unlink()
        await eventually(
            lambda: process.status()["mcp_servers"]["crm"]["state"] == "connected",
            timeout=CONNECT,
            what="the reconnect",
        )
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 2, "b": 2})) == ["4"]


async def test_the_tools_are_read_again_when_the_server_says_its_list_changed() -> None:
    process, model, rec = make(stdio_entry("crm"))
    async with process:
        await run_calls(process, model, rec, ("mcp__crm__grow", {"name": "refund"}))
        await eventually(
            lambda: "mcp__crm__refund" in process.status()["mcp_servers"]["crm"]["tool_names"],
            what="the new tool",
        )
        assert await run_calls(process, model, rec, ("mcp__crm__refund", {})) == ["refund"]


async def test_a_call_a_server_does_not_answer_is_bounded_by_the_entrys_timeout() -> None:
    process, model, rec = make(stdio_entry("crm", timeout=0.5))
    async with process:
        [result] = await run_calls(process, model, rec, ("mcp__crm__sleep", {"seconds": 30}))
        assert result == (
            "error: McpToolError: MCP server 'crm' did not answer the call of 'sleep' within 0.5s"
        )
        # The server is still there for the next call.
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 1, "b": 2})) == ["3"]


async def test_a_call_is_bounded_by_the_process_tool_timeout_too() -> None:
    process, model, rec = make(stdio_entry("crm"), tool_timeout=0.5)
    async with process:
        [result] = await run_calls(process, model, rec, ("mcp__crm__sleep", {"seconds": 30}))
    assert "0.5s" in result
    assert result.startswith("error:")


async def test_stop_closes_the_session_and_leaves_no_process_of_the_server(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process, _, _ = make(stdio_entry("crm", "--pidfile", str(pidfile), "--grandchild"))
    await process.start()
    server, grandchild = pids(pidfile)
    assert alive(server)
    assert alive(grandchild)
    await process.stop()
    # Its program and what it left in its process group are gone when stop() returns.
    assert not alive(server)
    await eventually(lambda: not alive(grandchild), what="the grandchild to be reaped")
    assert process.status()["mcp_servers"]["crm"]["state"] == "disconnected"


async def test_servers_are_added_and_removed_at_run_time(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process, model, rec = make()
    async with process:
        assert await process.add_mcp_server(stdio_entry("crm", "--pidfile", str(pidfile)))
        # Connected when add_mcp_server() returns.
        assert process.status()["mcp_servers"]["crm"]["state"] == "connected"
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 4, "b": 5})) == ["9"]
        [server] = pids(pidfile)
        assert await process.remove_mcp_server("crm")
        assert not alive(server)
        assert process.status()["mcp_servers"] == {}
        assert await run_calls(process, model, rec) == []
        assert offered(model) == {}  # its tools went with it
    changes = [(d["change"], d["action"]) for d in rec.of(HookEvent.CONFIG_CHANGE)]
    assert changes == [("mcp_server", "added"), ("mcp_server", "removed")]


async def test_a_rollback_of_an_added_server_disconnects_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process, _, _ = make()
    async with process:
        await process.add_mcp_server(stdio_entry("crm", "--pidfile", str(pidfile)))
        [server] = pids(pidfile)
        await process.rollback()
        assert not alive(server)
        assert process.status()["mcp_servers"] == {}
    assert process.config.mcp_servers == []


async def test_a_server_that_cannot_start_is_retried_while_the_process_runs() -> None:
    process, model, rec = make({"name": "gone", "command": "no-such-mcp-server --flag"})
    async with process:
        status = process.status()["mcp_servers"]["gone"]
        assert status["state"] == "reconnecting"
        assert "'no-such-mcp-server' was not found on PATH" in status["last_error"]
        assert await run_calls(process, model, rec) == []
        assert rec.outcomes() == ["success"]


async def test_a_restart_reconnects_and_offers_the_tools_again(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    process, model, rec = make(stdio_entry("crm", "--pidfile", str(pidfile)))
    async with process:
        [before] = pids(pidfile)
        await process.restart()
        [after] = pids(pidfile)
        assert after != before
        assert not alive(before)
        assert await run_calls(process, model, rec, ("mcp__crm__add", {"a": 1, "b": 2})) == ["3"]


async def test_a_manifests_mcp_servers_connect_when_the_process_starts(tmp_path: Path) -> None:
    script = str(Path(__file__).with_name("mcp_fixture_server.py"))
    path = tmp_path / "desk.agent"
    path.write_text(
        "name: desk\n"
        "model: scripted\n"
        "mcp_servers:\n"
        f"  - name: crm\n    command: [{sys.executable!r}, {script!r}, stdio]\n"
    )
    config = manifest_to_process_config(load_manifest(path, environ={}))
    async with AgentProcess("desk", config) as process:
        assert process.status()["mcp_servers"]["crm"]["state"] == "connected"


async def test_importing_tether_or_making_a_process_does_not_import_the_sdk() -> None:
    code = (
        "import sys, tether\n"
        "from tether import AgentProcess, ProcessConfig\n"
        "AgentProcess('a', ProcessConfig(mcp_servers=[{'name': 'x', 'command': 'x'}]))\n"
        "loaded = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'anyio'))]\n"
        "assert not loaded, loaded\n"
    )
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", code)
    assert await child.wait() == 0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "crm"}, r"mcp_servers\[0\]: an MCP server with transport 'http' needs 'url'"),
        (
            {"name": "crm", "transport": "stdio"},
            r"mcp_servers\[0\]: a stdio MCP server needs 'command'",
        ),
        ({"command": "x"}, r"mcp_servers\[0\]\.name: Field required"),
        ({"name": "crm", "command": "x", "bogus": 1}, r"mcp_servers\[0\]\.bogus: Extra inputs"),
    ],
)
def test_a_bad_entry_is_refused_when_the_process_is_made_naming_it(
    entry: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^process 'desk': " + message):
        AgentProcess("desk", ProcessConfig(mcp_servers=[entry]))


def test_two_entries_of_one_name_are_refused_and_no_secret_is_echoed() -> None:
    first = {"name": "crm", "url": "https://u:pw-9c1d@a.example/mcp"}
    second = {"name": "crm", "command": "x", "env": {"TOKEN": "tok-0ff1ce"}}
    with pytest.raises(ValueError, match=r"mcp_servers\[1\]\.name: .*'crm' is already used") as err:
        AgentProcess("desk", ProcessConfig(mcp_servers=[first, second]))
    assert "pw-9c1d" not in str(err.value)
    assert "tok-0ff1ce" not in str(err.value)
