"""State probes: the first run's post-reset state is the baseline; later runs that start
from something else are reported (warning + violation artifact), never scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _eval_support import PackFactory

from tether.eval import RunContext, StateProbeHook, load_pack, load_runs, run_pack
from tether.testing import FakeLLM


def _pack(agent: str, tool: str, arguments: dict[str, Any], reset: str = "") -> str:
    return f"""\
name: probe
agent: {agent}
runs: 3
scenarios:
  - id: leaky
    {reset}
    fake_llm:
      tool_calls: [{{name: {tool}, arguments: {json.dumps(arguments)}}}]
    turns: ["do the thing"]
"""


def _leaks(out: Path) -> list[list[str]]:
    return [r.trace["worker_warnings"] for r in load_runs(out)]


async def test_files_a_run_leaves_under_the_declared_path_are_reported_at_the_next_runs(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("EVAL_TEST_DIR", str(work))
    monkeypatch.setenv("TETHER_ISOLATION_PATH", str(work))
    out = tmp_path / "runs"
    pack = _pack("_eval_agents:file_writer", "write_note", {"name": "left.txt", "text": "x"})
    result = await run_pack(load_pack(write_pack(pack)), hooks=["isolation"], out=out, fake_llm=llm)
    assert result.exit_code == 0  # a leak is evidence, not a failed score
    first, second, third = load_runs(out)
    assert first.trace["worker_warnings"] == []
    assert "isolation" not in first.artifacts
    for later in (second, third):
        (warning,) = later.trace["worker_warnings"]
        assert warning.startswith("hook:isolation: run started with state the reset did not clear")
        assert "left.txt" in warning
        violation = json.loads(later.artifacts["isolation"].read_text())
        assert violation["baseline_run_id"] == first.trace["run_id"]
        assert any("left.txt" in m and "appeared" in m for m in violation["mismatches"])
    (summary,) = out.glob(f"{result.sweep}.isolation.leaky.pack.json")
    assert json.loads(summary.read_text())["runs_with_leaks"] == 2


async def test_state_notes_kept_across_runs_are_a_leak_and_a_full_reset_is_clean(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    arguments = {"key": "ticket", "value": "P1"}
    leaky = _pack("_eval_agents:stateful", "update_state", arguments, "reset: {state: false}")
    await run_pack(
        load_pack(write_pack(leaky)), hooks=["isolation"], out=tmp_path / "leaky", fake_llm=llm
    )
    warnings = _leaks(tmp_path / "leaky")
    assert warnings[0] == []
    assert all(len(w) == 1 and "state['ticket'] appeared" in w[0] for w in warnings[1:])

    clean = _pack("_eval_agents:stateful", "update_state", arguments)
    await run_pack(
        load_pack(write_pack(clean, "clean.yaml")),
        hooks=["isolation"],
        out=tmp_path / "clean",
        fake_llm=llm,
    )
    assert _leaks(tmp_path / "clean") == [[], [], []]


async def test_a_conversation_carried_into_the_next_run_is_a_leak(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    text = """\
    name: probe
    agent: _eval_agents:plain
    runs: 2
    scenarios:
      - id: chatty
        reset: {conversation: false}
        turns: ["hello"]
    """
    await run_pack(load_pack(write_pack(text)), hooks=["isolation"], out=tmp_path, fake_llm=llm)
    first, second = _leaks(tmp_path)
    assert first == []
    assert "conversation['messages'] is 2, was 0" in second[0]


class Counting(StateProbeHook):
    """A probe of a counter the test controls: each run sees a new value."""

    name = "counting"

    def __init__(self) -> None:
        super().__init__()
        self.value = 0

    async def probe(self, ctx: RunContext) -> Any:
        self.value += 1
        return {"counter": self.value // 2}  # the same at a run's start and end


async def test_a_subclass_only_says_what_to_probe(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    text = "name: p\nagent: _eval_agents:plain\nruns: 2\nscenarios: [{id: s, turns: [hi]}]\n"
    await run_pack(load_pack(write_pack(text)), hooks=[Counting()], out=tmp_path, fake_llm=llm)
    first, second = _leaks(tmp_path)
    assert first == []
    assert second == [
        "hook:counting: run started with state the reset did not clear (1 mismatch(es)): "
        "counter is 1, was 0"
    ]
