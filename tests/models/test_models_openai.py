"""OpenAIModel against FakeLLM over real HTTP, through the official openai SDK."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import traceback
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tether.models import (
    ModelConfigError,
    ModelError,
    ModelResponseError,
    ModelUnavailableError,
    OpenAIModel,
    ToolCall,
    resolve_model,
)
from tether.testing import FakeLLM

KEY = "sk-test-do-not-leak-0123456789"
USER = [{"role": "user", "content": "Login page is down"}]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "update_state",
            "description": "Record a decision.",
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {}},
                "required": ["key", "value"],
            },
        },
    }
]


@pytest.fixture
async def model(llm: FakeLLM) -> AsyncIterator[OpenAIModel]:
    async with OpenAIModel("gpt-5-mini", base_url=llm.base_url, api_key=KEY, timeout=5) as m:
        yield m


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nothing listens on, held (bound, not listening) so nobody else takes it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def full_text(exc: BaseException) -> str:
    """The message and the whole printed traceback, chained causes included."""
    return str(exc) + "".join(traceback.format_exception(exc))


async def test_a_text_answer_comes_back_as_content(model: OpenAIModel, llm: FakeLLM) -> None:
    reply = await model.complete(USER)
    assert reply.content == llm.reply
    assert reply.tool_calls == []
    assert reply.raw is not None
    assert reply.raw["object"] == "chat.completion"


async def test_the_request_carries_the_model_name_and_messages(
    model: OpenAIModel, llm: FakeLLM
) -> None:
    await model.complete(USER)
    assert llm.requests[0]["model"] == "gpt-5-mini"
    assert llm.requests[0]["messages"] == USER
    assert "tools" not in llm.requests[0]
    assert llm.prompts == ["Login page is down"]


async def test_tools_are_sent_and_a_tool_call_comes_back(model: OpenAIModel, llm: FakeLLM) -> None:
    llm.tool_calls = [("update_state", {"key": "priority", "value": "high"})]
    reply = await model.complete(USER, tools=TOOLS)
    assert llm.requests[0]["tools"] == TOOLS
    assert reply.content is None
    assert reply.tool_calls == [
        ToolCall(id="call_1", name="update_state", arguments='{"key": "priority", "value": "high"}')
    ]
    assert json.loads(reply.tool_calls[0].arguments) == {"key": "priority", "value": "high"}


async def test_a_tool_round_trip_sends_assistant_and_tool_messages_in_wire_format(
    model: OpenAIModel, llm: FakeLLM
) -> None:
    llm.tool_calls = [("update_state", {"key": "priority", "value": "high"})]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Triage."}, *USER]
    first = await model.complete(messages, tools=TOOLS)
    messages.append(first.to_message())
    messages.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "ok"})
    second = await model.complete(messages, tools=TOOLS)
    assert second.content == llm.reply
    sent = llm.requests[1]["messages"]
    assert sent[2]["tool_calls"][0]["id"] == "call_1"
    assert sent[2]["tool_calls"][0]["function"]["name"] == "update_state"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
    assert llm.prompts == ["Login page is down", "Login page is down"]


async def test_server_errors_raise_unavailable_after_max_retries(llm: FakeLLM) -> None:
    llm.errors = [503, 503, 503, 503]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY, max_retries=2) as model:
        with pytest.raises(ModelUnavailableError) as caught:
            await model.complete(USER)
    assert len(llm.requests) == 1 + 2
    assert caught.value.status_code == 503
    assert llm.base_url in str(caught.value)
    assert "3 attempts" in str(caught.value)


async def test_no_retries_means_one_request(llm: FakeLLM) -> None:
    llm.errors = [500, 500]
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY, max_retries=0) as model:
        with pytest.raises(ModelUnavailableError):
            await model.complete(USER)
    assert len(llm.requests) == 1


async def test_a_rate_limit_is_retried_and_then_answered(model: OpenAIModel, llm: FakeLLM) -> None:
    llm.errors = [429]
    reply = await model.complete(USER)
    assert reply.content == llm.reply
    assert len(llm.requests) == 2


@pytest.mark.parametrize("status", [401, 403])
async def test_a_rejected_key_is_a_config_error_and_not_retried(
    model: OpenAIModel, llm: FakeLLM, status: int
) -> None:
    llm.errors = [status]
    with pytest.raises(ModelConfigError, match="rejected the API key") as caught:
        await model.complete(USER)
    assert caught.value.status_code == status
    assert len(llm.requests) == 1


async def test_an_unknown_model_is_a_config_error(model: OpenAIModel, llm: FakeLLM) -> None:
    llm.errors = [404]
    with pytest.raises(ModelConfigError, match="'gpt-5-mini'"):
        await model.complete(USER)


async def test_a_refused_request_is_a_plain_model_error(model: OpenAIModel, llm: FakeLLM) -> None:
    llm.errors = [400]
    with pytest.raises(ModelError, match="refused the request: HTTP 400") as caught:
        await model.complete(USER)
    assert type(caught.value) is ModelError
    assert len(llm.requests) == 1


async def test_a_body_that_is_not_json_is_a_response_error(
    model: OpenAIModel, llm: FakeLLM
) -> None:
    llm.malformed = 1
    with pytest.raises(ModelResponseError, match="not JSON"):
        await model.complete(USER)
    assert len(llm.requests) == 1


async def test_a_200_without_choices_is_a_response_error(model: OpenAIModel, llm: FakeLLM) -> None:
    llm.errors = [200]  # a 200 carrying an error object, as some proxies send
    with pytest.raises(ModelResponseError, match="without choices"):
        await model.complete(USER)


async def test_a_slow_answer_times_out_as_unavailable(llm: FakeLLM) -> None:
    llm.latency = 30
    async with OpenAIModel(
        "m", base_url=llm.base_url, api_key=KEY, timeout=0.2, max_retries=0
    ) as model:
        with pytest.raises(ModelUnavailableError, match=r"no answer from .* within 0\.2 s"):
            await model.complete(USER)


async def test_an_unreachable_endpoint_is_unavailable_and_named(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    async with OpenAIModel("m", base_url=url, api_key=KEY, timeout=2, max_retries=0) as model:
        with pytest.raises(ModelUnavailableError, match="cannot reach") as caught:
            await model.complete(USER)
    assert url in str(caught.value)
    assert caught.value.status_code is None


#: An endpoint that is not on this machine (nothing is sent: the key is checked first).
REMOTE = "https://models.example.invalid/v1"


async def test_a_missing_api_key_is_a_config_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIModel("m", base_url=REMOTE) as model:
        with pytest.raises(ModelConfigError, match="OPENAI_API_KEY") as caught:
            await model.complete(USER)
    assert REMOTE in str(caught.value)


async def test_an_empty_api_key_counts_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    async with OpenAIModel("m", base_url=REMOTE) as model:
        with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
            await model.complete(USER)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_an_endpoint_on_this_machine_needs_no_api_key(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    """Regression: FakeLLM (or Ollama) on 127.0.0.1 failed with "no API key" unless
    OPENAI_API_KEY was set to something, so `tether fake-llm`'s `try:` line failed as printed."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIModel("m", base_url=f"http://{host}:{llm.port}/v1") as model:
        reply = await model.complete(USER)
    assert reply.content == llm.reply
    assert len(llm.requests) == 1


