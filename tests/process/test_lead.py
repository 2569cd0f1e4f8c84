"""Regression tests for fixes made in the lead engineer's review."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import ValidationError

from tether import AgentProcess, HookConfig, HookContext, ProcessConfig, TriggerEvent
from tether.models import ScriptedModel
from tether.store import Journal


async def test_a_stop_whose_caller_gives_up_still_finishes_the_stop() -> None:
    """Regression: a cancelled stop() left the process 'stopping' for ever."""
    ended = asyncio.Event()

    async def slow_goodbye(ctx: HookContext) -> None:
        await asyncio.sleep(0.2)
        ended.set()

    process = AgentProcess(
        "p",
        ProcessConfig(
            model=ScriptedModel(), hooks=[HookConfig(event="session_end", callback=slow_goodbye)]
        ),
    )
    await process.start()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(process.stop(), 0.05)
    await asyncio.wait_for(process.stop(), 5)
    assert ended.is_set()
    assert process.state == "stopped"


async def test_a_journaled_event_that_was_running_with_no_retries_left_is_dead_lettered(
    tmp_path: Path,
) -> None:
    """Regression: an event that killed its host was requeued at every recovery, for ever."""
    db = tmp_path / "journal.db"
    event = TriggerEvent("helpdesk", "webhook", {"ticket": "crashes the host"})
    journal = Journal(db, "p")
    journal.queued(event.to_dict(), 0)
    journal.running(event.event_id, 3)  # attempt 3 was in flight when the host died
    seen: list[object] = []

    async def started(ctx: HookContext) -> None:
        seen.append(ctx.data["recovered"])

    process = AgentProcess(
        "p",
        ProcessConfig(
            model=ScriptedModel(),
            journal_path=str(db),
            max_retries=2,
            hooks=[HookConfig(event="session_start", callback=started)],
        ),
    )
    await process.start()
    await process.stop()
    assert process.invocation_count == 0
    [dead] = process.dead_letters
    assert (dead["event"].event_id, dead["reason"], dead["attempts"]) == (
        event.event_id,
        "process failed",
        3,
    )
    assert seen == [{"events": 0, "event_ids": [], "dead_letters": 1}]


async def test_a_journaled_event_that_was_running_with_retries_left_runs_again(
    tmp_path: Path,
) -> None:
    db = tmp_path / "journal.db"
    event = TriggerEvent("helpdesk", "webhook", {"ticket": "interrupted"})
    journal = Journal(db, "p")
    journal.queued(event.to_dict(), 0)
    journal.running(event.event_id, 1)
    process = AgentProcess(
        "p", ProcessConfig(model=ScriptedModel(), journal_path=str(db), max_retries=2)
    )
    await process.start()
    for _ in range(200):
        if process.invocation_count:
            break
        await asyncio.sleep(0.01)
    await process.stop()
    assert process.invocation_count == 1
    assert process.dead_letters == []


def test_a_command_string_with_an_unmatched_quote_is_rejected_at_declaration() -> None:
    with pytest.raises(ValidationError, match="cannot be split"):
        HookConfig(event="task_completed", command="notify.sh 'unterminated")


def test_a_trigger_without_an_id_cannot_share_its_default_id_with_another() -> None:
    with pytest.raises(ValidationError, match="event-0"):
        ProcessConfig(
            triggers=[
                {"type": "event", "event_type": "a"},
                {"type": "event", "event_type": "b", "id": "event-0"},
            ]
        )


async def test_a_secret_given_as_an_environment_reference_is_redacted_by_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_TEST_CRM_TOKEN", "crm-canary-9931")
    prompts: list[str] = []

    async def sees(ctx: HookContext) -> None:
        prompts.append(ctx.data["prompt"])

    process = AgentProcess(
        "p",
        ProcessConfig(
            model=ScriptedModel(),
            secrets={"CRM": "${TETHER_TEST_CRM_TOKEN}"},
            hooks=[HookConfig(event="user_prompt_submit", callback=sees)],
        ),
    )
    await process.start()
    await process.inject(TriggerEvent("t", "manual", {"note": "token crm-canary-9931"}))
    for _ in range(200):
        if prompts:
            break
        await asyncio.sleep(0.01)
    await process.stop()
    assert "crm-canary-9931" not in prompts[0]
    assert "[REDACTED:CRM]" in prompts[0]


def test_a_secret_reference_to_a_missing_variable_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"secrets\.CRM: environment variable 'TETHER_NOT_SET_X'"):
        AgentProcess("p", ProcessConfig(model="scripted", secrets={"CRM": "${TETHER_NOT_SET_X}"}))


def _open(
    calls: list[tuple[str, dict[str, object]]], **open_mode: object
) -> tuple[AgentProcess, ScriptedModel]:
    model = ScriptedModel(reply="done", tool_calls=calls)
    config = ProcessConfig(model=model, execution_mode="open", open_mode=open_mode)
    return AgentProcess("opener", config), model


async def _one_run(process: AgentProcess) -> None:
    await process.start()
    await process.inject(TriggerEvent("t", "manual", {"ticket": "x"}))
    for _ in range(300):
        if process.invocation_count and not process.status()["in_flight"]:
            break
        await asyncio.sleep(0.01)
    await process.stop()


def _tool_answers(model: ScriptedModel) -> list[str]:
    return [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"]


async def test_an_agent_may_not_add_a_file_watch_trigger_by_default(tmp_path: Path) -> None:
    """Regression: an open-mode agent could watch any host path, even when deployed over HTTP."""
    watch = {"type": "file_watch", "watch_path": str(tmp_path)}
    process, model = _open([("add_trigger", {"trigger": watch})])
    await _one_run(process)
    assert process.triggers == []
    assert any("cron and event triggers only" in text for text in _tool_answers(model))


async def test_an_agent_may_not_spawn_a_process_with_a_webhook_trigger_by_default() -> None:
    hook = {"type": "webhook", "webhook_path": "/x", "webhook_port": 9999}
    call = {"name": "child", "instructions": "Listen.", "triggers": [hook]}
    process, model = _open([("spawn_process", call)])
    await _one_run(process)
    assert process.children == {}
    assert any("cron and event triggers only" in text for text in _tool_answers(model))


async def test_an_agent_may_add_a_file_watch_trigger_when_host_triggers_are_allowed(
    tmp_path: Path,
) -> None:
    watch = {"type": "file_watch", "watch_path": str(tmp_path)}
    process, _ = _open([("add_trigger", {"trigger": watch})], allow_host_triggers=True)
    await _one_run(process)
    [(_, trigger)] = process.triggers
    assert trigger.type == "file_watch"
