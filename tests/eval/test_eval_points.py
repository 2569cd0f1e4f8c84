"""The run-level points with real runs (FakeLLM over HTTP): order, the scoped context,
converse only at on_run_scored, failures and hangs contained, the converse deadline."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _eval_support import PackFactory

from tether import Plugin, PluginError
from tether.eval import RunContext, available_hooks, load_pack, load_runs, run_pack
from tether.testing import FakeLLM

PACK = """\
name: points
agent: _eval_agents:plain
runs: {runs}
scenarios:
  - id: first
    turns: ["ticket one", "and a follow-up"]
    score:
      - contains: "{want}"
  - id: second
    turns: ["ticket two"]
"""


def pack_text(runs: int = 2, want: str = "triaged") -> str:
    return PACK.format(runs=runs, want=want)


class Recorder(Plugin):
    """Records each point it sees, into a list shared by the test's hooks."""

    def __init__(self, name: str, seen: list[tuple[str, str, Any]]) -> None:
        self.name = name
        self.seen = seen

    def note(self, ctx: RunContext, extra: Any = None) -> None:
        self.seen.append((ctx.point, self.name, extra))

    async def on_provisioned(self, ctx: RunContext) -> None:
        self.note(ctx, (ctx.scenario or {}).get("id"))

    async def on_run_start(self, ctx: RunContext) -> None:
        self.note(ctx, (ctx.run_id, ctx.session_id, ctx.trace, ctx.score))

    async def on_run_scored(self, ctx: RunContext) -> None:
        self.note(ctx, ctx.score["verdict"] if ctx.score else None)

    async def on_run_end(self, ctx: RunContext) -> None:
        self.note(ctx)

    async def on_scenario_end(self, ctx: RunContext) -> None:
        self.note(ctx, ctx.aggregate)

    async def on_pack_end(self, ctx: RunContext) -> None:
        self.note(ctx, ctx.aggregates)


