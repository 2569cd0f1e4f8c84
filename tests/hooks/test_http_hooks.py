"""HTTP hooks against a real policy service on 127.0.0.1 (uvicorn): answers, blocks, errors,
timeouts, signatures, pooling and secrets that are never shown."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from _executor_support import PolicyServer
from _net_support import free_port
from tether import HookContext, HookEvent, HookManager
from tether.hooks._errors import HttpHookError, HttpHookTimeoutError
from tether.hooks.kinds._http import HttpClients, HttpHook, sign

TOKEN = "tok-4f9a1c77e2b8d3a6"


@pytest.fixture
async def service() -> AsyncIterator[PolicyServer]:
    async with PolicyServer() as server:
        yield server


@pytest.fixture
async def clients() -> AsyncIterator[HttpClients]:
    """The pool the test's hooks send through, closed after the test."""
    pool = HttpClients()
    yield pool
    await pool.aclose()


def prompt_ctx(prompt: str = "hello") -> HookContext:
    return HookContext(
        HookEvent.USER_PROMPT_SUBMIT,
        "helper",
        {"prompt": prompt, "event_id": "e1"},
        {"process_name": "helper", "process_id": "uuid-1"},
    )


async def dispatch(hook: HttpHook, *, fail_closed: bool = False, prompt: str = "hello") -> object:
    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback, fail_closed=fail_closed)
    try:
        return await manager.dispatch(
            HookEvent.USER_PROMPT_SUBMIT, {"prompt": prompt}, process_id="helper"
        )
    finally:
        await hook.aclose()


async def test_an_http_hook_posts_the_envelope_a_command_hook_gets(service: PolicyServer) -> None:
    hook = HttpHook(f"{service.url}/allow")
    ctx = prompt_ctx("hi there")
    try:
        result = await hook.run(ctx)
    finally:
        await hook.aclose()

    assert result.block is False
    assert result.data is None
    (got,) = service.requests
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-tether-event"] == "user_prompt_submit"
    assert got.json() == {
        "event": "user_prompt_submit",
        "process_id": "helper",
        "timestamp": ctx.timestamp.isoformat(),
        "data": {"prompt": "hi there", "event_id": "e1"},
        "metadata": {"process_name": "helper", "process_id": "uuid-1"},
    }


async def test_an_empty_2xx_answer_lets_the_event_through_unchanged(
    clients: HttpClients, service: PolicyServer
) -> None:
    result = await dispatch(HttpHook(f"{service.url}/allow", clients=clients))

    assert result.blocked is False  # type: ignore[attr-defined]
    assert result.errors == []  # type: ignore[attr-defined]
    assert result.data == {"prompt": "hello"}  # type: ignore[attr-defined]


async def test_a_block_answer_blocks_the_event_with_its_reason(
    clients: HttpClients, service: PolicyServer
) -> None:
    result = await dispatch(HttpHook(f"{service.url}/block", clients=clients))

    assert result.blocked is True  # type: ignore[attr-defined]
    assert result.reason == "refused by the policy service"  # type: ignore[attr-defined]


async def test_a_data_answer_replaces_the_event_data(
    clients: HttpClients, service: PolicyServer
) -> None:
    result = await dispatch(HttpHook(f"{service.url}/rewrite", clients=clients))

    assert result.data == {"prompt": "REWRITTEN"}  # type: ignore[attr-defined]


async def test_a_non_2xx_answer_is_the_hooks_error_with_status_and_body(
    clients: HttpClients,
    service: PolicyServer,
) -> None:
    hook = HttpHook(f"{service.url}/status/503", clients=clients)
    with pytest.raises(HttpHookError, match=r"answered 503 Service Unavailable: the service says"):
        await hook.run(prompt_ctx())


async def test_a_failing_service_blocks_a_fail_closed_hook(
    clients: HttpClients, service: PolicyServer
) -> None:
    result = await dispatch(
        HttpHook(f"{service.url}/status/500", clients=clients), fail_closed=True
    )

    assert result.blocked is True  # type: ignore[attr-defined]
    assert result.reason.startswith("hook failed (fail_closed): HTTP hook")  # type: ignore[attr-defined]


async def test_a_failing_service_without_fail_closed_lets_the_event_through(
    clients: HttpClients,
    service: PolicyServer,
) -> None:
    result = await dispatch(HttpHook(f"{service.url}/status/500", clients=clients))

    assert result.blocked is False  # type: ignore[attr-defined]
    ((_, error),) = result.errors  # type: ignore[attr-defined]
    assert isinstance(error, HttpHookError)


