"""One model call with a pre_model_call and a post_model_call callback hook, beside the same
call unhooked (issue 26's ceiling: at most 50 µs more).

Run: ``.venv/bin/python bench/model_hooks.py``. Each run is one agent-loop run whose model
answers at once with text: one model call, through FakeLLM (a real HTTP server, no latency)
and, for a figure without the HTTP round trip's noise, through a ScriptedModel in process.
The rows of one model differ only in the hooks the manager holds; batches of every row are
interleaved, so drift in the machine hits all alike, and the best batch of each row is kept.
The overhead column is the row's time less its unhooked row's, measured in the same run.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from tether import HookContext, HookEvent, HookManager
from tether.agent import AgentContext, AgentLoop
from tether.models import Model, OpenAIModel, ScriptedModel
from tether.testing import FakeLLM

HTTP_BATCH = 50
SCRIPTED_BATCH = 500
REPEATS = 9
CEILING_US = 50.0


def make_loop(model: Model, hooks: HookManager) -> AgentLoop:
    async def emit(event: HookEvent, data: dict[str, Any], **options: Any) -> Any:
        return await hooks.dispatch(event, data, process_id="bench", **options)

    return AgentLoop(
        model=model, instructions="You triage tickets.", context=AgentContext(4), emit=emit
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
        best = [float("inf")] * len(rows)
        for round_ in range(REPEATS + 1):  # round 0 warms every path
            for i, (_, loop, size) in enumerate(rows):
                scripted.requests.clear()
                us = await time_batch(loop, size)
                if round_:
                    best[i] = min(best[i], us)
        await http.aclose()
    print("one agent run: one model call answered with text (best batch of each row)")
    print(f"{'':<44}{'µs/run':>10}{'overhead µs':>14}")
    for i, ((label, _, _), us) in enumerate(zip(rows, best, strict=True)):
        base = best[i - i % 2]
        print(f"{label:<44}{us:>10.1f}{us - base:>14.1f}")
    worst = max(best[1] - best[0], best[3] - best[2])
    verdict = "within" if worst <= CEILING_US else "OVER"
    print(
        f"ceiling: {CEILING_US:g} µs more with the hooks; measured at most {worst:.1f}: {verdict}"
    )


if __name__ == "__main__":
    asyncio.run(main())
