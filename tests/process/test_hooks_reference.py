"""The two hooks reference pages: their code samples, run with only their imports changed to
tether, and each statement of theirs that no other test pinned.

The model is FakeLLM (a real OpenAI-compatible server on a free port); command hooks are real
programs run by this interpreter. The first sample names a hook program (./hooks/log-task.sh)
relative to the working directory: the test writes it there.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from _process_support import eventually
from tether import AgentProcess, AgentRuntime, ProcessConfig, TriggerEvent
from tether.agent import ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager, ShellHook
from tether.manifest import load_manifest, manifest_to_process_config
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


# -- statements of the reference no other test pinned, one test each ---------------------------


def ticket(text: str) -> TriggerEvent:
    return TriggerEvent(trigger_id="helpdesk", trigger_type="webhook", payload={"ticket": text})


def env_dumper(folder: Path, out: Path, *names: str) -> str:
    """A hook program that appends the named variables of its environment to ``out``."""
    script = folder / "dump_env.py"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\nsys.stdin.read()\n"
        f"with open({str(out)!r}, 'a') as f:\n"
        f"    f.write(json.dumps({{n: os.environ.get(n) for n in {list(names)!r}}}) + '\\n')\n"
    )
    script.chmod(0o755)
    return str(script)


async def test_a_task_completed_hook_that_hands_its_work_to_a_task_does_not_hold_the_worker(
    llm: FakeLLM,
) -> None:
    """001: "@process.hooks.on(HookEvent.TASK_COMPLETED) async def notify(ctx):
    asyncio.create_task(post_to_channel(ctx.data))  # don't hold the worker"."""
    channel_up = asyncio.Event()
    posted: list[str] = []

    async def post_to_channel(data: dict[str, Any]) -> None:
        await channel_up.wait()
        posted.append(data["outcome"])

    process = AgentProcess("triage", ProcessConfig(model="openai:gpt-5-mini"))
    tasks: set[asyncio.Task[None]] = set()  # the sample's task, kept only so it is not collected

    # -- the sample, as the reference writes it (plus keeping the task) -----------------------
    @process.hooks.on(HookEvent.TASK_COMPLETED)
    async def notify(ctx: HookContext) -> None:
        tasks.add(asyncio.create_task(post_to_channel(ctx.data)))  # don't hold the worker

    # -------------------------------------------------------------------------------------------
    async with process:
        await process.inject(ticket("Login page is down"))
        await process.inject(ticket("Printer jammed"))
        # One worker, and the channel is still down: both runs finish all the same.
        await eventually(lambda: process.status()["invocation_count"] == 2, what="both runs")
        assert posted == []
        channel_up.set()
        await eventually(lambda: len(posted) == 2, what="both posts")
    assert posted == ["success", "success"]
    assert len(llm.prompts) == 2


async def test_a_slow_task_completed_hook_makes_the_next_event_wait(llm: FakeLLM) -> None:
    """000: "USER_PROMPT_SUBMIT, TASK_CREATED and TASK_COMPLETED run for every event, and the
    event waits for them." With one worker, the next event waits for the slow hook."""
    hook_running = asyncio.Event()
    release = asyncio.Event()

    async def slow_notify(ctx: HookContext) -> None:
        hook_running.set()
        await release.wait()

    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            hooks=[HookConfig(event="task_completed", callback=slow_notify, once=True)],
        ),
    )
    async with process:
        await process.inject(ticket("Login page is down"))
        await process.inject(ticket("Printer jammed"))
        await asyncio.wait_for(hook_running.wait(), timeout=10)
        await asyncio.sleep(0.2)  # time enough for a free worker to send the second prompt
        assert len(llm.prompts) == 1
        release.set()
        await eventually(lambda: process.status()["invocation_count"] == 2, what="the second run")
    assert len(llm.prompts) == 2


async def test_a_permission_request_hook_gets_the_reviewers_redacted_copy_of_the_arguments(
    llm: FakeLLM,
) -> None:
    """000: PERMISSION_REQUEST's ctx.data has "arguments (the reviewer's redacted copy)"; the
    tool itself still gets the original value."""
    asked: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(dict(request.arguments))
        return ApprovalDecision(approved=True, reviewer_id="alice")

    async def audit(ctx: HookContext) -> None:
        seen.append(dict(ctx.data["arguments"]))

    llm.tool_calls = [("update_state", {"key": "crm", "value": "tok-8c1f-secret"})]
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            secrets={"CRM_TOKEN": "tok-8c1f-secret"},
            context=ContextConfig(state_tool=True),
            approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
            hooks=[HookConfig(event="permission_request", callback=audit)],
        ),
    )
    async with process:
        await process.inject(ticket("Store the CRM token"))
        await eventually(lambda: process.status()["invocation_count"] == 1, what="the run")
    assert seen == [{"key": "crm", "value": "[REDACTED:CRM_TOKEN]"}]
    assert asked == seen
    assert process.context.state_snapshot() == {"crm": "tok-8c1f-secret"}


