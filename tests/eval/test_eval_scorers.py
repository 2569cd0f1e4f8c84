"""The built-in checks and Python scorers, scored from real runs."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from _eval_support import PackFactory

from tether.eval import load_pack, load_runs, run_pack
from tether.testing import FakeLLM


async def _layers(pack: Path, llm: FakeLLM, out: Path) -> dict[str, Any]:
    await run_pack(load_pack(pack), out=out, fake_llm=llm)
    (record,) = load_runs(out)
    assert record.score is not None
    return record.score


async def test_reply_checks_and_json_schema(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    text = """\
    name: s
    agent: _eval_agents:plain
    fake_llm: {reply: '{"priority": "P2", "team": "web"}'}
    scenarios:
      - id: s
        turns: ["ticket"]
        score:
          - contains: '"TEAM"'
          - contains: '"TEAM"'
            case_sensitive: true
          - not_contains: P1
          - json_schema:
              type: object
              required: [priority]
              properties: {priority: {enum: [P1, P2, P3]}}
          - json_schema: {type: object, required: [owner]}
    """
    score = await _layers(write_pack(text), llm, tmp_path)
    checks = [(c["kind"], c["passed"]) for c in score["layers"]["outcome"]["checks"]]
    assert checks == [
        ("contains", True),
        ("contains", False),
        ("not_contains", True),
        ("json_schema", True),
        ("json_schema", False),
    ]
    assert "'owner' is a required property" in score["layers"]["outcome"]["detail"]
    assert score["verdict"] == "FAIL"


async def test_tool_checks_compare_a_subset_of_the_arguments_and_turn_checks_name_the_turn(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    text = """\
    name: s
    agent: _eval_agents:stateful
    fake_llm:
      tool_calls: [{name: update_state, arguments: {key: ticket, value: P2}}]
    scenarios:
      - id: s
        turns:
          - prompt: "first"
            expect:
              - tool_called: {name: update_state, arguments: {key: ticket}}
          - prompt: "second"
            expect:
              - tool_called: {name: update_state}
        score:
          - tool_called: {name: update_state, arguments: {key: ticket, value: P2}}
          - tool_not_called: {name: update_state, arguments: {value: P3}}
          - tool_not_called: {name: update_state}
    """
    score = await _layers(write_pack(text), llm, tmp_path)
    checks = {
        c["check"]: (c["passed"], c["detail"]) for c in score["layers"]["trajectory"]["checks"]
    }
    assert checks["scenarios[0].turns[0].expect[0]"][0] is True
    assert checks["scenarios[0].turns[1].expect[0]"] == (
        False,
        "turn 2: update_state was not called (calls: none)",
    )
    assert checks["scenarios[0].score[0]"][0] is True
    assert checks["scenarios[0].score[1]"][0] is True
    assert checks["scenarios[0].score[2]"] == (False, "update_state was called 1 time(s)")


async def test_python_scorers_by_module_and_by_entry_point(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    info = site / "evalscorer-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalscorer\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[tether.scorers]\npriority = _eval_agents:priority_scorer\n"
    )
    monkeypatch.syspath_prepend(str(site))
    text = """\
    name: s
    agent: _eval_agents:plain
    fake_llm: {reply: "P2, web team"}
    scenarios:
      - id: s
        turns: ["ticket"]
        score:
          - scorer: priority
            with: {priority: P2}
          - scorer: _eval_agents:priority_scorer
            layer: policy
          - scorer: _eval_agents:broken_scorer
    """
    score = await _layers(write_pack(text), llm, tmp_path / "runs")
    outcome = score["layers"]["outcome"]["checks"]
    assert outcome[0]["passed"] is True
    assert outcome[1] == {
        "check": "scenarios[0].score[2]",
        "kind": "scorer",
        "passed": False,
        "detail": "scorer _eval_agents:broken_scorer raised RuntimeError('scorer bug')",
    }
    assert score["layers"]["policy"]["passed"] is False
    assert score["layers"]["policy"]["detail"] == "wanted P1 in 'P2, web team'"


async def test_a_hook_refusal_is_a_constraint_and_the_turn_is_still_sound(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path, make_script: Any
) -> None:
    script = make_script(
        """\
        import json, sys
        event = json.load(sys.stdin)
        if "password" in event["data"]["prompt"]:
            print(json.dumps({"block": True, "reason": "identity team only"}))
        """
    )
    (tmp_path / "agent.agent").write_text(
        textwrap.dedent(
            f"""\
            name: guarded
            model: scripted
            max_retries: 0
            secrets: {{token: s3cr3t-value}}
            hooks:
              - event: user_prompt_submit
                command: [{script!r}]
            """
        )
    )
    text = """\
    name: s
    agent: agent.agent
    fake_llm: {}
    scenarios:
      - id: s
        turns: ["reset my password please (token s3cr3t-value)", "and a normal one"]
        score:
          - hook_refused: {event: user_prompt_submit}
          - hook_refused: {event: pre_tool_use}
    """
    score = await _layers(write_pack(text), llm, tmp_path / "runs")
    checks = score["layers"]["constraint"]["checks"]
    assert checks[0]["passed"] is True
    assert "refused user_prompt_submit: identity team only" in checks[0]["detail"]
    assert checks[1]["passed"] is False
    assert score["layers"]["integrity"]["passed"] is True
    (record,) = load_runs(tmp_path / "runs")
    assert [t["outcome"] for t in record.trace["turns"]] == ["blocked", "success"]
    # Declared secrets never reach the files.
    assert "s3cr3t-value" not in record.path.read_text()
