"""The session, task and prompt events, each fired by its real cause in a running process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from _process_support import FailingModel, GatedModel, Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig
from tether.agent import BudgetConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel

TASK_KEYS = {"event_id", "trigger_id", "trigger_type"}
COMPLETED_KEYS = {
    "event_id",
    "trigger_id",
    "trigger_type",
    "outcome",
    "duration_ms",
    "error",
    "run_usage",
    "process_usage",
}


def without_usage(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "process_usage"}


def scripted_process(name: str = "triage", **config: Any) -> tuple[AgentProcess, ScriptedModel]:
    model = config.pop("model", None) or ScriptedModel()
    return AgentProcess(name, ProcessConfig(model=model, **config)), model


async def run_one(process: AgentProcess, recorder: Recorder, count: int = 1) -> None:
    await eventually(
        lambda: len(recorder.of(HookEvent.TASK_COMPLETED)) >= count, what="task_completed"
    )


async def run_crm_ticket(on_prompt: Callable[[HookContext], Awaitable[None]]) -> ScriptedModel:
    """Run "CRM rejects tok-7f3a9", the token a declared secret, with ``on_prompt`` hooked to
    user_prompt_submit; the model."""
    process, model = scripted_process(
        secrets={"crm_token": SecretStr("tok-7f3a9")},
        hooks=[HookConfig(event="user_prompt_submit", callback=on_prompt)],
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket("CRM rejects tok-7f3a9"))
        await run_one(process, rec)
    return model


# -- session_start / session_end ----------------------------------------------------------


async def test_session_start_reports_a_first_start_with_nothing_recovered() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START)
    async with process:
        assert rec.of(HookEvent.SESSION_START) == [{"restart": False, "recovered": None}]


async def test_session_start_fires_when_the_process_is_already_running() -> None:
    process, _ = scripted_process()
    states: list[str] = []

    async def look(ctx: HookContext) -> None:
        states.append(process.state.value)

    process.hooks.register(HookEvent.SESSION_START, look)
    async with process:
        pass
    assert states == ["running"]


async def test_stop_fires_session_end_with_reason_stop_and_the_invocation_count() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks)
    async with process:
        await process.inject(ticket())
        await process.inject(ticket("Printer jammed"))
        await run_one(process, rec, 2)
    [end] = rec.of(HookEvent.SESSION_END)
    assert without_usage(end) == {"reason": "stop", "invocation_count": 2}
    assert end["process_usage"]["model_calls"] == 2
    assert process.state.value == "stopped"


async def test_restart_fires_session_end_restart_then_session_start_with_restart_true() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.SESSION_END)
    async with process:
        await process.restart()
        assert process.state.value == "running"
        assert process.status()["restart_count"] == 1
    assert [(e, without_usage(d), p) for e, d, p in rec.seen] == [
        ("session_start", {"restart": False, "recovered": None}, "triage"),
        ("session_end", {"reason": "restart", "invocation_count": 0}, "triage"),
        ("session_start", {"restart": True, "recovered": None}, "triage"),
        ("session_end", {"reason": "stop", "invocation_count": 0}, "triage"),
    ]


async def test_one_event_fires_the_documented_events_in_order() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks)
    async with process:
        await process.inject(ticket())
        await run_one(process, rec)
    assert rec.events == [
        "session_start",
        "task_created",
        "user_prompt_submit",
        "pre_model_call",
        "post_model_call",
        "agent_stop",
        "task_completed",
        "session_end",
    ]


async def test_hook_context_names_the_process_and_its_uuid() -> None:
    process, _ = scripted_process()
    seen: list[HookContext] = []

    async def keep(ctx: HookContext) -> None:
        seen.append(ctx)

    process.hooks.register(HookEvent.SESSION_START, keep)
    async with process:
        pass
    assert seen[0].process_id == "triage"
    assert seen[0].metadata == {
        "process_name": "triage",
        "process_id": process.process_id,
        "model": "scripted",
    }


# -- task_created ---------------------------------------------------------------------------


async def test_task_created_carries_only_the_event_and_trigger_ids() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks, HookEvent.TASK_CREATED)
    async with process:
        event = ticket()
        await process.inject(event)
    assert rec.of(HookEvent.TASK_CREATED) == [
        {"event_id": event.event_id, "trigger_id": "helpdesk", "trigger_type": "webhook"}
    ]


async def test_a_task_created_block_dead_letters_the_event_instead_of_queueing_it() -> None:
    async def retired(ctx: HookContext) -> None:
        raise HookBlocked("legacy-cron was retired")

    process, model = scripted_process(hooks=[HookConfig(event="task_created", callback=retired)])
    rec = Recorder().attach(process.hooks, HookEvent.USER_PROMPT_SUBMIT, HookEvent.TASK_COMPLETED)
    async with process:
        event = ticket(trigger_id="legacy-cron")
        await process.inject(event)
        assert process.status()["queue_size"] == 0
    [dead] = process.dead_letters
    assert dead["event"] is event
    assert (dead["reason"], dead["error"], dead["attempts"]) == (
        "blocked by hook",
        "legacy-cron was retired",
        0,
    )
    assert rec.seen == []
    assert model.requests == []


# -- user_prompt_submit ---------------------------------------------------------------------


async def test_user_prompt_submit_carries_the_rendered_prompt_and_the_ids() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks, HookEvent.USER_PROMPT_SUBMIT, HookEvent.TASK_COMPLETED)
    async with process:
        event = ticket("Login page is down")
        await process.inject(event)
        await run_one(process, rec)
    [data] = rec.of(HookEvent.USER_PROMPT_SUBMIT)
    assert set(data) == {"prompt", *TASK_KEYS}
    assert data["event_id"] == event.event_id
    assert (data["trigger_id"], data["trigger_type"]) == ("helpdesk", "webhook")
    assert "ticket: Login page is down" in data["prompt"]
    assert event.event_id in data["prompt"]
    assert "'helpdesk'" in data["prompt"]
    assert "webhook" in data["prompt"]


async def test_a_user_prompt_submit_block_dead_letters_the_event_with_the_reason() -> None:
    async def no_passwords(ctx: HookContext) -> None:
        if "password" in ctx.data["prompt"].lower():
            raise HookBlocked("tickets about passwords go to the identity team")

    process, model = scripted_process(
        hooks=[HookConfig(event="user_prompt_submit", callback=no_passwords)]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket("Please reset my password"))
        await run_one(process, rec)
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"], dead["attempts"]) == (
        "blocked by hook",
        "tickets about passwords go to the identity team",
        1,
    )
    assert model.requests == []
    assert process.invocation_count == 0


async def test_a_blocked_prompt_is_refused_before_any_budget_is_counted() -> None:
    async def no_passwords(ctx: HookContext) -> None:
        if "password" in ctx.data["prompt"].lower():
            raise HookBlocked("no passwords")

    process, model = scripted_process(
        budget=BudgetConfig(max_runs_per_day=1),
        hooks=[HookConfig(event="user_prompt_submit", callback=no_passwords)],
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.PERMISSION_DENIED)
    async with process:
        await process.inject(ticket("Please reset my password"))
        await process.inject(ticket("Login page is down"))
        await run_one(process, rec, 2)
    # The one run the budget allows went to the second event: the block spent nothing.
    assert rec.outcomes() == ["blocked", "success"]
    assert rec.of(HookEvent.PERMISSION_DENIED) == []
    assert len(model.requests) == 1
    assert [d["reason"] for d in process.dead_letters] == ["blocked by hook"]


async def test_a_prompt_changed_by_a_hook_replaces_the_original() -> None:
    async def house_rules(ctx: HookContext) -> None:
        ctx.set("prompt", ctx.data["prompt"] + "\n\nHouse rules: answer in one sentence.")

    process, model = scripted_process(
        hooks=[HookConfig(event="user_prompt_submit", callback=house_rules)]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await run_one(process, rec)
    assert model.prompts[-1].startswith("ticket: Login page is down")
    assert model.prompts[-1].endswith("\n\nHouse rules: answer in one sentence.")


async def test_hooks_see_secrets_redacted_while_the_model_gets_the_original_prompt() -> None:
    shown: list[str] = []

    async def look(ctx: HookContext) -> None:
        shown.append(ctx.data["prompt"])
        ctx.set("prompt", ctx.data["prompt"])  # set, but not changed

    model = await run_crm_ticket(look)
    assert "tok-7f3a9" not in shown[0]
    assert "CRM rejects [REDACTED:crm_token]" in shown[0]
    assert "CRM rejects tok-7f3a9" in model.prompts[-1]


async def test_a_hook_that_rewrites_a_redacted_prompt_sends_the_rewrite() -> None:
    async def rewrite(ctx: HookContext) -> None:
        ctx.set("prompt", ctx.data["prompt"].upper())

    model = await run_crm_ticket(rewrite)
    assert "CRM REJECTS [REDACTED:CRM_TOKEN]" in model.prompts[-1]


async def test_a_dead_letter_never_shows_a_secret_value() -> None:
    async def leak(ctx: HookContext) -> None:
        raise HookBlocked("token tok-7f3a9 is not allowed")

    process, _ = scripted_process(
        secrets={"crm_token": SecretStr("tok-7f3a9")},
        hooks=[HookConfig(event="task_created", callback=leak)],
    )
    async with process:
        await process.inject(ticket())
    assert process.dead_letters[0]["error"] == "token [REDACTED:crm_token] is not allowed"


# -- task_completed -------------------------------------------------------------------------


async def test_task_completed_reports_a_success_with_its_duration() -> None:
    process, _ = scripted_process()
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        event = ticket()
        await process.inject(event)
        await run_one(process, rec)
    [data] = rec.of(HookEvent.TASK_COMPLETED)
    assert set(data) == COMPLETED_KEYS
    assert (data["event_id"], data["trigger_id"], data["trigger_type"]) == (
        event.event_id,
        "helpdesk",
        "webhook",
    )
    assert (data["outcome"], data["error"]) == ("success", None)
    assert isinstance(data["duration_ms"], float)
    assert data["duration_ms"] >= 0


async def test_task_completed_reports_retrying_then_failed_with_the_error() -> None:
    process, _ = scripted_process(
        model=FailingModel("the endpoint is down"), max_retries=1, retry_backoff=0.001
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await run_one(process, rec, 2)
    first, second = rec.of(HookEvent.TASK_COMPLETED)
    assert (first["outcome"], second["outcome"]) == ("retrying", "failed")
    assert first["event_id"] == second["event_id"]
    assert "the endpoint is down (call 1)" in first["error"]
    assert "the endpoint is down (call 2)" in second["error"]


async def test_task_completed_reports_blocked_for_a_refused_prompt() -> None:
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not today")

    process, _ = scripted_process(hooks=[HookConfig(event="user_prompt_submit", callback=refuse)])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await run_one(process, rec)
    [data] = rec.of(HookEvent.TASK_COMPLETED)
    assert (data["outcome"], data["error"]) == ("blocked", "not today")


async def test_task_completed_reports_dead_lettered_for_an_event_stop_left_in_the_queue() -> None:
    model = GatedModel()
    process, _ = scripted_process(model=model)
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    running, queued = ticket(), ticket("Printer jammed")
    await process.inject(running)
    await process.inject(queued)
    await eventually(lambda: model.active == 1, what="the first run")
    stopping = asyncio.create_task(process.stop())
    await eventually(lambda: process.state.value == "stopping", what="stop() to begin")
    model.gate.set()
    await stopping
    assert [
        (d["event_id"], d["outcome"], d["error"]) for d in rec.of(HookEvent.TASK_COMPLETED)
    ] == [
        (running.event_id, "success", None),
        (queued.event_id, "dead_lettered", "process stopped"),
    ]


# -- command hooks in a running process -----------------------------------------------------


async def test_a_command_hook_rewrites_the_prompt_the_model_receives(
    make_script: Callable[..., str],
) -> None:
    script = make_script(
        """
        import json, sys
        event = json.load(sys.stdin)
        print(json.dumps({"data": {"prompt": event["data"]["prompt"].upper()}}))
        """
    )
    process, model = scripted_process(
        hooks=[HookConfig(event="user_prompt_submit", command=[script])]
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket("login page is down"))
        await run_one(process, rec)
    assert model.prompts[0].startswith("TICKET: LOGIN PAGE IS DOWN")


async def test_a_command_hook_blocks_task_created_with_its_json_answer(
    make_script: Callable[..., str],
) -> None:
    script = make_script(
        """
        import json
        print(json.dumps({"block": True, "reason": "the helpdesk trigger is paused"}))
        """
    )
    process, model = scripted_process(hooks=[HookConfig(event="task_created", command=[script])])
    async with process:
        await process.inject(ticket())
    [dead] = process.dead_letters
    assert (dead["reason"], dead["error"]) == ("blocked by hook", "the helpdesk trigger is paused")
    assert model.requests == []


async def test_a_task_completed_command_hook_receives_the_event_as_json_on_stdin(
    make_script: Callable[..., str], tmp_path: Path
) -> None:
    out = tmp_path / "completed.json"
    script = make_script(
        f"""
        import os, sys
        with open({str(out)!r}, "w") as f:
            f.write(sys.stdin.read())
            f.write("\\n" + os.environ["TETHER_HOOK_EVENT"] + " " + os.environ["TETHER_PROCESS"])
        """
    )
    process, _ = scripted_process(hooks=[HookConfig(event="task_completed", command=[script])])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        event = ticket()
        await process.inject(event)
        await run_one(process, rec)
    body, env = out.read_text().rsplit("\n", 1)
    sent = json.loads(body)
    assert env == "task_completed triage"
    assert (sent["event"], sent["process_id"]) == ("task_completed", "triage")
    assert set(sent["data"]) == COMPLETED_KEYS
    assert (sent["data"]["event_id"], sent["data"]["outcome"]) == (event.event_id, "success")


# -- basics ---------------------------------------------------------------------------------


async def test_the_scripted_model_can_be_named_in_the_config() -> None:
    process = AgentProcess("triage", ProcessConfig(model="scripted"))
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(ticket())
        await run_one(process, rec)
    assert rec.outcomes() == ["success"]


def test_a_process_name_that_is_not_allowed_is_refused() -> None:
    with pytest.raises(ValueError, match=r"process name '\.\./etc' is not allowed"):
        AgentProcess("../etc", ProcessConfig(model="scripted"))


def test_an_unknown_model_spec_is_refused_by_the_config() -> None:
    with pytest.raises(ValueError, match="model 'gpt-5' is not supported"):
        ProcessConfig(model="gpt-5")
