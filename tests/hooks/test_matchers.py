"""Matchers: a hook runs only for events whose data matches its glob patterns.

Every matcher field is checked against the event that really carries it, in a running process;
a hook whose matcher does not match is recorded ``skipped`` and (for a command) never spawned.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from _process_support import (
    completions,
    eventually,
    finished,
    scripted,
    ticket,
    write_until,
)
from _shell_support import appending_script
from conftest import ScriptFactory
from tether import AgentProcess, FileWatchTrigger, TriggerEvent
from tether.agent import BudgetConfig, ContextConfig
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.hooks import HookConfig, HookContext, HookEvent, HookManager
from tether.hooks._history import HistoryRecorder
from tether.hooks._matcher import MATCHER_FIELDS
from tether.manifest import ManifestError, parse_manifest
from tether.models import ScriptedModel

UPS = HookEvent.USER_PROMPT_SUBMIT


class Seen:
    """An async hook that counts the events it ran for."""

    def __init__(self) -> None:
        self.data: list[dict[str, Any]] = []

    async def __call__(self, ctx: HookContext) -> None:
        self.data.append(dict(ctx.data))


def outcomes(process: AgentProcess, name: str) -> list[str]:
    return [run.outcome for run in process.hook_runs(hook=name)]


# -- each field on the event that carries it ------------------------------------------------


async def test_a_trigger_type_matcher_runs_the_hook_only_for_that_trigger_type() -> None:
    webhooks = Seen()
    process = scripted()
    process.hooks.register(
        HookEvent.TASK_CREATED, webhooks, name="w", matcher={"trigger_type": "web*"}
    )
    rec = completions(process)
    async with process:
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": "a"}))
        await process.inject(TriggerEvent("nightly", "cron", {}))
        await finished(rec, 2)
    assert [d["trigger_type"] for d in webhooks.data] == ["webhook"]
    assert outcomes(process, "w") == ["passed", "skipped"]


async def test_a_trigger_id_matcher_takes_a_list_of_patterns() -> None:
    seen = Seen()
    process = scripted()
    process.hooks.register(UPS, seen, name="s", matcher={"trigger_id": ["desk-*", "vip"]})
    rec = completions(process)
    async with process:
        for trigger_id in ("desk-eu", "vip", "vip-2", "other"):
            await process.inject(ticket(trigger_id=trigger_id))
        await finished(rec, 4)
    assert [d["trigger_id"] for d in seen.data] == ["desk-eu", "vip"]
    assert outcomes(process, "s") == ["passed", "passed", "skipped", "skipped"]


async def test_several_fields_must_all_match() -> None:
    seen = Seen()
    process = scripted()
    process.hooks.register(
        HookEvent.TASK_COMPLETED,
        seen,
        name="s",
        matcher={"trigger_type": "webhook", "trigger_id": "desk"},
    )
    rec = completions(process)
    async with process:
        await process.inject(TriggerEvent("desk", "webhook", {}))
        await process.inject(TriggerEvent("desk", "manual", {}))
        await process.inject(TriggerEvent("other", "webhook", {}))
        await finished(rec, 3)
    assert [(d["trigger_id"], d["trigger_type"]) for d in seen.data] == [("desk", "webhook")]


async def test_a_tool_name_matcher_runs_a_permission_request_hook_for_matching_tools() -> None:
    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True, reviewer_id="alice")

    model = ScriptedModel(reply="Noted.", tool_calls=[("update_state", {"key": "k", "value": 1})])
    process = scripted(
        model=model,
        context=ContextConfig(state_tool=True),
        approval=ApprovalPolicy(tools=["update_state"], handler=approve),
    )
    state_tools, mail_tools = Seen(), Seen()
    process.hooks.register(
        HookEvent.PERMISSION_REQUEST, state_tools, name="state", matcher={"tool_name": "update_*"}
    )
    process.hooks.register(
        HookEvent.PERMISSION_REQUEST, mail_tools, name="mail", matcher={"tool_name": "send_*"}
    )
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await finished(rec)
    assert [d["tool_name"] for d in state_tools.data] == ["update_state"]
    assert mail_tools.data == []
    assert (outcomes(process, "state"), outcomes(process, "mail")) == (["passed"], ["skipped"])


async def test_a_kind_matcher_runs_a_permission_denied_hook_for_that_kind_of_denial() -> None:
    budget, approvals = Seen(), Seen()
    process = scripted(budget=BudgetConfig(max_runs_per_day=1))
    process.hooks.register(
        HookEvent.PERMISSION_DENIED, budget, name="budget", matcher={"kind": "budget"}
    )
    process.hooks.register(
        HookEvent.PERMISSION_DENIED,
        approvals,
        name="approvals",
        matcher={"kind": ["approval", "guardrail"]},
    )
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        await process.inject(ticket("Over the daily limit"))
        await finished(rec, 2)
    assert [d["kind"] for d in budget.data] == ["budget"]
    assert approvals.data == []
    assert outcomes(process, "approvals") == ["skipped"]


async def test_a_path_matcher_runs_a_file_changed_hook_only_for_matching_paths(
    tmp_path: Path,
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    trigger = FileWatchTrigger(id="inbox", watch_path=str(inbox), debounce_ms=10)
    process = scripted(triggers=[trigger])
    tickets, invoices = Seen(), Seen()
    process.hooks.register(
        HookEvent.FILE_CHANGED, tickets, name="tickets", matcher={"path": "*/tickets-*.txt"}
    )
    process.hooks.register(
        HookEvent.FILE_CHANGED, invoices, name="invoices", matcher={"path": ["*.csv", "*.xlsx"]}
    )
    rec = completions(process)
    async with process:
        await write_until(inbox / "tickets-1.txt", lambda: tickets.data)
        await finished(rec)
    assert {Path(d["path"]).name for d in tickets.data} == {"tickets-1.txt"}
    assert invoices.data == []
    assert set(outcomes(process, "invoices")) == {"skipped"}


async def test_a_matcher_on_data_the_event_lacks_does_not_match() -> None:
    seen = Seen()
    manager = HookManager()
    manager.register(UPS, seen, matcher={"trigger_id": "*"})
    await manager.dispatch(UPS, {"prompt": "no trigger id here"})
    await manager.dispatch(UPS, {"prompt": "p", "trigger_id": "desk"})
    assert [d.get("trigger_id") for d in seen.data] == ["desk"]


# -- declared in config and manifests -------------------------------------------------------


async def test_a_hook_config_matcher_is_applied_to_a_callback_hook() -> None:
    seen = Seen()
    process = scripted(
        hooks=[
            HookConfig(
                event="task_created",
                callback=seen,
                name="cron-only",
                matcher={"trigger_type": "cron"},
            )
        ]
    )
    rec = completions(process)
    async with process:
        await process.inject(TriggerEvent("nightly", "cron", {}))
        await process.inject(ticket())
        await finished(rec, 2)
    assert [d["trigger_type"] for d in seen.data] == ["cron"]
    assert outcomes(process, "cron-only") == ["passed", "skipped"]


async def test_a_command_hook_whose_matcher_does_not_match_is_never_spawned(
    tmp_path: Path, make_script: ScriptFactory
) -> None:
    spawned = tmp_path / "spawned"
    script = appending_script(make_script, spawned, 'event["data"]["trigger_id"]')
    hook = HookConfig(
        event="user_prompt_submit", command=[script], matcher={"trigger_id": "billing"}
    )
    process = scripted(hooks=[hook])
    rec = completions(process)
    async with process:
        await process.inject(ticket(trigger_id="helpdesk"))
        await finished(rec)
        assert not spawned.exists()
        await process.inject(ticket(trigger_id="billing"))
        await finished(rec, 2)
    assert spawned.read_text() == "billing\n"
    [skipped, ran] = process.hook_runs(hook=script)
    assert (skipped.outcome, skipped.duration_ms, skipped.error) == ("skipped", 0.0, None)
    assert (ran.outcome, ran.source) == ("passed", "config")


def test_a_manifest_hook_takes_a_matcher_and_an_async_mode() -> None:
    manifest = parse_manifest(
        """
        name: triage
        model: scripted
        hooks:
          - event: task_completed
            command: ["notify", "--channel", "ops"]
            mode: async
            matcher: {trigger_type: [webhook, cron]}
        """
    )
    [hook] = manifest.hooks
    assert (hook.mode, hook.matcher) == ("async", {"trigger_type": ["webhook", "cron"]})


def test_a_manifest_hook_with_a_matcher_field_its_event_lacks_is_rejected() -> None:
    with pytest.raises(ManifestError) as info:
        parse_manifest(
            """
            name: triage
            model: scripted
            hooks:
              - event: task_completed
                command: notify
                matcher: {tool_name: send_mail}
            """
        )
    message = str(info.value)
    assert "tool_name" in message
    assert "trigger_type" in message


# -- validated when declared ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (HookEvent.USER_PROMPT_SUBMIT, "tool_name"),
        (HookEvent.PERMISSION_REQUEST, "trigger_id"),
        (HookEvent.FILE_CHANGED, "kind"),
        (HookEvent.TASK_COMPLETED, "path"),
        (HookEvent.PERMISSION_DENIED, "nonsense"),
    ],
)
def test_a_matcher_field_the_event_lacks_is_rejected_at_registration(
    event: HookEvent, field: str
) -> None:
    manager = HookManager()
    with pytest.raises(ValueError, match=field) as info:
        manager.register(event, Seen(), matcher={field: "*"})
    allowed = MATCHER_FIELDS[event]
    assert all(name in str(info.value) for name in allowed)
    assert len(manager) == 0


def test_a_matcher_on_an_event_without_matcher_fields_says_none_are_allowed() -> None:
    with pytest.raises(ValueError, match="allowed: none") as info:
        HookManager().register(HookEvent.SESSION_START, Seen(), matcher={"trigger_id": "x"})
    assert "trigger_id" in str(info.value)


def test_a_hook_config_matcher_field_the_event_lacks_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as info:
        HookConfig(event="task_created", command="notify", matcher={"tool_name": "send_*"})
    message = str(info.value)
    assert "tool_name" in message
    assert "trigger_type" in message
    assert "trigger_id" in message


@pytest.mark.parametrize("patterns", [[], 3, [1, "x"], ""])
def test_a_matcher_pattern_must_be_a_string_or_a_non_empty_list_of_strings(patterns: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="trigger_id"):
        HookManager().register(UPS, Seen(), matcher={"trigger_id": patterns})


def test_a_matcher_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(TypeError, match="matcher must be a mapping"):
        HookManager().register(UPS, Seen(), matcher=["trigger_id"])  # type: ignore[arg-type]


def test_the_catalog_shows_a_hooks_matcher_as_lists_of_patterns() -> None:
    manager = HookManager()
    manager.register(UPS, Seen(), matcher={"trigger_id": "desk", "trigger_type": ["a", "b"]})
    [info] = manager.describe()
    assert info.matcher == {"trigger_id": ["desk"], "trigger_type": ["a", "b"]}


# -- once and matchers ----------------------------------------------------------------------


async def test_a_once_hook_with_a_matcher_fires_on_the_first_matching_event() -> None:
    seen = Seen()
    process = scripted()
    hook_id = process.hooks.register(
        HookEvent.TASK_CREATED, seen, once=True, matcher={"trigger_type": "cron"}
    )
    rec = completions(process)
    async with process:
        await process.inject(ticket())
        assert hook_id in process.hooks  # a non-matching event does not use it up
        await process.inject(TriggerEvent("nightly", "cron", {"n": 1}))
        await process.inject(TriggerEvent("nightly", "cron", {"n": 2}))
        await finished(rec, 3)
    assert [d["trigger_type"] for d in seen.data] == ["cron"]
    assert hook_id not in process.hooks
    assert [r.outcome for r in process.hook_runs(hook=hook_id)] == ["skipped", "passed"]


async def test_an_async_once_hook_with_a_matcher_fires_on_the_first_matching_event_only() -> None:
    """Regression: async hooks ignored ``once`` and ran for every event."""
    seen = Seen()
    manager = HookManager()
    hook_id = manager.register(
        HookEvent.TASK_CREATED, seen, once=True, mode="async", matcher={"trigger_type": "cron"}
    )
    manager.recorder = history = HistoryRecorder("p")
    for trigger_type in ("webhook", "cron", "cron"):
        await manager.dispatch(
            HookEvent.TASK_CREATED,
            {"event_id": "e", "trigger_id": "t", "trigger_type": trigger_type},
        )
    await eventually(lambda: seen.data, what="the async hook")
    from tether.hooks._background import drain

    assert await drain(5)
    assert len(seen.data) == 1
    assert hook_id not in manager
    assert [r.outcome for r in history.runs(hook=hook_id)] == ["skipped", "passed"]


async def test_an_async_hook_whose_matcher_does_not_match_is_recorded_skipped() -> None:
    seen = Seen()
    manager = HookManager()
    manager.register(HookEvent.TASK_CREATED, seen, mode="async", matcher={"trigger_id": "desk"})
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(
        HookEvent.TASK_CREATED, {"event_id": "e", "trigger_id": "other", "trigger_type": "x"}
    )
    from tether.hooks._background import drain

    assert await drain(5)
    assert seen.data == []
    [run] = history.runs()
    assert (run.mode, run.outcome) == ("async", "skipped")


def test_an_argument_path_matches_a_list_on_its_compact_json_text_as_written() -> None:
    from tether.hooks._matcher import Matcher

    matcher = Matcher.build(HookEvent.PRE_TOOL_USE, {"arguments.paths": '["/tmp/é",*'})
    assert matcher.matches({"arguments": {"paths": ["/tmp/é", "/etc/x"]}})
    assert not matcher.matches({"arguments": {"paths": ["/etc/x"]}})
    number = Matcher.build(HookEvent.PERMISSION_REQUEST, {"arguments.amount": "re:^[0-9]{4,}$"})
    assert number.matches({"arguments": {"amount": 12000}})
    assert not number.matches({"arguments": {"amount": 120}})
