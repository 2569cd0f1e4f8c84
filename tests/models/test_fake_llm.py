"""FakeLLM: a real OpenAI-compatible HTTP server in the test's event loop."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tether.testing import FakeLLM

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "update_state",
            "description": "Record a decision.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        },
    }
]


pytestmark = pytest.mark.llm(retry_after=None)


@pytest.fixture
async def http(llm: FakeLLM) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=llm.base_url, timeout=10) as client:
        yield client


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5-mini", "messages": [{"role": "user", "content": text}], **extra}


async def test_start_returns_once_the_socket_accepts_connections() -> None:
    llm = FakeLLM(port=0)
    await llm.start()
    try:
        # A plain, blocking connect: no retry, no waiting.
        with socket.create_connection(("127.0.0.1", llm.port), timeout=1):
            pass
    finally:
        await llm.stop()


async def test_port_zero_picks_a_free_port_and_base_url_names_it(llm: FakeLLM) -> None:
    assert llm.port > 0
    assert llm.base_url == f"http://127.0.0.1:{llm.port}/v1"


def test_default_port_is_the_tutorials_8781() -> None:
    assert FakeLLM().base_url == "http://127.0.0.1:8781/v1"


def test_port_zero_has_no_port_before_start() -> None:
    with pytest.raises(RuntimeError, match="start"):
        _ = FakeLLM(port=0).base_url


def test_an_impossible_port_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="port"):
        FakeLLM(port=70000)


async def test_chat_completion_is_a_proper_chat_completion_object(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    r = await http.post("/chat/completions", json=chat("Login page is down"))
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "chat.completion"
    assert body["id"].startswith("chatcmpl-")
    assert isinstance(body["created"], int)
    assert body["model"] == "gpt-5-mini"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": llm.reply}
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


async def test_models_endpoint_lists_a_model(http: httpx.AsyncClient) -> None:
    r = await http.get("/models")
    assert r.status_code == 200
    assert r.json()["object"] == "list"
    assert r.json()["data"][0]["object"] == "model"


async def test_prompts_hold_the_last_user_message_and_requests_the_whole_body(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    body = {
        "model": "gpt-5-mini",
        "messages": [
            {"role": "system", "content": "You triage support tickets."},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ],
    }
    await http.post("/chat/completions", json=body)
    assert llm.prompts == ["second"]
    assert llm.requests == [body]


async def test_tool_call_queue_pops_only_when_tools_are_offered(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    llm.tool_calls = [("update_state", {"key": "priority", "value": "high"})]
    plain = (await http.post("/chat/completions", json=chat("no tools"))).json()
    assert plain["choices"][0]["message"]["content"] == llm.reply
    assert len(llm.tool_calls) == 1

    empty = (await http.post("/chat/completions", json=chat("empty tools", tools=[]))).json()
    assert empty["choices"][0]["finish_reason"] == "stop"
    assert len(llm.tool_calls) == 1

    called = (await http.post("/chat/completions", json=chat("tools", tools=TOOLS))).json()
    choice = called["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "update_state",
                "arguments": '{"key": "priority", "value": "high"}',
            },
        }
    ]
    assert llm.tool_calls == []

    after = (await http.post("/chat/completions", json=chat("tools again", tools=TOOLS))).json()
    assert after["choices"][0]["message"]["content"] == llm.reply


async def test_tool_call_ids_count_up(llm: FakeLLM, http: httpx.AsyncClient) -> None:
    llm.tool_calls = [("a", {}), ("b", {})]
    ids = []
    for _ in range(2):
        body = (await http.post("/chat/completions", json=chat("go", tools=TOOLS))).json()
        ids.append(body["choices"][0]["message"]["tool_calls"][0]["id"])
    assert ids == ["call_1", "call_2"]


async def test_reply_is_read_per_request(llm: FakeLLM, http: httpx.AsyncClient) -> None:
    llm.reply = "first answer"
    one = (await http.post("/chat/completions", json=chat("a"))).json()
    llm.reply = "second answer"
    two = (await http.post("/chat/completions", json=chat("b"))).json()
    assert one["choices"][0]["message"]["content"] == "first answer"
    assert two["choices"][0]["message"]["content"] == "second answer"


async def test_reply_can_be_set_at_construction() -> None:
    async with (
        FakeLLM(port=0, reply="Custom.") as llm,
        httpx.AsyncClient(base_url=llm.base_url) as http,
    ):
        body = (await http.post("/chat/completions", json=chat("x"))).json()
    assert body["choices"][0]["message"]["content"] == "Custom."


async def test_errors_queue_answers_with_openai_style_error_bodies_in_order(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    llm.errors = [429, 503]
    first = await http.post("/chat/completions", json=chat("a"))
    second = await http.post("/chat/completions", json=chat("b"))
    third = await http.post("/chat/completions", json=chat("c"))
    assert [first.status_code, second.status_code, third.status_code] == [429, 503, 200]
    assert first.json()["error"]["type"] == "rate_limit_error"
    assert second.json()["error"]["type"] == "server_error"
    assert "503" in second.json()["error"]["message"]
    assert "retry-after-ms" not in first.headers
    assert len(llm.requests) == 3


async def test_retry_after_adds_a_retry_after_ms_header(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    llm.errors = [429]
    llm.retry_after = 0.25
    r = await http.post("/chat/completions", json=chat("a"))
    assert r.headers["retry-after-ms"] == "250"


async def test_malformed_answers_a_200_whose_body_is_not_json(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    llm.malformed = 1
    bad = await http.post("/chat/completions", json=chat("a"))
    good = await http.post("/chat/completions", json=chat("b"))
    assert bad.status_code == 200
    with pytest.raises(ValueError, match="Expecting value"):
        bad.json()
    assert good.json()["object"] == "chat.completion"
    assert llm.malformed == 0


async def test_a_body_that_is_not_json_is_a_400_and_not_recorded(
    llm: FakeLLM, http: httpx.AsyncClient
) -> None:
    r = await http.post("/chat/completions", content=b"{nope")
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request_error"
    assert llm.requests == []


async def test_a_request_without_messages_is_a_400(http: httpx.AsyncClient) -> None:
    r = await http.post("/chat/completions", json={"model": "m"})
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "messages"


async def test_streaming_requests_are_refused(http: httpx.AsyncClient) -> None:
    r = await http.post("/chat/completions", json=chat("a", stream=True))
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "stream"


async def test_latency_holds_the_answer_back(llm: FakeLLM, http: httpx.AsyncClient) -> None:
    llm.latency = 30
    with pytest.raises(httpx.ReadTimeout):
        await http.post("/chat/completions", json=chat("slow"), timeout=0.2)
    assert llm.prompts == ["slow"]  # recorded on arrival, before the wait


async def test_stop_cuts_latency_short_and_still_answers() -> None:
    llm = FakeLLM(port=0)
    await llm.start()
    llm.latency = 30
    async with httpx.AsyncClient(base_url=llm.base_url, timeout=10) as http:
        pending = asyncio.create_task(http.post("/chat/completions", json=chat("slow")))
        while not llm.requests:
            await asyncio.sleep(0.01)
        await llm.stop()
        r = await pending
    assert r.status_code == 200
    assert not llm.running


async def test_a_cancelled_start_leaves_no_server_behind() -> None:
    llm = FakeLLM(port=0)
    starting = asyncio.create_task(llm.start())
    await asyncio.sleep(0)  # start() has bound its socket and is waiting for uvicorn
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert not llm.running


async def test_stop_without_start_does_nothing() -> None:
    await FakeLLM(port=0).stop()


async def test_start_twice_is_refused(llm: FakeLLM) -> None:
    with pytest.raises(RuntimeError, match="already running"):
        await llm.start()


async def test_it_can_restart_on_the_same_port() -> None:
    llm = FakeLLM(port=0)
    await llm.start()
    port = llm.port
    await llm.stop()
    await llm.start()
    try:
        assert llm.port == port
        async with httpx.AsyncClient(base_url=llm.base_url) as http:
            assert (await http.get("/models")).status_code == 200
    finally:
        await llm.stop()


async def test_a_busy_port_fails_start_with_oserror(llm: FakeLLM) -> None:
    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{llm.port}"):
        await FakeLLM(port=llm.port).start()


async def test_signal_handlers_are_left_alone() -> None:
    """Regression: uvicorn's Server.serve() swaps in its own SIGINT/SIGTERM handlers."""
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    async with FakeLLM(port=0):
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


