"""The code samples of the hooks reference page, run with only their imports changed to tether.

The model is FakeLLM (a real OpenAI-compatible server on a free port). The first sample names a
hook program (./hooks/log-task.sh) relative to the working directory: the test writes it there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from _process_support import eventually
from tether import (
    AgentProcess,
    AgentRuntime,
    HookBlocked,
    HookConfig,
    HookContext,
    HookEvent,
    HookManager,
    ProcessConfig,
    ShellHook,
    TriggerEvent,
)
from tether.testing import FakeLLM

pytestmark = pytest.mark.llm(openai_env=True, reply="Done.")


async def test_the_opening_sample_refuses_a_password_prompt_and_rewrites_the_others(
    llm: FakeLLM,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = tmp_path / "tasks.jsonl"
    (tmp_path / "hooks").mkdir()
    script = tmp_path / "hooks" / "log-task.sh"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"open({str(log)!r}, 'a').write(sys.stdin.read().replace('\\n', ' ') + '\\n')\n"
    )
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path)

    # -- the sample, as the reference writes it ---------------------------------------------
    async def no_passwords(ctx: HookContext) -> None:
        if "password" in ctx.data["prompt"].lower():
            raise HookBlocked("prompts may not ask for passwords")

    async def add_house_rules(ctx: HookContext) -> None:
        ctx.set("prompt", ctx.data["prompt"] + "\n\nAnswer in one sentence.")

    config = ProcessConfig(
        model="openai:gpt-5-mini",
        instructions="You are a helpful assistant.",
        hooks=[
            HookConfig(event="user_prompt_submit", callback=no_passwords, priority=10),
            HookConfig(event="user_prompt_submit", callback=add_house_rules),
            HookConfig(event="task_completed", command=["./hooks/log-task.sh"], timeout=5),
        ],
    )

    process = AgentProcess("helper", config)

    @process.hooks.on(HookEvent.SESSION_START)
    async def started(ctx: HookContext) -> None:
        print("session started", ctx.data)  # {'restart': False, 'recovered': None}

    await process.start()
    # -- end of the sample -------------------------------------------------------------------
    try:
        assert capsys.readouterr().out == "session started {'restart': False, 'recovered': None}\n"
        await process.inject(TriggerEvent("helpdesk", "webhook", {"ticket": "Reset my Password"}))
        await process.inject(TriggerEvent("helpdesk", "webhook", {"ticket": "Login is down"}))
        await eventually(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    finally:
        await process.stop()
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == (
        "blocked by hook",
        "prompts may not ask for passwords",
    )
    assert len(llm.prompts) == 1
    assert llm.prompts[0].startswith("ticket: Login is down")
    assert llm.prompts[0].endswith("\n\nAnswer in one sentence.")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events] == ["task_completed", "task_completed"]
    assert [e["data"]["outcome"] for e in events] == ["blocked", "success"]


async def test_the_shared_manager_sample_announces_every_process_the_runtime_starts(
    llm: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = HookManager()

    @shared.on(HookEvent.SESSION_START)
    async def announce(ctx: HookContext) -> None:
        print(f"{ctx.process_id} is running")

    runtime = AgentRuntime(hooks=shared)  # fires for every process the runtime starts
    await runtime.add_process("triage", ProcessConfig(model="openai:gpt-5-mini"))
    await runtime.add_process("billing", ProcessConfig(model="openai:gpt-5-mini"))
    await runtime.start_all()
    await runtime.stop_all()
    assert capsys.readouterr().out.splitlines() == ["triage is running", "billing is running"]


async def test_the_managing_registrations_sample_returns_what_its_comments_say() -> None:
    async def notify(ctx: HookContext) -> None:
        pass

    process = AgentProcess("helper", ProcessConfig(model="openai:gpt-5-mini"))
    hook_id = process.hooks.register(HookEvent.SESSION_END, notify, tag="ops")
    assert await process.hooks.remove(hook_id) is True  # True if it was registered
    assert await process.hooks.remove(hook_id) is False
    process.hooks.register(HookEvent.SESSION_END, notify, tag="ops")
    process.hooks.register(HookEvent.TASK_COMPLETED, notify, tag="ops")
    assert await process.hooks.remove_by_tag("ops") == 2  # number removed
    kept = process.hooks.register(HookEvent.SESSION_END, notify)
    assert process.hooks.registered(HookEvent.SESSION_END) == [kept]  # hook IDs
    assert process.status()["hook_count"] == 1
    process.hooks.clear()  # everything (or clear(event))
    assert process.status()["hook_count"] == 0


async def test_the_shell_hook_sample_gates_the_prompt_with_the_program(
    llm: FakeLLM, tmp_path: Path
) -> None:
    script = tmp_path / "audit_prompt.sh"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "event = json.load(sys.stdin)\n"
        "if 'refund' in event['data']['prompt']:\n"
        "    print(json.dumps({'block': True, 'reason': 'refunds need a human'}))\n"
    )
    script.chmod(0o755)
    process = AgentProcess("support-bot", ProcessConfig(model="openai:gpt-5-mini"))

    hook = ShellHook(command=[str(script)], timeout=5.0)
    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback, fail_closed=True)

    async with process:
        await process.inject(TriggerEvent("helpdesk", "webhook", {"ticket": "A refund please"}))
        await process.inject(TriggerEvent("helpdesk", "webhook", {"ticket": "Login is down"}))
        await eventually(lambda: process.status()["invocation_count"] == 1)
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == ("blocked by hook", "refunds need a human")
    assert len(llm.prompts) == 1