async def test_a_redirect_is_not_followed_and_is_the_hooks_error(
    clients: HttpClients, service: PolicyServer
) -> None:
    hook = HttpHook(f"{service.url}/redirect", clients=clients)
    with pytest.raises(HttpHookError, match=r"answered 307 .*redirects are not followed"):
        await hook.run(prompt_ctx())
    assert [r.path for r in service.requests] == ["/redirect"]


@pytest.mark.parametrize(
    ("path", "said"),
    [("/text", "answered a body that is not a JSON object"), ("/list", "a JSON list")],
)
async def test_a_body_that_is_not_a_json_object_is_the_hooks_error(
    clients: HttpClients, service: PolicyServer, path: str, said: str
) -> None:
    hook = HttpHook(f"{service.url}{path}", clients=clients)
    with pytest.raises(HttpHookError, match=said):
        await hook.run(prompt_ctx())


async def test_a_body_over_max_output_bytes_is_the_hooks_error(
    clients: HttpClients, service: PolicyServer
) -> None:
    hook = HttpHook(f"{service.url}/big", max_output_bytes=1000, clients=clients)
    with pytest.raises(HttpHookError, match="more than max_output_bytes=1000"):
        await hook.run(prompt_ctx())


async def test_a_service_slower_than_the_timeout_is_a_timeout_of_the_hook(
    clients: HttpClients,
    service: PolicyServer,
) -> None:
    hook = HttpHook(f"{service.url}/slow", timeout=0.2, clients=clients)
    with pytest.raises(HttpHookTimeoutError, match=r"no answer within 0.2s") as caught:
        await hook.run(prompt_ctx())
    assert isinstance(caught.value, TimeoutError)


async def test_a_timed_out_fail_closed_hook_blocks(
    clients: HttpClients, service: PolicyServer
) -> None:
    result = await dispatch(
        HttpHook(f"{service.url}/slow", timeout=0.2, clients=clients), fail_closed=True
    )

    assert result.blocked is True  # type: ignore[attr-defined]
    assert "no answer within 0.2s" in result.reason  # type: ignore[attr-defined]


async def test_an_unreachable_service_is_the_hooks_error(
    clients: HttpClients,
) -> None:
    port = free_port()  # nobody listens there once the probe closed
    hook = HttpHook(f"http://127.0.0.1:{port}/hook", clients=clients)
    with pytest.raises(HttpHookError, match="could not be reached: ConnectError"):
        await hook.run(prompt_ctx())


async def test_headers_are_sent_with_references_resolved_when_the_hook_runs(
    service: PolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = HttpHook(
        f"{service.url}/allow",
        headers={"Authorization": SecretStr("Bearer ${POLICY_TOKEN}"), "X-Team": "ops"},
    )
    try:
        monkeypatch.setenv("POLICY_TOKEN", "first")
        await hook.run(prompt_ctx())
        monkeypatch.setenv("POLICY_TOKEN", "second")
        await hook.run(prompt_ctx())
    finally:
        await hook.aclose()

    assert [r.headers["authorization"] for r in service.requests] == [
        "Bearer first",
        "Bearer second",
    ]
    assert service.requests[0].headers["x-team"] == "ops"


async def test_the_signature_is_an_hmac_of_timestamp_and_body_under_the_secret(
    clients: HttpClients,
    service: PolicyServer,
) -> None:
    hook = HttpHook(f"{service.url}/allow", secret=SecretStr("s3cr3t-signing-key"), clients=clients)
    await hook.run(prompt_ctx())

    (got,) = service.requests
    stamp = got.headers["x-tether-timestamp"]
    expected = sign("s3cr3t-signing-key", stamp, got.body)
    assert hmac.compare_digest(got.headers["x-tether-signature"], expected)
    assert expected.startswith("sha256=")
    assert len(expected) == len("sha256=") + 64
    assert not hmac.compare_digest(
        got.headers["x-tether-signature"], sign("other", stamp, got.body)
    )


async def test_no_signature_is_sent_without_a_secret(
    clients: HttpClients, service: PolicyServer
) -> None:
    await dispatch(HttpHook(f"{service.url}/allow", clients=clients))

    assert "x-tether-signature" not in service.requests[0].headers


async def test_http_hooks_sharing_a_pool_reuse_one_connection(service: PolicyServer) -> None:
    clients = HttpClients()
    first = HttpHook(f"{service.url}/allow", clients=clients)
    second = HttpHook(f"{service.url}/rewrite", clients=clients)
    try:
        for _ in range(3):
            await first.run(prompt_ctx())
            await second.run(prompt_ctx())
    finally:
        await clients.aclose()

    assert len(service.requests) == 6
    assert len({r.client_port for r in service.requests}) == 1


async def test_a_header_whose_variable_is_unset_is_an_error_that_shows_no_value(
    clients: HttpClients, service: PolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    hook = HttpHook(
        f"{service.url}/allow",
        headers={"Authorization": SecretStr("${MISSING_TOKEN}")},
        clients=clients,
    )
    with pytest.raises(HttpHookError, match="environment variable 'MISSING_TOKEN' is not set"):
        await hook.run(prompt_ctx())
    assert service.requests == []


async def test_header_values_and_the_secret_are_never_shown(
    service: PolicyServer, caplog: pytest.LogCaptureFixture
) -> None:
    hook = HttpHook(
        f"{service.url}/status/500",
        headers={"Authorization": SecretStr(f"Bearer {TOKEN}")},
        secret=SecretStr("signing-" + TOKEN),
    )
    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback)
    with caplog.at_level(logging.DEBUG, logger="tether"):
        result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "x"})
    await hook.aclose()

    ((_, error),) = result.errors
    shown = [repr(hook), str(error), caplog.text, repr(manager.describe())]
    assert all(TOKEN not in text for text in shown)
    assert dict(hook.secrets()) == {
        "header Authorization": f"Bearer {TOKEN}",
        "secret": "signing-" + TOKEN,
    }