async def test_a_manifest_hooks_env_passthrough_variable_is_read_when_the_hook_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """000: "env_passthrough hands the variable to the program when the hook runs instead" (of
    resolving it when the manifest is loaded)."""
    out = tmp_path / "env.jsonl"
    program = env_dumper(tmp_path, out, "SLACK_TOKEN")
    manifest = tmp_path / "triage.agent"
    manifest.write_text(
        textwrap.dedent(
            f"""\
            version: "1.0"
            name: triage
            model: scripted
            hooks:
              - event: task_completed
                command: [{json.dumps(program)}]
                env_passthrough: [SLACK_TOKEN]
            """
        )
    )
    monkeypatch.delenv("SLACK_TOKEN", raising=False)
    config = manifest_to_process_config(load_manifest(manifest))  # not set at load time
    monkeypatch.setenv("SLACK_TOKEN", "xoxb-set-after-loading")
    process = AgentProcess("triage", config)
    async with process:
        await process.inject(ticket("Login page is down"))
        await eventually(lambda: out.exists() and out.read_text().strip(), what="the hook")
    assert json.loads(out.read_text()) == {"SLACK_TOKEN": "xoxb-set-after-loading"}


async def test_a_hook_config_env_reference_is_resolved_each_time_the_hook_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """000: HookConfig.env: "${VAR} references are resolved from the host environment each
    time the hook runs"."""
    out = tmp_path / "env.jsonl"
    hooks = HookManager()
    hooks.register_config(
        HookConfig(
            event="task_completed",
            command=[env_dumper(tmp_path, out, "QUEUE")],
            env={"QUEUE": "${TICKET_QUEUE}"},
        )
    )
    for queue in ("support-eu", "support-us"):
        monkeypatch.setenv("TICKET_QUEUE", queue)
        result = await hooks.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})
        assert result.errors == []
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"QUEUE": "support-eu"},
        {"QUEUE": "support-us"},
    ]


async def test_the_opening_sample_of_the_guide_dead_letters_a_password_ticket(
    llm: FakeLLM,
) -> None:
    """001's opening sample: a fail_closed user_prompt_submit callback that refuses tickets
    mentioning a password, in a ProcessConfig that names no model."""

    # -- the sample, as the reference writes it ---------------------------------------------
    async def no_passwords(ctx):  # type: ignore[no-untyped-def]
        if "password" in ctx.data["prompt"].lower():
            raise HookBlocked("password tickets go to the identity team")

    config = ProcessConfig(
        instructions="You triage support tickets.",
        hooks=[HookConfig(event="user_prompt_submit", callback=no_passwords, fail_closed=True)],
    )
    # -------------------------------------------------------------------------------------------
    process = AgentProcess("triage", config)
    async with process:
        await process.inject(ticket("Please reset my password"))
        await process.inject(ticket("Login page is down"))
        await eventually(lambda: process.status()["invocation_count"] == 1, what="the run")
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == (
        "blocked by hook",
        "password tickets go to the identity team",
    )
    assert [prompt.splitlines()[0] for prompt in llm.prompts] == ["ticket: Login page is down"]


def test_the_manifest_sample_loads_each_entry_as_a_command_hook_config(tmp_path: Path) -> None:
    """000 "In a manifest": "Each entry is a HookConfig with a command." """
    manifest = tmp_path / "helper.agent"
    manifest.write_text(
        textwrap.dedent(
            """\
            version: "1.0"
            name: helper
            model: scripted
            hooks:
              - event: user_prompt_submit
                command: ["./hooks/audit.sh"]
                timeout: 5
                fail_closed: true
              - event: task_completed
                command: "./hooks/notify.sh --channel ops"
                env_passthrough: [SLACK_TOKEN]
            """
        )
    )
    audit, notify = manifest_to_process_config(load_manifest(manifest)).hooks
    for hook in (audit, notify):
        assert isinstance(hook, HookConfig)
        assert hook.callback is None
    assert (audit.event, audit.command, audit.timeout, audit.fail_closed) == (
        "user_prompt_submit",
        ["./hooks/audit.sh"],
        5,
        True,
    )
    assert (notify.event, notify.command, notify.env_passthrough) == (
        "task_completed",
        "./hooks/notify.sh --channel ops",
        ["SLACK_TOKEN"],
    )
    assert (notify.timeout, notify.fail_closed, notify.env) == (None, False, {})


