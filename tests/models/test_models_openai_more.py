"""Review: OpenAIModel faults, of its configuration and of its endpoint (over real sockets)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from _loop_support import KEY
from tether.models import ModelConfigError, ModelUnavailableError, OpenAIModel, resolve_model


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


#: A bound for a test that must not hang; never a timing assertion.
NO_HANG = 30


class Trickle:
    """An endpoint that answers 200 and then sends its body a byte at a time, for hours."""

    def __init__(self) -> None:
        self.handlers: set[asyncio.Task[None]] = set()

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            writer.write(b"content-length: 100000\r\n\r\n")
            with contextlib.suppress(ConnectionError):
                for _ in range(100_000):
                    writer.write(b" ")
                    await writer.drain()
                    await asyncio.sleep(0.05)
        finally:
            writer.close()

    async def aclose(self) -> None:
        for task in self.handlers:
            task.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)


async def test_an_endpoint_that_trickles_its_answer_fails_within_the_timeout() -> None:
    """Regression: the timeout bounded each read, not the answer, so a body sent a byte at a
    time never timed out and the run hung."""
    trickle = Trickle()
    server = await asyncio.start_server(trickle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    try:
        async with OpenAIModel("m", base_url=url, api_key=KEY, timeout=0.5, max_retries=0) as m:
            async with asyncio.timeout(NO_HANG):
                with pytest.raises(
                    ModelUnavailableError, match=r"no complete answer from .* within 1.5 s"
                ):
                    await m.complete([{"role": "user", "content": "hi"}])
    finally:
        await trickle.aclose()
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("spec", ["openai: gpt-5-mini", "openai:gpt-5-mini\n"])
def test_a_model_name_with_surrounding_spaces_is_refused_when_resolved(spec: str) -> None:
    """Regression: 'openai: gpt-5-mini' was accepted and sent ' gpt-5-mini', which the
    endpoint answers with a 404 on every run."""
    with pytest.raises(ModelConfigError, match=r"model name .* has spaces around it"):
        resolve_model(spec)