async def test_a_url_with_a_query_is_shown_without_it(
    clients: HttpClients, service: PolicyServer
) -> None:
    hook = HttpHook(f"{service.url}/status/502?token={TOKEN}", clients=clients)
    with pytest.raises(HttpHookError) as caught:
        await hook.run(prompt_ctx())
    assert TOKEN not in str(caught.value)
    assert TOKEN not in repr(hook)
    assert f"{service.url}/status/502?…" in str(caught.value)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("ftp://policy.internal/hook", "must start with http:// or https://"),
        ("https:///hook", "names no host"),
        ("https://user:pw@policy.internal/hook", "must not carry credentials"),
        ("https://policy.internal:99999/hook", "is not a valid URL"),
    ],
)
def test_a_bad_url_is_refused_when_the_hook_is_made(url: str, said: str) -> None:
    with pytest.raises(ValueError, match=said) as caught:
        HttpHook(url)
    assert "pw" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Content-Type", "is set by tether itself"),
        ("X-Tether-Signature", "set by tether"),
        ("Bad Header", "not a valid HTTP header name"),
    ],
)
def test_a_header_tether_sets_or_a_bad_name_is_refused(name: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        HttpHook("https://policy.internal/hook", headers={name: "v"})


async def test_a_header_value_with_a_line_break_is_refused_without_showing_it(
    clients: HttpClients, service: PolicyServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INJECTED", f"{TOKEN}\r\nX-Evil: 1")
    hook = HttpHook(
        f"{service.url}/allow", headers={"Authorization": "${INJECTED}"}, clients=clients
    )
    with pytest.raises(HttpHookError, match="line break") as caught:
        await hook.run(prompt_ctx())
    assert TOKEN not in str(caught.value)
    assert service.requests == []


async def test_a_claude_code_http_hook_gets_claude_codes_input(
    clients: HttpClients, service: PolicyServer
) -> None:
    hook = HttpHook(f"{service.url}/claude", protocol="claude-code", clients=clients)
    ctx = prompt_ctx("hello")

    await hook.callback(ctx)

    (got,) = service.requests
    sent = got.json()
    assert sent["hook_event_name"] == "UserPromptSubmit"
    assert sent["prompt"] == "hello"
    assert ctx.data["prompt"] == "hello\n\nRemember: answer briefly."  # text: added context


async def test_a_claude_code_http_hooks_block_decision_blocks(
    clients: HttpClients, service: PolicyServer
) -> None:
    manager = HookManager()
    hook = HttpHook(f"{service.url}/claude", protocol="claude-code", clients=clients)
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback)

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "please block"})

    assert result.blocked is True
    assert result.reason == "claude says no"


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(ValueError, match="protocol must be one of 'tether', 'claude-code'"):
        HttpHook("https://x/h", protocol="mcp")


async def test_a_cookie_a_service_sets_is_never_sent_back(
    clients: HttpClients, service: PolicyServer
) -> None:
    hook = HttpHook(f"{service.url}/cookie", clients=clients)

    await hook.run(prompt_ctx())
    await hook.run(prompt_ctx())

    assert [r.headers.get("cookie") for r in service.requests] == [None, None]
