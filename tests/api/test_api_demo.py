"""The demo behind ``make demo`` (examples/demo.py) runs offline and shows what it promises."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_demo_runs_end_to_end_and_shows_events_refusals_and_dead_letters(
    tmp_path: Path,
) -> None:
    audit_log = tmp_path / "audit.jsonl"
    done = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "COLUMNS": "200",
            "NO_COLOR": "1",
            "TRIAGE_AUDIT_LOG": str(audit_log),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    out = done.stdout
    # where the dashboard and the metrics are
    assert re.search(r"^dashboard http://127\.0\.0\.1:\d+/ ", out, re.M)
    assert re.search(r"^metrics http://127\.0\.0\.1:\d+/metrics ", out, re.M)
    # the signed webhook refuses unsigned requests
    assert "unsigned request -> HTTP 401 SIGNATURE_REQUIRED" in out
    # events fire live
    assert "    session_start       restart=False" in out
    assert out.count("    task_completed      ") == 8
    # a prompt rewritten, one refused and why
    assert "hook hooks/redact_pii.py on user_prompt_submit: applied: prompt rewritten" in out
    # the persistent policy hook (one co-process for every ticket) appends the house rule
    assert out.count("hook hooks/policy_server.py on user_prompt_submit: applied") == 7
    assert "model received: 'ticket: Customer [email] (card [card]) cannot check out'" in out
    assert (
        "hook hooks/policy_server.py on user_prompt_submit: blocked: password resets go to "
        "the identity team" in out
    )
    # the tool call denied by the Python policy hook, the one within policy approved
    assert (
        "permission_denied   kind=approval tool=issue_refund decided_by=hook: refunds above "
        "100 EUR need a human in finance (asked for 5000 EUR)" in out
    )
    assert "refunds issued: [('1182', 40.0)]" in out
    # an MCP tool answering (the orders server, over stdio), through the tool hooks
    assert 'pre_tool_use        mcp__orders__lookup_order({"order_id": "1182"})' in out
    assert (
        "post_tool_use       mcp__orders__lookup_order -> 'order 1182: delivered by DHL, "
        "2 item(s)'" in out
    )
    # a tool call refused by a pre_tool_use command hook: never run, the model told why
    assert (
        "permission_denied   kind=hook tool=mcp__orders__cancel_order "
        "decided_by=hooks/guard_tools.py: cancelling order 7731 needs a person" in out
    )
    assert "hook hooks/guard_tools.py on pre_tool_use: blocked: cancelling order 7731" in out
    assert "post_tool_use       mcp__orders__cancel_order" not in out
    # the control API: an operator change, and no command deploys
    assert "config_change       source=operator change=instructions" in out
    assert "POST /processes with a command hook -> HTTP 403 COMMANDS_NOT_ALLOWED" in out
    # the dead letters, from the API
    dead = out.split("dead letters (GET /api/v1/processes/triage/dead-letters):")[1]
    assert "blocked by hook  password resets go to the identity team" in dead
    assert "guardrail refused payload contains a prompt-injection marker" in dead
    assert f"audit log: 8 lines in {audit_log}" in out
    outcomes = [json.loads(line)["outcome"] for line in audit_log.read_text().splitlines()]
    assert outcomes == [
        "success",
        "success",
        "blocked",
        "success",
        "success",
        "success",
        "success",
        "dead_lettered",
    ]
    assert out.rstrip().endswith("session_end         reason=stop runs=6")
