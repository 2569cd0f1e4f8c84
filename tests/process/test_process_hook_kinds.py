"""The three hook kinds in a running process: a persistent command (a real co-process), a URL
hook (a real policy service on 127.0.0.1) and a prompt hook (the process's own model)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from _executor_support import PolicyServer
from _process_support import Recorder, eventually, proc_state, ticket
from conftest import ScriptFactory
from tether import AgentProcess, AgentRuntime, HookConfig, HookEvent, ProcessConfig
from tether.models import ScriptedModel

CANARY = "hdr-canary-5be0c2d9"
UPS = HookEvent.USER_PROMPT_SUBMIT

#: A hookserver program: refuses password tickets, stamps every other prompt with its pid.
STAMPER = """
import os
from tether.hookserver import Block, serve

@serve
def handle(event):
    prompt = event["data"]["prompt"]
    if "password" in prompt.lower():
        raise Block("password resets go to the identity team")
    return {"data": {**event["data"], "prompt": prompt + f" [pid {os.getpid()}]"}}
"""


def file_bytes(tmp_path: Path) -> bytes:
    """Every byte SQLite wrote: the database, its WAL and shared-memory files."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tether.db*")))


@pytest.fixture
async def service() -> AsyncIterator[PolicyServer]:
    async with PolicyServer() as server:
        yield server


async def run_tickets(process: AgentProcess, *texts: str) -> None:
    """Start ``process``, let it finish a task for each ticket text, and stop it."""
    recorder = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        for text in texts:
            await process.inject(ticket(text))
        await eventually(lambda: len(recorder.outcomes()) >= len(texts), what="the tasks to finish")
    finally:
        await process.stop()


async def test_a_persistent_hook_serves_every_event_of_a_process_and_stops_with_it(
    make_script: ScriptFactory,
) -> None:
    model = ScriptedModel()
    hook = HookConfig(event="user_prompt_submit", command=[make_script(STAMPER)], persistent=True)
    process = AgentProcess("stamped", ProcessConfig(model=model, hooks=[hook]))
    await run_tickets(process, "Login page is down", "Reset my password", "VPN is slow")

    stamps = {prompt.rsplit("[pid ", 1)[1] for prompt in model.prompts}
    assert len(model.prompts) == 2
    assert len(stamps) == 1  # one program answered both
    [dead] = process.dead_letters
    assert dead["error"] == "password resets go to the identity team"
    pid = int(stamps.pop().rstrip("]"))
    await eventually(lambda: proc_state(pid) in (None, "Z"), what="the hook program to stop")
    [info] = [i for i in process.hooks.describe() if i.event == "user_prompt_submit"]
    assert info.executor_kind == "persistent"


async def test_a_url_hook_blocks_a_process_event_with_the_services_reason(
    service: PolicyServer,
) -> None:
    hook = HookConfig(event="user_prompt_submit", url=f"{service.url}/block")
    process = AgentProcess("policed", ProcessConfig(model=ScriptedModel(), hooks=[hook]))
    await run_tickets(process, "Login page is down")

    [dead] = process.dead_letters
    assert dead["reason"] == "blocked by hook"
    assert dead["error"] == "refused by the policy service"
    (got,) = service.requests
    assert "Login page is down" in got.json()["data"]["prompt"]
    assert got.json()["metadata"]["process_name"] == "policed"


async def test_a_header_value_a_service_echoes_back_is_redacted_everywhere(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    service: PolicyServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    hook = HookConfig(
        event="user_prompt_submit",
        url=f"{service.url}/echo-error",
        headers={"Authorization": SecretStr(f"Bearer {CANARY}")},
    )
    config = ProcessConfig(
        model=ScriptedModel(), journal_path=str(tmp_path / "tether.db"), hooks=[hook]
    )
    process = await runtime.add_process("vault", config)
    r = await client.post("/processes/vault/inject", json={"payload": {"ticket": "hello"}})
    assert r.status_code == 202, r.text

    await eventually(lambda: len(process.history.runs()) >= 1, what="the hook run")
    answer = await client.get("/processes/vault/hooks/runs")
    [run] = answer.json()["runs"]
    assert run["outcome"] == "failed"
    assert "[REDACTED:header Authorization]" in run["error"]
    assert service.requests[0].headers["authorization"] == f"Bearer {CANARY}"  # it was sent
    for record in (*process.history.runs(), *process.hook_runs()):
        assert CANARY not in repr(record)
    assert CANARY not in answer.text
    assert CANARY not in caplog.text
    assert CANARY.encode() not in file_bytes(tmp_path)


async def test_a_prompt_hook_asks_the_processs_own_model_by_default() -> None:
    model = ScriptedModel(
        tool_calls=[("decide", {"decision": "deny", "reason": "it asks for a password"})]
    )
    hook = HookConfig(event="user_prompt_submit", prompt="Deny tickets about passwords.")
    process = AgentProcess("judged", ProcessConfig(model=model, hooks=[hook]))
    await run_tickets(process, "Reset my password")

    [dead] = process.dead_letters
    assert dead["error"] == "it asks for a password"
    (request,) = model.requests  # the hook's call; the run never happened
    assert request["messages"][0]["content"].endswith("Deny tickets about passwords.")
    assert [t["function"]["name"] for t in request["tools"]] == ["decide"]


async def test_a_prompt_hook_naming_a_model_asks_that_one() -> None:
    hook = HookConfig(event="user_prompt_submit", prompt="Allow everything.", model="scripted")
    own = ScriptedModel()
    process = AgentProcess("judged", ProcessConfig(model=own, hooks=[hook]))
    await run_tickets(process, "hello")

    # A scripted model answers its reply text, which is no decision: the hook's error, and
    # the run went ahead (the hook is not fail_closed) with the process's own model.
    assert len(own.requests) == 1
    [run] = [r for r in process.history.runs() if r.event == "user_prompt_submit"]
    assert run.outcome == "failed"
    assert "not a decision" in (run.error or "")


#: A hookserver program that prints its TOKEN to stderr and crashes on its first event.
LEAKS_AND_CRASHES = """
import os, sys
from tether.hookserver import serve

@serve
def handle(event):
    print("token " + os.environ["TOKEN"] + " was rejected", file=sys.stderr, flush=True)
    os._exit(4)
"""


async def test_a_persistent_hooks_env_secret_it_prints_as_it_crashes_is_redacted(
    make_script: ScriptFactory,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("HOOK_TOKEN", CANARY)
    hook = HookConfig(
        event="user_prompt_submit",
        command=[make_script(LEAKS_AND_CRASHES)],
        persistent=True,
        env={"TOKEN": "${HOOK_TOKEN}"},
    )
    process = AgentProcess("leaky", ProcessConfig(model=ScriptedModel(), hooks=[hook]))
    await run_tickets(process, "hello")

    [run] = [r for r in process.history.runs() if r.event == "user_prompt_submit"]
    assert run.outcome == "failed"
    assert "exited 4: token [REDACTED:TOKEN] was rejected" in (run.error or "")
    assert CANARY not in repr(run)
    assert CANARY not in caplog.text
