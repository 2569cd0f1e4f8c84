"""A run cut off by a SIGKILL resumes from its last finished step in the next process over the
journal: finished tool calls are not run again, a call in flight is not run again unasked."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

from _process_support import Recorder, eventually, killed_host
from tether import AgentProcess, ApprovalDecision, ApprovalPolicy, HookEvent, ProcessConfig
from tether.agent import tool
from tether.agent._steps import current_tool_call
from tether.models import ScriptedModel

#: A host whose run makes the tool calls of its plan (``append(n)``, each appending a line to
#: the ledger, argv[2]); then, by mode (argv[3]):
#: ``after``  the model's next call prints "ready" and never answers;
#: ``during`` the last call appends its line, prints "ready" and never returns.
#: Its state tool counts calls in the state dict; the run's conversation is the process's.
CHILD = textwrap.dedent(
    """
    import asyncio, sqlite3, sys

    from tether import AgentProcess, ProcessConfig, TriggerEvent
    from tether.agent import tool
    from tether.agent._steps import current_tool_call
    from tether.models import ModelReply, ToolCall

    journal, ledger, mode, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    idempotent, steps = sys.argv[5] == "idempotent", int(sys.argv[6])
    process = None


    async def ready() -> None:
        # Once the steps wanted are journaled done (read here: the journal is this runtime's
        # alone while it runs), tell the test it may kill.
        while True:
            with sqlite3.connect(journal) as db:
                try:
                    done = db.execute("SELECT count(*) FROM steps WHERE state='done'")
                    if done.fetchone()[0] >= steps:
                        break
                except sqlite3.OperationalError:  # no such table yet
                    pass
            await asyncio.sleep(0.01)
        print("ready", flush=True)


    class Plan:
        name = "plan"

        def __init__(self) -> None:
            self.calls = 0

        async def complete(self, messages, tools=None):
            self.calls += 1
            if self.calls > calls:
                await ready()
                await asyncio.Event().wait()
            args = '{"n": %d}' % self.calls
            return ModelReply(None, [ToolCall(f"call_{self.calls}", "append", args)])

        async def aclose(self) -> None:
            pass


    @tool(idempotent=idempotent)
    async def append(n: int) -> str:
        "Append a line to the ledger."
        key = current_tool_call().idempotency_key
        with open(ledger, "a") as f:
            f.write(f"{n} {key}\\n")
        process.context.update_state("appended", n)
        if mode == "during" and n == calls:
            await ready()
            await asyncio.Event().wait()
        return f"appended {n}"


    async def main() -> None:
        global process
        config = ProcessConfig(model=Plan(), journal_path=journal, tools=[append])
        process = AgentProcess("ledger", config)
        await process.start()
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": "three appends"}))
        await asyncio.Event().wait()


    asyncio.run(main())
    """
)


def lines(ledger: Path) -> list[tuple[int, str]]:
    text = ledger.read_text() if ledger.exists() else ""
    return [(int(n), key) for n, key in (line.split() for line in text.splitlines())]


async def crash(
    tmp_path: Path, mode: str, calls: int, *, idempotent: bool = False, steps: int = 0
) -> tuple[Path, Path]:
    """Run CHILD until "ready" and until ``steps`` steps are journaled done, then SIGKILL it."""
    journal, ledger = tmp_path / "tether.db", tmp_path / "ledger.txt"
    args = (
        str(journal),
        str(ledger),
        mode,
        str(calls),
        "idempotent" if idempotent else "-",
        str(steps),
    )
    async with killed_host(tmp_path, CHILD, *args) as (_, line):
        assert line == b"ready\n"  # with ``steps`` steps journaled done
    return journal, ledger


def reopened(
    journal: Path, ledger: Path, model: ScriptedModel, *, idempotent: bool = False, **config: Any
) -> AgentProcess:
    """The next process over ``journal``: its append tool writes the same ledger."""
    process: AgentProcess | None = None

    async def append(n: int) -> str:
        """Append a line to the ledger."""
        info = current_tool_call()
        assert info is not None
        with ledger.open("a") as f:
            f.write(f"{n} {info.idempotency_key}\n")
        assert process is not None
        process.context.update_state("appended", n)
        return f"appended {n}"

    made = tool(append, idempotent=idempotent)
    process = AgentProcess(
        "ledger", ProcessConfig(model=model, journal_path=str(journal), tools=[made], **config)
    )
    return process


async def test_a_run_killed_after_two_tool_calls_resumes_and_runs_only_the_third(
    tmp_path: Path,
) -> None:
    journal, ledger = await crash(tmp_path, "after", 2, steps=4)
    model = ScriptedModel(reply="All three appended.", tool_calls=[("append", {"n": 3})])
    process = reopened(journal, ledger, model)
    rec = Recorder().attach(
        process.hooks, HookEvent.SESSION_START, HookEvent.PRE_TOOL_USE, HookEvent.TASK_COMPLETED
    )
    async with process:
        await eventually(lambda: rec.outcomes() == ["success"], what="the resumed run")
    assert [n for n, _ in lines(ledger)] == [1, 2, 3]  # each once, in all
    assert [d["arguments"] for d in rec.of(HookEvent.PRE_TOOL_USE)] == [{"n": 3}]  # no replay
    assert len(model.requests) == 2  # the turns after the journaled two, no more
    replayed = [m for m in model.requests[0]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in replayed] == ["appended 1", "appended 2"]
    (recovered,) = [d["recovered"] for d in rec.of(HookEvent.SESSION_START)]
    assert recovered["events"] == 1
    assert [r["from_step"] for r in recovered["resumed"]] == ["turn 2 tool call 1"]
    assert recovered["resumed"][0]["event_id"] == recovered["event_ids"][0]


async def test_the_idempotency_key_of_a_call_is_stable_across_a_crash(tmp_path: Path) -> None:
    journal, ledger = await crash(tmp_path, "during", 2, idempotent=True, steps=3)
    model = ScriptedModel(reply="Done.")
    process = reopened(journal, ledger, model, idempotent=True)
    async with process:
        await eventually(lambda: len(lines(ledger)) == 3, what="the call run again")
    (one, k1), (two, k2), (again, k3) = lines(ledger)
    assert (one, two, again) == (1, 2, 2)  # idempotent: run again after the crash
    assert k2 == k3
    assert k1 != k2
    assert len(k1) == 32


async def test_a_call_in_flight_at_the_crash_is_not_run_again_without_a_handler(
    tmp_path: Path,
) -> None:
    journal, ledger = await crash(tmp_path, "during", 2, steps=3)
    model = ScriptedModel(reply="Understood.")
    process = reopened(journal, ledger, model)
    rec = Recorder().attach(process.hooks, HookEvent.PERMISSION_REQUEST, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: rec.outcomes() == ["success"], what="the resumed run")
    assert [n for n, _ in lines(ledger)] == [1, 2]  # the second is not run again
    (request,) = rec.of(HookEvent.PERMISSION_REQUEST)
    assert request["reason"] == "outcome unknown after a crash"
    assert request["tool_name"] == "append"
    (told,) = [m for m in model.requests[0]["messages"] if m["role"] == "tool"][-1:]
    assert "the previous attempt may have taken effect" in told["content"]


async def test_a_call_in_flight_at_the_crash_runs_again_when_the_handler_approves(
    tmp_path: Path,
) -> None:
    journal, ledger = await crash(tmp_path, "during", 2, steps=3)
    asked: list[str | None] = []

    async def handler(request: Any) -> ApprovalDecision:
        asked.append(request.reason)
        return ApprovalDecision(True, "ops")

    process = reopened(
        journal,
        ledger,
        ScriptedModel(reply="Done."),
        approval=ApprovalPolicy(handler=handler),
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await eventually(lambda: rec.outcomes() == ["success"], what="the resumed run")
    assert [n for n, _ in lines(ledger)] == [1, 2, 2]
    assert asked == ["outcome unknown after a crash"]


async def test_the_conversation_and_the_state_carry_over_a_crash(tmp_path: Path) -> None:
    journal, ledger = await crash(tmp_path, "after", 2, steps=4)
    process = reopened(journal, ledger, ScriptedModel(reply="Finished."))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        assert process.context.state == {"appended": 2}  # its tools wrote it before the kill
        await eventually(lambda: rec.outcomes() == ["success"], what="the resumed run")
    again = reopened(journal, ledger, ScriptedModel())
    async with again:
        await asyncio.sleep(0)
        contents = [m["content"] for m in again.context.conversation.messages]
    assert contents[-1] == "Finished."
    assert json.loads(json.dumps(again.context.state)) == {"appended": 2}