async def test_a_manifest_loaded_on_the_host_is_not_checked_for_commands_the_api_refuses(
    tmp_path: Path,
) -> None:
    """000: the API refuses a deployed command hook with 403 COMMANDS_NOT_ALLOWED, "and
    processes you load from manifests on the host are not checked"."""
    import httpx

    from tether import AgentRuntime
    from tether.api import OrchestrationAPI

    out = tmp_path / "env.jsonl"
    program = env_dumper(tmp_path, out, "TETHER_HOOK_EVENT")
    hooks = [{"event": "task_completed", "command": [program]}]
    manifest = tmp_path / "triage.agent"
    manifest.write_text(
        f'version: "1.0"\nname: triage\nmodel: scripted\nhooks: {json.dumps(hooks)}\n'
    )
    async with AgentRuntime() as runtime:
        api = OrchestrationAPI(runtime, port=0, webhooks=False)
        await api.start()
        try:
            async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
                config = {"model": "scripted", "hooks": hooks}
                refused = await client.post("/processes", json={"name": "api", "config": config})
            process = await runtime.add_manifest(manifest)
            await process.inject(ticket("Login page is down"))
            await eventually(lambda: out.exists() and out.read_text().strip(), what="the hook")
        finally:
            await api.stop()
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "COMMANDS_NOT_ALLOWED")
    assert json.loads(out.read_text()) == {"TETHER_HOOK_EVENT": "task_completed"}


async def test_session_start_fires_at_every_start_of_a_process_stopped_before(
    llm: FakeLLM,
) -> None:
    """000: SESSION_START fires when "the process entered RUNNING (every start(), including
    automatic restarts)"; a start after a stop is no restart."""
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(ctx: HookContext) -> None:
        seen.append((ctx.event.value, dict(ctx.data)))

    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            hooks=[
                HookConfig(event="session_start", callback=record),
                HookConfig(event="session_end", callback=record),
            ],
        ),
    )
    for _ in range(2):
        await process.start()
        await process.stop()
    start = ("session_start", {"restart": False, "recovered": None})
    end = ("session_end", {"reason": "stop", "invocation_count": 0})
    assert [(e, {k: v for k, v in d.items() if k != "process_usage"}) for e, d in seen] == [
        start,
        end,
        start,
        end,
    ]


async def test_a_command_hook_answering_the_redacted_prompt_unchanged_does_not_replace_it(
    llm: FakeLLM,
) -> None:
    """000: "The hook sees the prompt with secrets redacted; only a prompt that a hook actually
    changed replaces the original." A program that writes its data back as it got it (redacted)
    changed nothing: the model gets the original prompt, secret and all."""
    echo = [
        sys.executable,
        "-c",
        "import json, sys; print(json.dumps({'data': json.load(sys.stdin)['data']}))",
    ]
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            secrets={"CRM_TOKEN": "tok-8c1f-secret"},
            hooks=[HookConfig(event="user_prompt_submit", command=echo)],
        ),
    )
    async with process:
        await process.inject(ticket("Log in with tok-8c1f-secret"))
        await eventually(lambda: process.status()["invocation_count"] == 1, what="the run")
    [prompt] = llm.prompts
    assert prompt.startswith("ticket: Log in with tok-8c1f-secret\n")


async def refuse(ctx: HookContext) -> None:
    raise HookBlocked("refused by policy")


async def test_a_session_start_block_does_not_keep_the_process_from_running(
    llm: FakeLLM,
) -> None:
    """000: SESSION_START is not blockable: "a block of any other event is logged as a warning
    and ignored". The process runs and takes events."""
    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            hooks=[HookConfig(event="session_start", callback=refuse)],
        ),
    )
    async with process:
        assert process.state.value == "running"
        await process.inject(ticket("Login page is down"))
        await eventually(lambda: process.status()["invocation_count"] == 1, what="the run")
    assert process.dead_letters == []


async def test_a_pre_compact_block_does_not_keep_the_buffer_from_being_compacted(
    llm: FakeLLM,
) -> None:
    """000: PRE_COMPACT is not blockable: the oldest messages are dropped all the same, and
    POST_COMPACT reports it."""
    post: list[dict[str, Any]] = []

    async def after(ctx: HookContext) -> None:
        post.append(dict(ctx.data))

    process = AgentProcess(
        "triage",
        ProcessConfig(
            model="openai:gpt-5-mini",
            context=ContextConfig(conversation_max_messages=3),
            hooks=[
                HookConfig(event="pre_compact", callback=refuse),
                HookConfig(event="post_compact", callback=after),
            ],
        ),
    )
    async with process:
        for text in ("Login page is down", "Printer jammed"):
            await process.inject(ticket(text))
        await eventually(lambda: post, what="the compaction")
    assert post == [{"buffer_size": 3, "dropped": 1}]
    assert len(process.context.conversation) == 3
