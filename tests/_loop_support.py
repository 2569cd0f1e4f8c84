"""An agent loop for a test: no instructions, a fresh hook manager per event, given tools."""

from __future__ import annotations

import asyncio
from typing import Any

from tether.agent import AgentContext, AgentLoop
from tether.hooks import DispatchResult, HookEvent, HookManager

#: An API key for a model served by FakeLLM (a secret the tests look for in what leaks).
KEY = "sk-review-0123456789"


async def emit(event: HookEvent, data: dict[str, Any], **options: Any) -> DispatchResult:
    """Dispatch to an empty manager: the events fire, nothing is hooked."""
    return await HookManager().dispatch(event, data, process_id="review", **options)


def make_loop(model: Any, *tools: Any, **options: Any) -> AgentLoop:
    """An AgentLoop over ``model`` offering ``tools``; ``options`` go to AgentLoop."""
    loop = AgentLoop(model=model, instructions="", context=AgentContext(50), emit=emit, **options)
    for fn in tools:
        loop.add_tool(fn)
    return loop


def stubborn_crm(went_on: list[str], carries_on_s: float = 3.0) -> Any:
    """A tool ``crm`` that swallows the cancellation ending it and carries on for a while,
    noting "cancelled" in ``went_on`` when cancelled and "finished" if it ever gets there."""

    async def crm() -> str:
        """Query the CRM."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            went_on.append("cancelled")
            await asyncio.sleep(carries_on_s)
            went_on.append("finished")
        return "late"

    return crm
