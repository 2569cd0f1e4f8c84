"""One model call with a pre_model_call and a post_model_call callback hook, beside the same
call unhooked (issue 26's ceiling: at most 50 µs more).

Run: ``.venv/bin/python bench/model_hooks.py``. Each run is one agent-loop run whose model
answers at once with text: one model call, through FakeLLM (a real HTTP server, no latency)
and, for a figure without the HTTP round trip's noise, through a ScriptedModel in process.
The rows of one model differ only in the hooks the manager holds; batches of every row are
interleaved (in turn forward and backward, so neither row always follows the other), drift in
the machine hits all alike, and the best and the median batch of each row are kept. The
overhead columns are the row's time less its unhooked row's, measured in the same run. An HTTP
round trip's spread is larger than the hooks' cost: the ScriptedModel rows are the precise
figure, the FakeLLM ones show it holds over a real server.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from typing import Any

from tether import HookContext, HookEvent, HookManager
from tether.agent import AgentContext, AgentLoop
from tether.models import Model, OpenAIModel, ScriptedModel
from tether.testing import FakeLLM

HTTP_BATCH = 25
SCRIPTED_BATCH = 500
REPEATS = 30
CEILING_US = 50.0


def make_loop(model: Model, hooks: HookManager) -> AgentLoop:
    async def emit(event: HookEvent, data: dict[str, Any], **options: Any) -> Any:
        return await hooks.dispatch(event, data, process_id="bench", **options)

    # As a process builds it: an event no hook listens to is not dispatched at all.
    return AgentLoop(
        model=model,
        instructions="You triage tickets.",
        context=AgentContext(4),
        emit=emit,
        listens=hooks.listens,
    )


def callbacks() -> HookManager:
    """One callback hook on each side of the call, reading what a policy hook reads."""
    hooks = HookManager(default_timeout=30.0)

    async def pre(ctx: HookContext) -> None:
        ctx.get("messages")

    async def post(ctx: HookContext) -> None:
        ctx.get("response")

    hooks.register(HookEvent.PRE_MODEL_CALL, pre)
    hooks.register(HookEvent.POST_MODEL_CALL, post)
    return hooks


async def time_batch(loop: AgentLoop, size: int) -> float:
    """µs per run, over ``size`` runs."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(size):
            await loop.run("Login page is down")
        return (time.perf_counter() - start) / size * 1e6
    finally:
        gc.enable()


async def main() -> None:
    async with FakeLLM(port=0, reply="P2, web team.") as llm:
        http = OpenAIModel("gpt-4o", base_url=llm.base_url, api_key="bench")
        scripted = ScriptedModel(reply="P2, web team.")
        rows = [
            ("FakeLLM over HTTP, no hooks", make_loop(http, HookManager()), HTTP_BATCH),
            ("FakeLLM over HTTP, pre + post callback", make_loop(http, callbacks()), HTTP_BATCH),
            ("ScriptedModel, no hooks", make_loop(scripted, HookManager()), SCRIPTED_BATCH),
            (
                "ScriptedModel, pre + post callback",
                make_loop(scripted, callbacks()),
                SCRIPTED_BATCH,
            ),
        ]
        times: list[list[float]] = [[] for _ in rows]
        for round_ in range(REPEATS + 1):  # round 0 warms every path
            order = range(len(rows)) if round_ % 2 else reversed(range(len(rows)))
            for i in order:
                _, loop, size = rows[i]
                scripted.requests.clear()
                us = await time_batch(loop, size)
                if round_:
                    times[i].append(us)
        await http.aclose()
    best = [min(t) for t in times]
    median = [statistics.median(t) for t in times]
    print("one agent run: one model call answered with text (best and median batch of each row)")
    print(f"{'':<42}{'best µs':>10}{'+µs':>8}{'median µs':>12}{'+µs':>8}")
    for i, (label, _, _) in enumerate(rows):
        base = i - i % 2
        print(
            f"{label:<42}{best[i]:>10.1f}{best[i] - best[base]:>8.1f}"
            f"{median[i]:>12.1f}{median[i] - median[base]:>8.1f}"
        )
    precise = best[3] - best[2]
    verdict = "within" if precise <= CEILING_US else "OVER"
    print(f"ceiling: {CEILING_US:g} µs more with the hooks; in process {precise:.1f}: {verdict}")


if __name__ == "__main__":
    asyncio.run(main())
