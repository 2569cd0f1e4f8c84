"""Issue 5's matchers and async mode declared each way it names: in code with the ``on``
decorator, in HookConfig and in a manifest, each checked when it is declared."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tether import HookContext, HookEvent, HookManager
from tether.hooks._history import HistoryRecorder
from tether.hooks._matcher import Matcher
from tether.manifest import ManifestError, parse_manifest

PERMISSION_DENIED = {
    "kind": "budget",
    "tool_name": None,
    "request_id": None,
    "reason": "over budget",
    "decided_by": None,
}


async def test_the_on_decorator_takes_a_matcher_and_the_hook_runs_only_when_it_matches() -> None:
    hooks = HookManager()
    hooks.recorder = history = HistoryRecorder("p")
    seen: list[str] = []

    @hooks.on(HookEvent.PERMISSION_DENIED, matcher={"kind": ["budget", "guard*"]})
    async def on_refusal(ctx: HookContext) -> None:
        seen.append(ctx.data["kind"])

    for kind in ("approval", "budget", "guardrail"):
        await hooks.dispatch(HookEvent.PERMISSION_DENIED, {**PERMISSION_DENIED, "kind": kind})
    assert seen == ["budget", "guardrail"]
    assert [r.outcome for r in history.runs()] == ["skipped", "passed", "passed"]


def test_the_on_decorator_rejects_a_matcher_field_its_event_lacks_when_declared() -> None:
    hooks = HookManager()

    with pytest.raises(ValueError, match="'path' is not available for task_completed") as info:

        @hooks.on(HookEvent.TASK_COMPLETED, matcher={"path": "*.py"})
        async def notify(ctx: HookContext) -> None:
            pass

    assert "allowed: trigger_type, trigger_id" in str(info.value)
    assert len(hooks) == 0


def test_the_on_decorator_refuses_an_async_fail_closed_hook() -> None:
    hooks = HookManager()
    with pytest.raises(ValueError, match="async"):

        @hooks.on(HookEvent.TASK_CREATED, mode="async", fail_closed=True)
        async def audit(ctx: HookContext) -> None:
            pass

    assert len(hooks) == 0


@pytest.mark.parametrize(
    ("options", "named"),
    [
        pytest.param(
            {"mode": "async", "fail_closed": True},
            ["hooks[0]", "async", "fail_closed"],
            id="async_and_fail_closed-naming_both",
        ),
        pytest.param(
            {"mode": "later"},
            ["hooks[0].mode", "'sync'", "'async'"],
            id="an_unknown_mode-naming_the_modes",
        ),
    ],
)
def test_a_manifest_hook_with_a_bad_mode_is_rejected(
    options: dict[str, Any], named: list[str]
) -> None:
    hook = {"event": "task_created", "command": "notify", **options}
    with pytest.raises(ManifestError) as info:
        parse_manifest(yaml.safe_dump({"name": "triage", "model": "scripted", "hooks": [hook]}))
    message = str(info.value)
    for part in named:
        assert part in message


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (HookEvent.PERMISSION_REQUEST, "tool_name"),
        (HookEvent.PERMISSION_DENIED, "tool_name"),
        (HookEvent.PERMISSION_DENIED, "kind"),
        (HookEvent.FILE_CHANGED, "path"),
        (HookEvent.TASK_CREATED, "trigger_type"),
        (HookEvent.TASK_COMPLETED, "trigger_id"),
        (HookEvent.USER_PROMPT_SUBMIT, "trigger_type"),
    ],
)
def test_each_matcher_field_the_issue_names_is_accepted_for_an_event_that_carries_it(
    event: HookEvent, field: str
) -> None:
    matcher = Matcher.build(event, {field: ["a*", "b"]})
    assert matcher.as_dict() == {field: ["a*", "b"]}
    assert matcher.matches({field: "abc"})
    assert not matcher.matches({field: "c"})
