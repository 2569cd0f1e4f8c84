"""The tutorial's steps 1, 2, 3 and 5 run as scripts and print what the tutorial says.

Each script is run with this interpreter as a subprocess, one after another: they all serve
their fake model on the tutorial's port 8781, each in a network namespace of its own (see
_tutorial_support; they skip where the host cannot give them one).
"""

from __future__ import annotations

import json
import re

import pytest

from _tutorial_support import run_step as run

pytestmark = pytest.mark.slow


def run_step(script: str) -> list[str]:
    return run(script).stdout.splitlines()


def test_step_1_hooks_tour_prints_the_events_of_one_ticket_in_order() -> None:
    lines = run_step("hooks_tour.py")
    assert lines[0] == "hooks registered: 18"
    events = [m.group(1) for line in lines[1:] if (m := re.match(r"\s*\d+\.\d\ds  (\w+)", line))]
    assert events == [
        "session_start",
        "task_created",
        "user_prompt_submit",
        "pre_model_call",
        "post_model_call",
        "agent_stop",
        "task_completed",
        "session_end",
    ]
    assert "{'restart': False, 'recovered': None}" in lines[1]
    assert "'prompt': 'ticket: Login page is down\\n\\n(e...'" in lines[3]
    assert "'outcome': 'success'" in lines[7]
    assert lines[8].endswith("{'reason': 'stop'}")


def test_step_2_policy_hooks_refuses_rewrites_and_fails_closed() -> None:
    lines = run_step("policy_hooks.py")
    assert lines[0] == "runs: 1"
    assert lines[1] == "dead-lettered: legacy-cron | blocked by hook | legacy-cron was retired"
    assert lines[2] == (
        "dead-lettered: helpdesk | blocked by hook | "
        "tickets about passwords go to the identity team"
    )
    assert lines[3].startswith("the model received: ...")
    assert lines[3].endswith("House rules: answer in one sentence.")
    assert lines[4] == "fail_closed=False: blocked=False errors=1 reason=None"
    assert lines[5].startswith(
        'fail_closed=True: blocked=True errors=1 reason="hook failed (fail_closed): hook '
    )
    assert lines[5].endswith('timed out after 0.5s"')
    assert len(lines) == 6


def test_step_3_shell_hooks_blocks_by_json_and_keeps_the_environment_minimal() -> None:
    lines = run_step("shell_hooks.py")
    assert lines[0] == "runs: 1"
    assert lines[1] == "dead-lettered: blocked by hook | refunds need a human"
    audits = [json.loads(line.removeprefix("audit: ")) for line in lines[2:4]]
    assert [a["event"] for a in audits] == ["user_prompt_submit", "user_prompt_submit"]
    assert [a["process"] for a in audits] == ["triage", "triage"]
    assert [a["queue"] for a in audits] == ["support-eu", "support-eu"]
    assert [a["sees_api_key"] for a in audits] == [False, False]
    assert audits[0]["event_id"] != audits[1]["event_id"]
    assert lines[4] == (
        "exit 2 -> CommandHookError: hook command 'python hooks/broken.py' exited 2: "
        "cannot reach the ticket database"
    )
    assert len(lines) == 5


def test_step_5_permission_hooks_gates_approvals_and_audits_the_denial() -> None:
    lines = run_step("permission_hooks.py")
    assert lines == [
        "denied in triage: kind=approval tool=update_state decided_by=hook "
        "reason='refund limits are set by finance, not by the agent'",
        "reviewer was asked: [\"update_state({'key': 'priority', 'value': 'high'})\"]",
        "state: {'priority': 'high'}",
    ]
