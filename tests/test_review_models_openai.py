"""Review: OpenAIModel configuration faults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tether.agent import AgentContext, AgentLoop
from tether.hooks import DispatchResult, HookEvent, HookManager
from tether.models import ModelConfigError, OpenAIModel
from tether.testing import FakeLLM

KEY = "sk-review-0123456789"


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM(port=0) as server:
        server.retry_after = 0.01  # keep the SDK's retry backoff short
        yield server


async def emit(event: HookEvent, data: dict[str, Any]) -> DispatchResult:
    return await HookManager().dispatch(event, data, process_id="review")


def make_loop(model: Any, *tools: Any, **options: Any) -> AgentLoop:
    loop = AgentLoop(model=model, instructions="", context=AgentContext(50), emit=emit, **options)
    for fn in tools:
        loop.add_tool(fn)
    return loop


def tool_messages(llm: FakeLLM) -> list[str]:
    """The tool results the model was sent, in order, across all requests."""
    seen: list[str] = []
    for body in llm.requests:
        for message in body["messages"]:
            if message.get("role") == "tool" and message["content"] not in seen:
                seen.append(message["content"])
    return seen


async def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


async def test_an_invalid_base_url_is_a_model_config_error_naming_it() -> None:
    """Regression: httpx's InvalidURL escaped complete(), which promises ModelError only."""
    model = OpenAIModel("m", base_url="http://[::1", api_key=KEY, max_retries=0)
    with pytest.raises(ModelConfigError, match=r"base URL 'http://\[::1'"):
        await model.complete([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("timeout", ["5", None, True, float("inf")])
def test_a_timeout_that_is_not_a_finite_number_is_refused_at_construction(timeout: Any) -> None:
    """Regression: "5" and None raised a bare TypeError, and True (1 s) and inf (an endpoint
    that never answers hangs the run) were accepted."""
    with pytest.raises(ModelConfigError, match=r"timeout must be a number of seconds > 0"):
        OpenAIModel("m", timeout=timeout)