async def test_the_programs_logging_configuration_is_left_alone() -> None:
    async with FakeLLM(port=0):
        assert logging.getLogger("uvicorn").handlers == []
        assert logging.getLogger("uvicorn.error").handlers == []


CTRL_C_SCRIPT = textwrap.dedent(
    """
    import asyncio, signal
    from tether.testing import FakeLLM

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if the parent ignores it

    async def main():
        llm = FakeLLM(port=0)
        await llm.start()
        print("ready", flush=True)
        await asyncio.sleep(60)
        await llm.stop()  # never reached: Ctrl-C comes first

    asyncio.run(main())
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_interrupts_the_program_and_leaves_no_socket_open() -> None:
    """Regression: on Ctrl-C asyncio.run cancels the server task and uvicorn never shut down."""
    child = subprocess.Popen(
        [sys.executable, "-X", "dev", "-c", CTRL_C_SCRIPT],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    assert err.strip().endswith("KeyboardInterrupt"), err
    assert "ResourceWarning" not in err
    assert "Task was destroyed" not in err


# -- the fault script refuses what it cannot answer with ---------------------------------------


@pytest.mark.parametrize("status", ["500", 99, 199, 1000, 500.0, True])
def test_an_error_that_is_not_an_http_status_is_refused_when_scripted(status: Any) -> None:
    """Regression: the bad entry crashed the request handler when a request came (a traceback
    in the server, and "Server disconnected" or a bare 500 for the client)."""
    llm = FakeLLM(port=0)
    with pytest.raises(ValueError, match=r"FakeLLM.errors holds HTTP statuses \(200-599\)"):
        llm.errors = [503, status]
    assert llm.errors == []


async def test_a_bad_status_appended_later_is_answered_as_a_500_that_says_so() -> None:
    async with FakeLLM(port=0) as llm, httpx.AsyncClient() as client:
        llm.errors.append("503")  # type: ignore[arg-type]
        response = await client.post(
            f"{llm.base_url}/chat/completions", json={"model": "m", "messages": []}
        )
    assert response.status_code == 500
    assert response.json()["error"]["message"] == (
        "FakeLLM.errors holds HTTP statuses (200-599), got '503'"
    )


async def test_scripted_errors_are_a_queue_the_test_may_append_to() -> None:
    async with FakeLLM(port=0) as llm, httpx.AsyncClient() as client:
        llm.errors = [429]
        llm.errors.append(503)
        url = f"{llm.base_url}/chat/completions"
        body = {"model": "m", "messages": []}
        statuses = [(await client.post(url, json=body)).status_code for _ in range(3)]
    assert statuses == [429, 503, 200]


async def test_the_script_can_be_given_at_construction_as_for_scripted_model() -> None:
    """Regression: ScriptedModel(reply, tool_calls, latency) claims FakeLLM's semantics, but
    FakeLLM(tool_calls=...), (latency=...) and (errors=...) raised TypeError."""
    calls: list[tuple[str, Any]] = [("lookup", {"order_id": 7})]
    llm = FakeLLM(port=0, tool_calls=calls, latency=0.01, errors=[503])
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    async with llm, httpx.AsyncClient() as client:
        url = f"{llm.base_url}/chat/completions"
        failed, answered = [await client.post(url, json=body) for _ in range(2)]
    assert failed.status_code == 503
    [call] = answered.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "lookup", "arguments": '{"order_id": 7}'}
    assert llm.latency == 0.01
    assert calls == [("lookup", {"order_id": 7})]  # the caller's list is not consumed


def test_a_negative_latency_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="latency must be >= 0 seconds"):
        FakeLLM(port=0, latency=-1)


async def test_a_start_while_another_is_under_way_is_refused_and_leaves_one_server() -> None:
    """Regression: two concurrent start() calls both served (port 0: on two ports); stop()
    stopped the second, and the first server's task was left listening."""
    llm = FakeLLM(port=0)
    outcomes = await asyncio.gather(llm.start(), llm.start(), return_exceptions=True)
    try:
        [refusal] = [o for o in outcomes if isinstance(o, BaseException)]
        assert isinstance(refusal, RuntimeError)
        assert "FakeLLM is already starting" in str(refusal)
    finally:
        await llm.stop()
    assert [t for t in asyncio.all_tasks() if t.get_name() == "FakeLLM"] == []
