"""A pack of 100 runs x 3 turns through ``tether eval``, against FakeLLM over HTTP.

Run: ``.venv/bin/python bench/eval.py``

Every row is measured in this one run. "FakeLLM" rows serve the model from the same FakeLLM
(a real OpenAI-compatible server on 127.0.0.1: each model turn is one HTTP request);
"scripted" rows use the in-process ScriptedModel, which leaves the machinery alone. A
"process" row is the baseline: the same 300 turns injected into one AgentProcess, each
awaited (no harness: no trace, score or files; the conversation is emptied every 3 turns, as
the harness's reset does, so requests are the same size). An "eval" row runs the pack with
``run_pack``: 100 runs of one 3-turn scenario, each reset, traced, scored and written (trace
and score files) to a temporary runs folder; "+ debrief" adds the built-in debrief hook on
every run (``TETHER_DEBRIEF_ON=all``: one more model turn per run, and an artifact).
"overhead" is per turn, beside the baseline of the same model.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tether import AgentProcess, HookContext, HookEvent, ProcessConfig, TriggerEvent
from tether.eval import load_pack, run_pack
from tether.models import OpenAIModel
from tether.testing import FakeLLM

RUNS = 100
TURNS = 3
REPEATS = 2

PACK = f"""\
name: bench
agent: bench_agents:triage
runs: {RUNS}
scenarios:
  - id: triage
    turns: ["The checkout page is blank.", "Which team?", "How urgent?"]
    score:
      - contains: triaged
"""

AGENTS = """\
from tether import ProcessConfig


def triage() -> ProcessConfig:
    return ProcessConfig(model="scripted", instructions="You triage tickets.", max_retries=0)
"""


async def baseline(llm: FakeLLM | None) -> float:
    """Seconds for RUNS * TURNS turns injected one after the other into one process."""
    model: Any = "scripted"
    if llm is not None:
        model = OpenAIModel("fake-llm", base_url=llm.base_url, api_key="x", max_retries=0)
    process = AgentProcess("bench", ProcessConfig(model=model, instructions="You triage."))
    done: dict[str, asyncio.Future[None]] = {}

    async def completed(ctx: HookContext) -> None:
        waiter = done.pop(str(ctx.data.get("event_id")), None)
        if waiter is not None:
            waiter.set_result(None)

    process.hooks.register(HookEvent.TASK_COMPLETED, completed)
    await process.start()
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    for i in range(RUNS * TURNS):
        if i % TURNS == 0:  # the conversation of one run at a time, as the harness has it
            process.context.conversation.drop_last(len(process.context.conversation))
        event = TriggerEvent("bench", "eval", f"turn {i}")
        done[event.event_id] = loop.create_future()
        waiter = done[event.event_id]
        await process.inject(event)
        await waiter
    elapsed = time.perf_counter() - started
    await process.stop()
    await process.aclose()
    return elapsed


async def harness(llm: FakeLLM | None, folder: Path, hooks: list[str]) -> float:
    pack = load_pack(folder / "pack.yaml")
    out = Path(tempfile.mkdtemp(dir=folder))
    started = time.perf_counter()
    result = await run_pack(pack, hooks=hooks, out=out, fake_llm=llm)
    elapsed = time.perf_counter() - started
    assert result.aggregates[0]["runs"] == RUNS, result.aggregates
    assert result.passed, result.aggregates
    assert len(result.traces) == RUNS
    return elapsed


async def main() -> None:
    os.environ["TETHER_DEBRIEF_ON"] = "all"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pack.yaml").write_text(PACK)
        (folder / "bench_agents.py").write_text(AGENTS)
        rows: dict[str, list[float]] = {
            "process, scripted": [],
            "eval, scripted": [],
            "eval + debrief, scripted": [],
            "process, FakeLLM": [],
            "eval, FakeLLM": [],
            "eval + debrief, FakeLLM": [],
        }
        for _ in range(REPEATS):
            rows["process, scripted"].append(await baseline(None))
            rows["eval, scripted"].append(await harness(None, folder, []))
            rows["eval + debrief, scripted"].append(await harness(None, folder, ["debrief"]))
        async with FakeLLM(port=0) as llm:
            llm.reply = "Ticket triaged: P2, routed to the web team."
            for _ in range(REPEATS):
                rows["process, FakeLLM"].append(await baseline(llm))
                rows["eval, FakeLLM"].append(await harness(llm, folder, []))
                rows["eval + debrief, FakeLLM"].append(await harness(llm, folder, ["debrief"]))
    turns = RUNS * TURNS
    print(f"tether eval: {RUNS} runs x {TURNS} turns (median of {REPEATS})")
    print(f"{'row':<26} {'total s':>8} {'runs/s':>8} {'ms/turn':>8} {'overhead ms/turn':>17}")
    for name, times in rows.items():
        total = statistics.median(times)
        base = statistics.median(rows[f"process, {name.split(', ')[1]}"])
        overhead = "" if name.startswith("process") else f"{(total - base) / turns * 1e3:+.2f}"
        print(
            f"{name:<26} {total:>8.2f} {RUNS / total:>8.1f} {total / turns * 1e3:>8.2f} "
            f"{overhead:>17}"
        )


if __name__ == "__main__":
    asyncio.run(main())
