"""Claude Code's Notification event for tether's operator notices: an approval waiting (see
test_claude_code_packs.py) and a hook error, told to real Notification programs of a real
settings file by a running process; never for a Notification hook's own error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _executor_support import PolicyServer
from _process_support import run_one_task
from tether import AgentProcess, ProcessConfig, claude_code_hooks
from tether.approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from tether.models import ScriptedModel

#: A notification pack in the style of the public ones: jq appends each notice to a file.
NOTIFY = "jq -c '{{hook_event_name, notification_type, title, message}}' >> {notes}"


def settings(project: Path, hooks: dict[str, Any]) -> Path:
    file = project / ".claude" / "settings.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"hooks": hooks}))
    return file


def group(command: str, matcher: str | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"hooks": [{"type": "command", "command": command, **extra}]}
    if matcher is not None:
        found["matcher"] = matcher
    return found


def shop(file: Path, **config: Any) -> tuple[AgentProcess, list[int]]:
    """A process with one tool call (lookup_order) and the hooks of ``file``."""
    ran: list[int] = []

    async def lookup_order(order_id: int) -> str:
        """Look an order up."""
        ran.append(order_id)
        return "shipped"

    model = ScriptedModel(reply="Done.", tool_calls=[("lookup_order", {"order_id": 5})])
    hooks = claude_code_hooks(file)
    process = AgentProcess(
        "shop", ProcessConfig(model=model, tools=[lookup_order], hooks=hooks, **config)
    )
    return process, ran


def notices(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_failed_hook_fires_notification_with_its_message(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    file = settings(
        tmp_path,
        {
            "PreToolUse": [group("echo 'audit log is full' >&2; exit 1")],
            "Notification": [group(NOTIFY.format(notes=notes))],
        },
    )
    process, ran = shop(file)
    await run_one_task(process)
    assert ran == [5]  # a non-blocking error: the call goes on
    [notice] = notices(notes)
    assert notice == {
        "hook_event_name": "Notification",
        "notification_type": "hook_error",
        "title": "Hook error",
        "message": "Hook \"echo 'audit log is full' >&2; exit 1\" failed on pre_tool_use: hook "
        "command \"echo 'audit log is full' >&2; exit 1\" exited 1: audit log is full",
    }
    # Recorded as a run of the dispatch the error happened in, after the failed one.
    failed, told = process.hook_runs(event="pre_tool_use")
    assert (failed.outcome, told.outcome) == ("failed", "passed")
    assert told.hook_name == NOTIFY.format(notes=notes)
    assert told.dispatch_id == failed.dispatch_id


async def test_a_timed_out_hook_fires_notification_saying_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    file = settings(
        tmp_path,
        {
            "PostToolUse": [group("sleep 5", timeout=0.2)],
            "Notification": [group(NOTIFY.format(notes=notes))],
        },
    )
    process, _ = shop(file)
    await run_one_task(process)
    [notice] = notices(notes)
    assert notice["notification_type"] == "hook_error"
    assert notice["message"].startswith("Hook 'sleep 5' timed out on post_tool_use: ")


async def test_a_notification_hook_s_own_error_fires_no_notification(tmp_path: Path) -> None:
    """Told of a hook's error and of an approval waiting, the failing Notification hook runs
    once for each: its own errors are told to nobody (no loop)."""
    seen = tmp_path / "seen"
    broken = f"jq -r .notification_type >> {seen}; exit 1"
    file = settings(
        tmp_path,
        {
            "PreToolUse": [group("exit 1")],
            "Notification": [group(broken)],
        },
    )

    async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(approved=True, reviewer_id="alice")

    process, ran = shop(file, approval=ApprovalPolicy(tools=["lookup_order"], handler=reviewer))
    await run_one_task(process)
    assert ran == [5]
    assert sorted(seen.read_text().split()) == ["hook_error", "permission_prompt"]
    runs = [r for r in process.hook_runs() if r.hook_name == broken]
    assert [r.outcome for r in runs] == ["failed", "failed"]


async def test_a_notification_group_matching_other_types_is_not_told_of_hook_errors(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    file = settings(
        tmp_path,
        {
            "PreToolUse": [group("exit 1")],
            "Notification": [group(NOTIFY.format(notes=notes), "permission_prompt|idle_prompt")],
        },
    )
    process, _ = shop(file)
    await run_one_task(process)
    assert notices(notes) == []


async def test_an_http_notification_handler_gets_both_notices_and_its_answer_changes_nothing(
    tmp_path: Path,
) -> None:
    """Regression: an http Notification handler was sent PermissionRequest's input, and its
    answer was read as one (an allow would have approved the call)."""
    async with PolicyServer() as service:
        handler = {"type": "http", "url": f"{service.url}/allow"}
        file = settings(
            tmp_path,
            {"PreToolUse": [group("exit 1")], "Notification": [{"hooks": [handler]}]},
        )
        asked: list[ApprovalRequest] = []

        async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision(approved=True, reviewer_id="alice")

        approval = ApprovalPolicy(tools=["lookup_order"], handler=reviewer)
        process, ran = shop(file, approval=approval)
        await run_one_task(process)
        sent = [got.json() for got in service.requests]
    assert sorted((s["hook_event_name"], s["notification_type"]) for s in sent) == [
        ("Notification", "hook_error"),
        ("Notification", "permission_prompt"),
    ]
    assert len(asked) == 1  # the handler still decided
    assert ran == [5]
