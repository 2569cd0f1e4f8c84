"""Durable approvals over real HTTP: a pending approval is journaled, listed by status() and the
API, answered by an operator, before or after a SIGKILL of the host, and the run goes on."""

from __future__ import annotations

import asyncio
import sqlite3
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _process_support import Recorder, eventually, killed_host
from tether import (
    AgentProcess,
    AgentRuntime,
    ApprovalDecision,
    ApprovalPolicy,
    HookEvent,
    OrchestrationAPI,
    ProcessConfig,
    TriggerEvent,
)
from tether.agent import tool
from tether.models import ScriptedModel

#: A host whose run asks to append to the ledger (argv[2]): the call needs an operator's
#: approval; it prints "ready" once the request is pending, and waits.
CHILD = textwrap.dedent(
    """
    import asyncio, sqlite3, sys

    from tether import AgentProcess, ApprovalPolicy, ProcessConfig, TriggerEvent
    from tether.agent import tool
    from tether.models import ScriptedModel

    journal, ledger = sys.argv[1], sys.argv[2]


    @tool
    async def append(n: int) -> str:
        "Append a line to the ledger."
        with open(ledger, "a") as f:
            f.write(f"{n}\\n")
        return f"appended {n}"


    async def main() -> None:
        config = ProcessConfig(
            model=ScriptedModel(reply="Done.", tool_calls=[("append", {"n": 1})]),
            journal_path=journal,
            tools=[append],
            approval=ApprovalPolicy(tools=["append"], operator=True),
        )
        process = AgentProcess("ledger", config)
        await process.start()
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": "append one"}))
        # Pending, and journaled (read here: the journal is this runtime's alone while it runs).
        while True:
            with sqlite3.connect(journal) as db:
                try:
                    if db.execute("SELECT COUNT(*) FROM approvals").fetchone()[0] == 1:
                        break
                except sqlite3.OperationalError:  # no such table yet
                    pass
            await asyncio.sleep(0.005)
        assert process.pending_approvals
        print("ready", flush=True)
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


@pytest.fixture
async def client(runtime: AgentRuntime) -> AsyncIterator[httpx.AsyncClient]:
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            yield client
    finally:
        await api.stop()


def journaled_approvals(journal: Path) -> int:
    with sqlite3.connect(journal) as db:
        return int(db.execute("SELECT COUNT(*) FROM approvals").fetchone()[0])


def ledger_tool(ledger: Path) -> Any:
    async def append(n: int) -> str:
        """Append a line to the ledger."""
        with ledger.open("a") as f:
            f.write(f"{n}\n")
        return f"appended {n}"

    return tool(append)


async def test_an_approval_pending_at_a_kill_is_answered_over_the_api_after_the_restart(
    tmp_path: Path, runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    journal, ledger = tmp_path / "tether.db", tmp_path / "ledger.txt"
    async with killed_host(tmp_path, CHILD, str(journal), str(ledger)) as (_, line):
        assert line == b"ready\n"  # the request journaled
    config = ProcessConfig(
        model=ScriptedModel(reply="Done.", tool_calls=[("append", {"n": 1})]),
        journal_path=str(journal),
        tools=[ledger_tool(ledger)],
        approval=ApprovalPolicy(tools=["append"], operator=True),
    )
    process = await runtime.add_process("ledger", config)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    listed = (await client.get("/processes/ledger/approvals")).json()["approvals"]
    (asked,) = listed  # loaded from the journal at the start
    assert (asked["tool_name"], asked["arguments"]) == ("append", {"n": 1})
    assert process.status()["awaiting_approval"] == listed
    answered = await client.post(
        f"/processes/ledger/approvals/{asked['request_id']}",
        json={"approved": True, "reviewer": "ops"},
    )
    assert answered.status_code == 200
    await eventually(lambda: rec.outcomes() == ["success"], what="the run going on")
    assert ledger.read_text() == "1\n"  # run once, after the approval
    assert process.pending_approvals == []
    await eventually(lambda: journaled_approvals(journal) == 0, what="the approval forgotten")


async def test_an_operator_denial_refuses_the_call_and_the_model_reads_the_reason(
    runtime: AgentRuntime, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    model = ScriptedModel(reply="Understood.", tool_calls=[("append", {"n": 1})])
    config = ProcessConfig(
        model=model,
        tools=[ledger_tool(ledger)],
        approval=ApprovalPolicy(tools=["append"], operator=True),
    )
    process = await runtime.add_process("ledger", config)
    await process.inject(TriggerEvent("desk", "webhook", {"ticket": "append one"}))
    await eventually(lambda: process.pending_approvals, what="the request")
    (asked,) = (await client.get("/processes/ledger/approvals")).json()["approvals"]
    denied = await client.post(
        f"/processes/ledger/approvals/{asked['request_id']}",
        json={"approved": False, "reason": "not today"},
    )
    assert denied.status_code == 200
    await eventually(lambda: len(model.requests) == 2, what="the model told")
    assert model.requests[1]["messages"][-1]["content"] == "refused: not today"
    assert not ledger.exists()


async def test_an_unknown_request_id_answers_404(
    runtime: AgentRuntime, client: httpx.AsyncClient
) -> None:
    await runtime.add_process("ledger", ProcessConfig(model=ScriptedModel()))
    answered = await client.post("/processes/ledger/approvals/nope", json={"approved": True})
    assert answered.status_code == 404
    assert answered.json()["error"]["code"] == "APPROVAL_NOT_FOUND"


async def test_the_handler_in_code_still_decides_and_a_timeout_still_ends_the_wait(
    runtime: AgentRuntime,
) -> None:
    async def slow(request: Any) -> ApprovalDecision:
        await asyncio.sleep(3600)
        raise AssertionError("never")

    async def yes(request: Any) -> ApprovalDecision:
        return ApprovalDecision(True, "bot")

    ran: list[int] = []

    async def append(n: int) -> str:
        """Append."""
        ran.append(n)
        return "ok"

    decided = ScriptedModel(reply="ok", tool_calls=[("append", {"n": 1})])
    first: AgentProcess = await runtime.add_process(
        "decided",
        ProcessConfig(
            model=decided,
            tools=[tool(append)],
            approval=ApprovalPolicy(tools=["append"], handler=yes, operator=True),
        ),
    )
    timed = ScriptedModel(reply="ok", tool_calls=[("append", {"n": 2})])
    second = await runtime.add_process(
        "timed",
        ProcessConfig(
            model=timed,
            tools=[tool(append)],
            approval=ApprovalPolicy(tools=["append"], handler=slow, operator=True, timeout=0.2),
        ),
    )
    await first.inject(TriggerEvent("desk", "webhook", {"ticket": "a"}))
    await second.inject(TriggerEvent("desk", "webhook", {"ticket": "b"}))
    await eventually(lambda: len(decided.requests) == 2 and len(timed.requests) == 2)
    assert ran == [1]
    assert "timed out" in timed.requests[1]["messages"][-1]["content"]
    assert second.pending_approvals == []
