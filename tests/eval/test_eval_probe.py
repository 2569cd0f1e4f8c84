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


@pytest.mark.slow
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


class World(StateProbeHook):
    """A probe answering a shallow copy of a world the test changes between runs."""

    name = "world"

    def __init__(self, key: str = "notes", big: int = 0) -> None:
        super().__init__()
        self.world: dict[str, Any] = {key: []}
        self.key, self.big, self.probes = key, big, 0

    async def probe(self, ctx: RunContext) -> Any:
        self.probes += 1
        if self.probes == 3:  # between the first run's end and the second's start: a leak
            self.world[self.key].append("x" * self.big or "left over")
        return dict(self.world)  # shallow: the list inside is the world's own


async def test_the_baseline_is_a_snapshot_so_a_shallow_copying_probe_cannot_hide_a_leak(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: the baseline held what the probe answered; a probe answering a shallow
    copy saw the baseline change with the world, and the leak was never reported."""
    text = "name: p\nagent: _eval_agents:plain\nruns: 2\nscenarios: [{id: s, turns: [hi]}]\n"
    await run_pack(load_pack(write_pack(text)), hooks=[World()], out=tmp_path, fake_llm=llm)
    first, second = _leaks(tmp_path)
    assert first == []
    assert len(second) == 1
    assert 'notes is ["left over"], was []' in second[0]


async def test_a_violation_artifact_stays_under_4000_characters_with_its_values_cut(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: a 5,000-character key and value made a 10,232-character artifact, though
    document 002 says the violation artifact is bounded."""
    text = "name: p\nagent: _eval_agents:plain\nruns: 2\nscenarios: [{id: s, turns: [hi]}]\n"
    probe = World(key="k" * 5000, big=5000)
    await run_pack(load_pack(write_pack(text)), hooks=[probe], out=tmp_path, fake_llm=llm)
    _, second = load_runs(tmp_path)
    artifact = second.artifacts["world"].read_text()
    assert len(artifact) < 4000
    violation = json.loads(artifact)
    assert "more characters cut]" in violation["mismatches"][0]
    assert violation["run_id"] == second.trace["run_id"]


def test_bounded_cuts_what_the_run_before_left_and_counts_the_mismatches_it_drops() -> None:
    from tether.eval._probe import bounded

    artifact = {
        "run_id": "r2",
        "mismatches": [f"key{i} is {'v' * 500}, was 0" for i in range(40)],
        "previous_run_left": {"blob": "b" * 20_000},
    }
    out = bounded(artifact)
    assert len(json.dumps(out)) < 4000
    assert out["previous_run_left"].endswith("more characters cut]")
    assert out["mismatches"][-1].startswith("... and ")
    assert out["mismatches"][0].startswith("key0 is ")
