"""One tool call with a pre_tool_use and a post_tool_use hook, beside the same call unhooked.

Run: ``.venv/bin/python bench/tools.py``. Each run is one agent-loop run of a scripted model
(no latency) that calls one tool once, then answers: two model turns and one tool call. The
rows differ only in the hooks the manager holds; batches of every row are interleaved, so
drift in the machine hits all alike, and the best batch of each row is kept. The overhead
column is the row's time less the unhooked row's, measured in the same run.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any, Literal

from tether import HookConfig, HookContext, HookEvent, HookManager
from tether.agent import AgentContext, AgentLoop
from tether.models import ScriptedModel

BATCH = 200
REPEATS = 7
COMMAND_BATCH = 20
PROGRAM = "/bin/true"


async def lookup_order(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


def make_loop(hooks: HookManager) -> tuple[AgentLoop, ScriptedModel]:
    model = ScriptedModel(reply="Shipped.")

    async def emit(event: HookEvent, data: dict[str, Any], **options: Any) -> Any:
        return await hooks.dispatch(event, data, process_id="bench", **options)

    loop = AgentLoop(model=model, instructions="", context=AgentContext(4), emit=emit)
    loop.add_tool(lookup_order)
    return loop, model


def callbacks() -> HookManager:
    hooks = HookManager(default_timeout=30.0)

    async def pre(ctx: HookContext) -> None:
        ctx.get("arguments")

    async def post(ctx: HookContext) -> None:
        ctx.get("result")

    hooks.register(HookEvent.PRE_TOOL_USE, pre)
    hooks.register(HookEvent.POST_TOOL_USE, post)
    return hooks


def commands(protocol: Literal["tether", "claude-code"]) -> HookManager:
    hooks = HookManager()
    for event in ("pre_tool_use", "post_tool_use"):
        hooks.register_config(HookConfig(event=event, command=[PROGRAM], protocol=protocol))
    return hooks


def matched_out() -> HookManager:
    """Command hooks whose matcher the call does not match: nothing is spawned."""
    hooks = HookManager()
    for event in ("pre_tool_use", "post_tool_use"):
        hooks.register_config(
            HookConfig(event=event, command=[PROGRAM], matcher={"tool_name": "deploy*"})
        )
    return hooks


async def time_batch(loop: AgentLoop, model: ScriptedModel, size: int) -> float:
    """µs per run, over ``size`` runs."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(size):
            model.tool_calls.append(("lookup_order", {"order_id": 7}))
            await loop.run("Where is order 7?")
        return (time.perf_counter() - start) / size * 1e6
    finally:
        gc.enable()


async def main() -> None:
    rows: list[tuple[str, Callable[[], HookManager], int]] = [
        ("unhooked (empty manager)", HookManager, BATCH),
        ("pre + post callback hooks", callbacks, BATCH),
        ("pre + post command hooks, not matched", matched_out, BATCH),
        (f"pre + post command hooks ({PROGRAM})", lambda: commands("tether"), COMMAND_BATCH),
        ("pre + post claude-code command hooks", lambda: commands("claude-code"), COMMAND_BATCH),
    ]
    loops = [(label, *make_loop(factory()), size) for label, factory, size in rows]
    best = [float("inf")] * len(loops)
    for round_ in range(REPEATS + 1):  # round 0 warms every path
        for i, (_, loop, model, size) in enumerate(loops):
            us = await time_batch(loop, model, size)
            if round_:
                best[i] = min(best[i], us)
    base = best[0]
    print("one agent run: two scripted model turns and one tool call (best batch of each row)")
    print(f"{'':<42}{'µs/run':>12}{'overhead µs':>14}")
    for (label, *_), us in zip(loops, best, strict=True):
        print(f"{label:<42}{us:>12.1f}{us - base:>14.1f}")


if __name__ == "__main__":
    asyncio.run(main())