async def test_points_fire_in_order_and_hooks_in_activation_order(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    seen: list[tuple[str, str, Any]] = []
    hooks = [Recorder("zeta", seen), Recorder("alpha", seen)]
    await run_pack(load_pack(write_pack(pack_text())), hooks=hooks, fake_llm=llm)
    per_run = ["on_run_start", "on_run_scored", "on_run_end"]
    scenario = ["on_provisioned", *per_run, *per_run, "on_scenario_end"]
    expected = [
        (point, hook)
        for point in [*scenario, *scenario, "on_pack_end"]
        for hook in ("zeta", "alpha")
    ]
    assert [(point, hook) for point, hook, _ in seen] == expected


async def test_each_run_starts_with_new_ids_and_nothing_in_its_trace_or_score(
    write_pack: PackFactory, llm: FakeLLM
) -> None:
    seen: list[tuple[str, str, Any]] = []
    await run_pack(load_pack(write_pack(pack_text())), hooks=[Recorder("r", seen)], fake_llm=llm)
    starts = [extra for point, _, extra in seen if point == "on_run_start"]
    assert len(starts) == 4
    assert len({run_id for run_id, _, _, _ in starts}) == 4
    assert len({session for _, session, _, _ in starts}) == 4
    assert all(trace is None and score is None for _, _, trace, score in starts)
    aggregates = [extra for point, _, extra in seen if point == "on_scenario_end"]
    assert [a["scenario_id"] for a in aggregates] == ["first", "second"]
    (pack_end,) = [extra for point, _, extra in seen if point == "on_pack_end"]
    assert [a["runs"] for a in pack_end] == [2, 2]


class Probe(Plugin):
    """Looks at the agent at the start of each run and talks to it once it is scored."""

    name = "probe"

    def __init__(self, llm: FakeLLM) -> None:
        self.llm = llm
        self.starts: list[dict[str, Any]] = []
        self.scored: list[dict[str, Any]] = []

    async def on_run_start(self, ctx: RunContext) -> None:
        self.starts.append({"snapshot": ctx.snapshot(), "requests": len(self.llm.requests)})

    async def on_run_scored(self, ctx: RunContext) -> None:
        before = ctx.snapshot()
        reply = await ctx.converse("What did you see? (debrief)")
        assert ctx.trace is not None
        self.scored.append(
            {
                "reply": reply,
                "turns": len(ctx.trace["turns"]),
                "unchanged": ctx.snapshot() == before,
                "messages": self.llm.requests[-1]["messages"],
                "requests": len(self.llm.requests),
            }
        )


async def test_run_start_is_after_the_reset_and_before_the_first_inject(
    write_pack: PackFactory, llm: FakeLLM
) -> None:
    probe = Probe(llm)
    await run_pack(load_pack(write_pack(pack_text())), hooks=[probe], fake_llm=llm)
    first_runs = probe.starts[:2]
    assert all(s["snapshot"]["conversation"] == [] for s in first_runs)
    # Nothing of the run reached the model yet: the requests so far are the runs before it
    # (two turns and one converse turn each).
    assert [s["requests"] for s in first_runs] == [0, 3]


async def test_converse_at_run_scored_talks_to_the_live_session_and_is_never_traced(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    probe = Probe(llm)
    out = tmp_path / "runs"
    await run_pack(load_pack(write_pack(pack_text())), hooks=[probe], out=out, fake_llm=llm)
    first = probe.scored[0]
    assert first["reply"] == llm.reply
    assert first["turns"] == 2
    assert first["unchanged"]
    # The agent answered with the run in context: both turns, then the converse text.
    texts = [str(m.get("content")) for m in first["messages"]]
    assert any("ticket one" in t for t in texts)
    assert any("and a follow-up" in t for t in texts)
    assert texts[-1] == "What did you see? (debrief)"
    for record in load_runs(out):
        assert all("debrief" not in turn["prompt"] for turn in record.trace["turns"])
        assert len(record.trace["turns"]) == len(record.trace["scenario"]["turns"])
    # The next run's conversation is fresh: no converse turn, no turn of the run before.
    assert all(s["snapshot"]["conversation"] == [] for s in probe.starts)


class ConverseEverywhere(Plugin):
    name = "talker"

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}

    async def _try(self, ctx: RunContext) -> None:
        try:
            self.answers[ctx.point] = await ctx.converse("hello?")
        except PluginError as exc:
            self.answers[ctx.point] = f"refused: {exc}"

    on_provisioned = on_run_start = on_run_scored = on_run_end = _try
    on_scenario_end = on_pack_end = _try


async def test_converse_is_valid_only_at_run_scored(write_pack: PackFactory, llm: FakeLLM) -> None:
    hook = ConverseEverywhere()
    await run_pack(load_pack(write_pack(pack_text(runs=1))), hooks=[hook], fake_llm=llm)
    assert hook.answers.pop("on_run_scored") == llm.reply
    assert set(hook.answers) == {
        "on_provisioned",
        "on_run_start",
        "on_run_end",
        "on_scenario_end",
        "on_pack_end",
    }
    for point, answer in hook.answers.items():
        assert answer == f"refused: converse() is valid only in on_run_scored, not in {point}"


class Broken(Plugin):
    name = "broken"

    async def _fail(self, ctx: RunContext) -> None:
        raise RuntimeError(f"boom at {ctx.point}")

    on_provisioned = on_run_start = on_run_scored = on_run_end = _fail
    on_scenario_end = on_pack_end = _fail


def _scores(out: Path) -> list[tuple[str, dict[str, Any]]]:
    return [
        (r.trace["scenario_id"], {k: r.score[k] for k in ("verdict", "layers", "passed")})
        for r in load_runs(out)
        if r.score is not None
    ]


@pytest.mark.slow
async def test_a_failing_hook_is_a_warning_and_changes_no_score_nor_exit_code(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    pack = load_pack(write_pack(pack_text(want="P1")))  # "first" fails on purpose
    plain = await run_pack(pack, out=tmp_path / "plain", fake_llm=llm)
    broken = await run_pack(
        pack, hooks=[Broken(), Recorder("after", [])], out=tmp_path / "broken", fake_llm=llm
    )
    assert plain.exit_code == broken.exit_code == 1
    assert _scores(tmp_path / "plain") == _scores(tmp_path / "broken")
    for record in load_runs(tmp_path / "broken"):
        assert record.trace["worker_warnings"] == [
            f"hook:broken: RuntimeError('boom at {point}')"
            for point in ("on_run_start", "on_run_scored", "on_run_end")
        ]
    assert broken.warnings["first"] == [
        "hook:broken: RuntimeError('boom at on_provisioned')",
        "hook:broken: RuntimeError('boom at on_scenario_end')",
    ]
    assert broken.warnings["pack"] == ["hook:broken: RuntimeError('boom at on_pack_end')"]
    summary = json.loads(next((tmp_path / "broken").glob("*.pack.json")).read_text())
    assert summary["warnings"] == broken.warnings


class Hangs(Plugin):
    name = "hangs"
    timeout = 0.3

    async def on_run_start(self, ctx: RunContext) -> None:
        await asyncio.Event().wait()

    async def on_run_end(self, ctx: RunContext) -> None:
        for _ in range(2):  # swallows its cancellation: abandoned all the same
            try:
                await asyncio.sleep(0.5)
            except asyncio.CancelledError:
                continue


@pytest.mark.slow
async def test_a_hung_hook_is_cut_off_at_its_deadline_and_the_next_hook_runs(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    seen: list[tuple[str, str, Any]] = []
    result = await run_pack(
        load_pack(write_pack(pack_text(runs=1))),
        hooks=[Hangs(), Recorder("next", seen)],
        out=tmp_path / "runs",
        fake_llm=llm,
    )
    assert result.exit_code == 0
    assert [p for p, _, _ in seen].count("on_run_end") == 2
    for record in load_runs(tmp_path / "runs"):
        assert record.score is not None
        assert record.score["verdict"] == "PASS"
        assert record.trace["worker_warnings"] == [
            "hook:hangs: on_run_start timed out after 0.3s",
            "hook:hangs: on_run_end timed out after 0.3s",
        ]


class SlowModel(Plugin):
    """Makes the fake model slow for the converse turns (the runner resets it per run)."""

    name = "slow"

    def __init__(self, llm: FakeLLM) -> None:
        self.llm = llm

    async def on_run_scored(self, ctx: RunContext) -> None:
        self.llm.latency = 2.0


@pytest.mark.slow
async def test_converse_is_bounded_by_the_framework_deadline_and_timed_out_is_stamped(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_HOOK_CONVERSE_TIMEOUT_S", "0.3")
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    out = tmp_path / "runs"
    result = await run_pack(
        load_pack(write_pack(pack_text(runs=1))),
        hooks=[SlowModel(llm), "debrief"],
        out=out,
        fake_llm=llm,
    )
    assert result.exit_code == 0
    records = load_runs(out)
    assert len(records) == 2
    for record in records:
        debrief = json.loads(record.artifacts["debrief"].read_text())
        assert debrief["timed_out"] is True
        assert debrief["reply"] is None
        assert debrief["duration_ms"] < 2000  # cut at the deadline, not at the model's answer
        assert record.trace["worker_warnings"] == [
            "hook:debrief: debrief incomplete: converse timed out"
        ]
        assert record.score is not None
        assert record.score["verdict"] == "PASS"


class Emitter(Plugin):
    name = "emitter"

    async def on_run_scored(self, ctx: RunContext) -> None:
        await ctx.converse("anything to add?")
        ctx.emit_artifact({"seen": ctx.run_id})
        ctx.emit_artifact({"extra": True}, label="more")
        with pytest.raises(PluginError, match="already emitted"):
            ctx.emit_artifact({"again": True}, label="more")
        assert ctx.score is not None
        assert ctx.trace is not None
        ctx.score["passed"] = not ctx.score["passed"]  # a copy: changes nothing kept
        ctx.trace["turns"].clear()

    async def on_scenario_end(self, ctx: RunContext) -> None:
        ctx.emit_artifact({"scenario": (ctx.scenario or {}).get("id")})

    async def on_pack_end(self, ctx: RunContext) -> None:
        ctx.emit_artifact({"scenarios": len(ctx.aggregates or [])}, label="summary")


async def test_artifacts_are_sidecars_stamped_after_converse_and_copies_protect_the_run(
    write_pack: PackFactory, llm: FakeLLM, tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    result = await run_pack(
        load_pack(write_pack(pack_text(runs=1))), hooks=[Emitter()], out=out, fake_llm=llm
    )
    records = load_runs(out)
    assert len(records) == 2
    for record in records:
        assert sorted(record.artifacts) == ["emitter", "emitter.more"]
        payload = json.loads(record.artifacts["emitter"].read_text())
        assert payload == {
            "seen": record.trace["run_id"],
            "tools_disabled": True,
            "timed_out": False,
        }
        assert record.score is not None
        assert record.score["passed"] is True
        assert len(record.trace["turns"]) == len(record.trace["scenario"]["turns"])
    roots = sorted(p.name for p in out.iterdir() if p.name.endswith(".pack.json"))
    sweep = result.sweep
    assert roots == [
        f"{sweep}.emitter.first.pack.json",
        f"{sweep}.emitter.second.pack.json",
        f"{sweep}.emitter.summary.pack.json",
        f"{sweep}.pack.json",
    ]


def test_an_unknown_hook_name_is_an_error_listing_the_available_names() -> None:
    from tether.eval import resolve_hooks

    with pytest.raises(PluginError) as caught:
        resolve_hooks(["debreif"])
    message = str(caught.value)
    assert message.startswith("unknown hook 'debreif'; available: ")
    for name in ("debrief", "isolation"):
        assert name in message
    assert set(available_hooks()) >= {"debrief", "isolation"}


def test_a_plugin_without_run_level_points_cannot_be_an_eval_hook() -> None:
    from tether.eval import resolve_hooks

    class ProcessOnly(Plugin):
        name = "process-only"

        async def on_task_completed(self, ctx: Any) -> None: ...

    with pytest.raises(PluginError, match="defines no run-level point"):
        resolve_hooks([ProcessOnly()])

    class Misspelled(Plugin):
        name = "typo"

        async def on_run_scroed(self, ctx: Any) -> None: ...

    with pytest.raises(PluginError, match="did you mean on_run_scored"):
        resolve_hooks([Misspelled()])

    class Sync(Plugin):
        name = "sync"

        def on_run_end(self, ctx: Any) -> None: ...

    with pytest.raises(PluginError, match="on_run_end must be an async method"):
        resolve_hooks([Sync()])