async def test_the_environment_is_read_at_the_first_call(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    model = OpenAIModel("gpt-5-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    async with model:
        reply = await model.complete(USER)
    assert reply.content == llm.reply
    assert model.base_url == llm.base_url
    assert len(llm.requests) == 1


async def test_an_explicit_base_url_wins_over_the_environment(
    llm: FakeLLM, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY) as model:
        assert (await model.complete(USER)).content == llm.reply


def test_the_default_base_url_is_openais(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert OpenAIModel("m").base_url == "https://api.openai.com/v1"


async def test_the_key_never_appears_in_errors_or_tracebacks(
    llm: FakeLLM, closed_port: int
) -> None:
    failures: list[BaseException] = []
    async with OpenAIModel("m", base_url=llm.base_url, api_key=KEY, max_retries=0) as model:
        llm.errors = [401, 500, 400, 404]
        llm.malformed = 1
        for _ in range(5):
            with pytest.raises(ModelError) as caught:
                await model.complete(USER)
            failures.append(caught.value)
        assert KEY not in repr(model)
    llm.latency = 30
    async with OpenAIModel(
        "m", base_url=llm.base_url, api_key=KEY, timeout=0.2, max_retries=0
    ) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(USER)
        failures.append(caught.value)
    url = f"http://127.0.0.1:{closed_port}/v1"
    async with OpenAIModel("m", base_url=url, api_key=KEY, max_retries=0) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(USER)
        failures.append(caught.value)
    assert len({type(f) for f in failures}) == 4  # every class of the tree was exercised
    for failure in failures:
        assert KEY not in full_text(failure)


async def test_a_key_echoed_by_the_server_is_redacted(llm: FakeLLM) -> None:
    """The key is chosen to occur in FakeLLM's 401 message, as a proxy might echo it."""
    llm.errors = [401]
    async with OpenAIModel("m", base_url=llm.base_url, api_key="Unauthorized") as model:
        with pytest.raises(ModelConfigError) as caught:
            await model.complete(USER)
    assert "Unauthorized" not in full_text(caught.value)
    assert "[REDACTED]" in str(caught.value)


async def test_aclose_is_idempotent_and_a_later_call_reopens(
    model: OpenAIModel, llm: FakeLLM
) -> None:
    await model.complete(USER)
    await model.aclose()
    await model.aclose()
    assert (await model.complete(USER)).content == llm.reply


async def test_concurrent_first_calls_share_one_client(model: OpenAIModel, llm: FakeLLM) -> None:
    import asyncio

    replies = await asyncio.gather(*(model.complete(USER) for _ in range(5)))
    assert {r.content for r in replies} == {llm.reply}
    assert len(llm.requests) == 5


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
    ],
)
def test_bad_settings_fail_at_construction(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelConfigError, match=field):
        OpenAIModel("m", **options)


def test_an_empty_model_name_fails_at_construction() -> None:
    with pytest.raises(ModelConfigError, match="model"):
        OpenAIModel("")


def test_transport_settings_are_read_only() -> None:
    model = OpenAIModel("m", timeout=3, max_retries=1)
    assert (model.timeout, model.max_retries) == (3.0, 1)
    with pytest.raises(AttributeError):
        model.timeout = 1  # type: ignore[misc]


def test_the_name_is_the_spec_resolve_model_accepts() -> None:
    model = OpenAIModel("gpt-5-mini")
    assert model.name == "openai:gpt-5-mini"
    assert model.model == "gpt-5-mini"


# -- faults of the configuration and of the endpoint (over real sockets) -----------------------


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


@pytest.mark.slow
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
