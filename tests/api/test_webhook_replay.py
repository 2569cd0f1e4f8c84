"""Signed webhooks resist replay: the signature covers a timestamp header, a timestamp outside
the tolerance window is refused, and each signed request is accepted only once."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _net_support import free_port
from tether import AgentRuntime
from tether.api import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    APIError,
    WebhookServer,
    sign_webhook,
    webhook_headers,
)
from tether.api._webhooks import ReplayGuard

SECRET = "replay-secret"
BODY = json.dumps({"ticket": "Printer jammed"}).encode()


@pytest.fixture
async def signed(runtime: AgentRuntime) -> AsyncIterator[tuple[Any, str]]:
    """A signed webhook trigger served on a free port: (its process, its URL)."""
    port = free_port()
    trigger = {"type": "webhook", "webhook_path": "/t", "webhook_port": port, "secret": SECRET}
    process = await runtime.add_process("triage", {"model": "scripted", "triggers": [trigger]})
    server = WebhookServer(runtime)
    await server.start()
    yield process, f"http://127.0.0.1:{port}/t"
    await server.stop()


async def post(url: str, headers: dict[str, str], body: bytes = BODY) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(url, content=body, headers=headers)


def code(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


async def test_a_signed_request_is_accepted_once_and_its_replay_is_refused(
    signed: tuple[Any, str],
) -> None:
    process, url = signed
    headers = webhook_headers(SECRET, BODY)
    first = await post(url, headers)
    again = await post(url, headers)
    assert first.status_code == 202, first.text
    assert code(again) == (401, "REPLAYED")
    assert process.status()["invocation_count"] + process.status()["queue_size"] <= 1


async def test_the_same_body_signed_at_another_second_is_a_new_request(
    signed: tuple[Any, str],
) -> None:
    _, url = signed
    now = int(time.time())
    first = await post(url, webhook_headers(SECRET, BODY, timestamp=now))
    second = await post(url, webhook_headers(SECRET, BODY, timestamp=now - 1))
    assert (first.status_code, second.status_code) == (202, 202)


async def test_two_copies_sent_at_once_are_accepted_only_once(signed: tuple[Any, str]) -> None:
    _, url = signed
    headers = webhook_headers(SECRET, BODY)
    answers = await asyncio.gather(*(post(url, headers) for _ in range(8)))
    assert sorted(a.status_code for a in answers) == [202] + [401] * 7


@pytest.mark.parametrize("skew", [-310, 310, -86_400])
async def test_a_timestamp_outside_the_window_is_refused_even_when_well_signed(
    signed: tuple[Any, str], skew: int
) -> None:
    _, url = signed
    headers = webhook_headers(SECRET, BODY, timestamp=int(time.time()) + skew)
    assert code(await post(url, headers)) == (401, "STALE_TIMESTAMP")


async def test_a_timestamp_inside_the_window_is_accepted(signed: tuple[Any, str]) -> None:
    _, url = signed
    headers = webhook_headers(SECRET, BODY, timestamp=int(time.time()) - 240)
    assert (await post(url, headers)).status_code == 202


async def test_the_signature_covers_the_timestamp(signed: tuple[Any, str]) -> None:
    """Moving a captured request's timestamp into the window breaks its signature."""
    _, url = signed
    old = int(time.time()) - 3600
    headers = {
        TIMESTAMP_HEADER: str(int(time.time())),
        SIGNATURE_HEADER: sign_webhook(SECRET, BODY, old),
    }
    assert code(await post(url, headers)) == (401, "INVALID_SIGNATURE")


@pytest.mark.parametrize("given", [None, "", "soon", "1.5", "-5", "1e9"])
async def test_a_signed_webhook_without_a_whole_seconds_timestamp_is_refused(
    signed: tuple[Any, str], given: str | None
) -> None:
    _, url = signed
    headers = webhook_headers(SECRET, BODY)
    headers.pop(TIMESTAMP_HEADER)
    if given is not None:
        headers[TIMESTAMP_HEADER] = given
    async with httpx.AsyncClient() as client:
        request = client.build_request("POST", url, content=BODY, headers=headers)
        answer = await client.send(request)
    assert code(answer) == (401, "TIMESTAMP_REQUIRED")


async def test_a_request_not_taken_does_not_spend_its_signature(
    signed: tuple[Any, str],
) -> None:
    """A well-signed body that is not JSON answers 400; it is not remembered as a replay."""
    _, url = signed
    body = b"not json"
    headers = webhook_headers(SECRET, body)
    first = await post(url, headers, body)
    second = await post(url, headers, body)
    assert first.status_code == second.status_code == 400


def test_sign_webhook_is_the_hmac_of_timestamp_dot_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"k", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert sign_webhook("k", b"{}", 1700000000) == f"sha256={expected}"
    assert webhook_headers("k", b"{}", timestamp=1700000000) == {
        TIMESTAMP_HEADER: "1700000000",
        SIGNATURE_HEADER: f"sha256={expected}",
    }


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_replay_guard_forgets_a_signature_once_its_timestamp_leaves_the_window() -> None:
    clock = Clock(1000.0)
    guard = ReplayGuard(300, clock=clock)
    guard.spend("sig-a", 1000)
    with pytest.raises(APIError, match="already accepted"):
        guard.spend("sig-a", 1000)
    clock.now = 1299.0
    assert len(guard) == 1
    clock.now = 1301.0
    assert len(guard) == 0
    with pytest.raises(APIError, match="more than 300 seconds"):
        guard.spend("sig-a", 1000)


def test_a_full_replay_guard_refuses_rather_than_forgetting() -> None:
    clock = Clock(1000.0)
    guard = ReplayGuard(300, max_remembered=2, clock=clock)
    guard.spend("a", 1000)
    guard.spend("b", 1000)
    with pytest.raises(APIError) as refused:
        guard.spend("c", 1000)
    assert (refused.value.status, refused.value.code) == (503, "REPLAY_CACHE_FULL")
    with pytest.raises(APIError, match="already accepted"):
        guard.spend("a", 1000)
    clock.now = 1301.0
    guard.spend("c", 1100)


@pytest.mark.parametrize("window", [0, -1, float("nan"), float("inf"), True, "300"])
def test_a_bad_replay_window_is_refused_naming_the_field(window: Any) -> None:
    with pytest.raises(ValueError, match="replay_window"):
        ReplayGuard(window)
