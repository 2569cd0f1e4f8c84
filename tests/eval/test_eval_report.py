"""Runs folders: the sidecar rule, reports, JUnit XML and exit codes. Hook artifacts never
count."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from _eval_support import PackFactory

import tether.eval
from tether.eval import is_trace_file, junit_xml, load_pack, load_runs, report_folder, run_pack
from tether.testing import FakeLLM

PACK = """\
name: rep
agent: _eval_agents:plain
runs: 3
scenarios:
  - id: passes
    turns: ["a ticket"]
    score: [{contains: triaged}]
  - id: fails
    turns: ["another"]
    score: [{contains: "P1"}, {tool_called: {name: lookup}}]
  - id: half
    pass_rate: 0.0
    turns: ["a third"]
    score: [{contains: "P1"}]
"""


def test_a_json_file_whose_stem_holds_a_dot_is_never_a_trace() -> None:
    assert is_trace_file(Path("20260101T000000000Z_abcd1234.json"))
    for name in ("x.score.json", "x.debrief.json", "x.hook.label.json", "s.pack.json", "x.txt"):
        assert not is_trace_file(Path(name))


@pytest.mark.slow
async def test_readers_apply_the_sidecar_rule_even_to_sidecars_shaped_like_traces(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    await run_pack(load_pack(write_pack(PACK)), hooks=["debrief"], out=out, fake_llm=llm)
    before = report_folder(out).as_dict()
    (record, *_) = load_runs(out)
    # A hook artifact that looks exactly like a trace, and one with a label: still sidecars.
    (out / f"{record.stem}.mimic.json").write_text(json.dumps(record.trace))
    (out / f"{record.stem}.mimic.v2.json").write_text(json.dumps(record.trace))
    (out / "notes.txt").write_text("not json")
    (out / "stray.json").write_text("{not json")
    after = report_folder(out)
    assert after.as_dict() == before
    assert len(after.records) == 9
    assert {"mimic", "mimic.v2"} <= set(load_runs(out)[0].artifacts)


@pytest.mark.slow
async def test_the_report_has_pass_rates_failing_layers_latency_and_the_exit_code(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    result = await run_pack(load_pack(write_pack(PACK)), hooks=["debrief"], out=out, fake_llm=llm)
    report = report_folder(out)
    rows = {a["scenario_id"]: a for a in report.scenarios}
    assert rows["passes"]["pass_rate"] == 1.0
    assert rows["passes"]["passed"] is True
    assert rows["fails"]["passed_runs"] == 0
    assert rows["fails"]["failing_layers"] == {"outcome": 3, "trajectory": 3}
    assert rows["half"]["passed"] is True  # its required pass rate is 0
    assert rows["passes"]["latency_ms"]["p50"] > 0
    assert report.exit_code == result.exit_code == 1
    assert [a["scenario_id"] for a in result.aggregates] == ["passes", "fails", "half"]
    # The debriefs of the 6 failed runs are there, and count nowhere.
    assert len(list(out.glob("*.debrief.json"))) == 6
    assert sum(a["runs"] for a in report.scenarios) == 9


@pytest.mark.slow
async def test_junit_has_one_case_per_run_and_a_failure_per_failed_run(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    await run_pack(load_pack(write_pack(PACK)), hooks=["debrief"], out=out, fake_llm=llm)
    root = ET.fromstring(junit_xml(report_folder(out)))
    assert root.get("tests") == "9"
    assert root.get("failures") == "6"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"rep.passes", "rep.fails", "rep.half"}
    fails = suites["rep.fails"]
    assert len(fails.findall("testcase")) == 3
    failure = fails.find("testcase/failure")
    assert failure is not None
    assert failure.get("type") == "outcome,trajectory"
    assert "lookup was not called" in (failure.get("message") or "")


async def test_a_trace_without_a_score_counts_as_a_failed_run(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    text = "name: r\nagent: _eval_agents:plain\nscenarios: [{id: s, turns: [hi]}]\n"
    out = tmp_path / "runs"
    await run_pack(load_pack(write_pack(text)), out=out, fake_llm=llm)
    assert report_folder(out).exit_code == 0
    (score,) = out.glob("*.score.json")
    score.unlink()
    report = report_folder(out)
    assert report.exit_code == 1
    assert report.scenarios[0]["failing_layers"] == {"unscored": 1}


def test_a_run_found_in_a_folder_is_a_saved_run(tmp_path: Path) -> None:
    trace = tmp_path / "20260102T030405678Z_abcdefgh.json"
    trace.write_text('{"run_id": "abcdefgh", "turns": []}')

    (run,) = load_runs(tmp_path)

    assert isinstance(run, tether.eval.SavedRun)
    assert run.stem == "20260102T030405678Z_abcdefgh"


def test_the_old_name_run_record_still_works_with_a_deprecation_warning() -> None:
    """The hook engine's RunRecord is another thing; the eval one is SavedRun now."""
    with pytest.warns(DeprecationWarning, match=r"tether\.eval\.SavedRun"):
        old = tether.eval.RunRecord  # type: ignore[attr-defined]

    assert old is tether.eval.SavedRun
    assert "RunRecord" not in tether.eval.__all__
