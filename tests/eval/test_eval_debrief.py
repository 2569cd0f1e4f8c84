"""The debrief hook in the eval harness: when it asks, what it asks, its knobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _eval_support import PackFactory

from tether.eval import load_pack, load_runs, resolve_hooks, run_pack
from tether.testing import FakeLLM

PACK = """\
name: deb
agent: _eval_agents:plain
runs: 2
scenarios:
  - id: good
    turns: ["ticket"]
    score: [{contains: triaged}]
  - id: bad
    turns: ["ticket"]
    score: [{contains: "P1"}, {matches: "P2"}]
"""


@pytest.mark.slow
async def test_debrief_asks_only_about_runs_with_a_failed_layer_by_default(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    await run_pack(load_pack(write_pack(PACK)), hooks=["debrief"], out=tmp_path, fake_llm=llm)
    by_scenario = {}
    for record in load_runs(tmp_path):
        by_scenario.setdefault(record.trace["scenario_id"], []).append(record)
    assert all("debrief" not in r.artifacts for r in by_scenario["good"])
    for record in by_scenario["bad"]:
        debrief = json.loads(record.artifacts["debrief"].read_text())
        assert debrief["schema_version"] == 2
        assert debrief["run_id"] == record.trace["run_id"]
        assert debrief["verdict"] == "FAIL"
        assert debrief["failed_layers"] == ["outcome"]
        assert "reply does not contain 'P1'" in debrief["reasons"]["outcome"]
        assert debrief["reply"] == llm.reply
        assert debrief["timed_out"] is False
        assert debrief["error"] is None
    # What the agent was asked: the verdict and reasons, environment first, steering last.
    asked = [p for p in llm.prompts if p.startswith("Your run of scenario 'bad'")]
    assert len(asked) == 2
    assert asked[0].index("1. Environment") < asked[0].index("2. Blockers")
    assert asked[0].index("2. Blockers") < asked[0].index("3. Only then")


async def test_tether_debrief_on_all_debriefs_passing_runs_too(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    await run_pack(load_pack(write_pack(PACK)), hooks=["debrief"], out=tmp_path, fake_llm=llm)
    records = load_runs(tmp_path)
    assert all("debrief" in r.artifacts for r in records)
    good = [r for r in records if r.trace["scenario_id"] == "good"]
    assert json.loads(good[0].artifacts["debrief"].read_text())["verdict"] == "PASS"


def test_a_bad_debrief_knob_is_an_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "sometimes")
    with pytest.raises(Exception, match="TETHER_DEBRIEF_ON"):
        resolve_hooks(["debrief"])


def test_a_bad_framework_deadline_is_an_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, write_pack: PackFactory
) -> None:
    import asyncio

    monkeypatch.setenv("TETHER_HOOK_CONVERSE_TIMEOUT_S", "soon")
    pack = load_pack(write_pack(PACK.replace("runs: 2", "runs: 1")))
    with pytest.raises(ValueError, match="TETHER_HOOK_CONVERSE_TIMEOUT_S must be a number"):
        asyncio.run(run_pack(pack))
