"""Durable runs in a cluster, with real kills: real ``tether serve --cluster`` hosts on a private
redis-server. A run cut off by a host's SIGKILL, or by a SIGSTOP past its lease, resumes on the
next holder from its last finished step (a finished tool call is not run again, its result is
replayed); the conversation and the state dict carry over; an approval pending at the kill is
kept and answered over the API of any host."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _cluster_support import Host, PrivateRedis, StallingLLM, hook_log, write_manifests
from redis.asyncio import Redis

pytestmark = pytest.mark.slow

TTL = 2.0
PREFIX = "durable"

#: The tool of the tests' manifests: appends "<n> <idempotency key> <host>" to the ledger.
TOOLS = """\
import os

from tether import current_tool_call


async def append(n: int) -> str:
    "Append a line to the ledger."
    key = current_tool_call().idempotency_key
    with open(os.environ["TEST_LEDGER"], "a") as f:
        f.write(f"{n} {key} {os.environ['TEST_HOST']}\\n")
    return f"appended {n}"
"""


def ledger(path: Path) -> list[tuple[int, str, str]]:
    """(n, idempotency key, host) of each call of the tool, in order."""
    text = path.read_text() if path.exists() else ""
    return [(int(n), key, host) for n, key, host in (line.split() for line in text.splitlines())]


async def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


async def holder(redis: Redis) -> str | None:
    token = await redis.get(f"{PREFIX}:lease:ledger")
    return token.split(":", 1)[1] if token else None


async def steps_done(redis: Redis, event_id: str) -> list[str]:
    """The steps of the run of ``event_id`` journaled done in Redis."""
    rows = await redis.hgetall(f"{PREFIX}:steps:ledger")
    return [
        field.split("\x00", 1)[1]
        for field, value in rows.items()
        if field.startswith(f"{event_id}\x00") and json.loads(value)["state"] == "done"
    ]


async def start_hosts(
    tmp_path: Path, count: int, redis: PrivateRedis, llm: StallingLLM, extra: str
) -> tuple[list[Host], Path, Path]:
    (tmp_path / "ledger_tools.py").write_text(TOOLS)
    manifests = write_manifests(tmp_path, ["ledger"], concurrency=1, extra=extra)
    log, book = tmp_path / "hooks.jsonl", tmp_path / "ledger.txt"
    hosts = [Host(tmp_path, f"h{i}") for i in range(1, count + 1)]
    await asyncio.gather(
        *(
            h.start(
                manifests,
                redis_url=redis.url,
                prefix=PREFIX,
                ttl=TTL,
                model_url=llm.base_url,
                hook_log=log,
                env={"TEST_LEDGER": str(book)},
            )
            for h in hosts
        )
    )
    return hosts, log, book


async def stop_hosts(hosts: list[Host]) -> None:
    for host in hosts:
        host.signal(signal.SIGCONT)  # (a paused one stops cleanly too)
    await asyncio.gather(*(h.stop() for h in hosts))


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
async def test_a_run_cut_off_after_two_tool_calls_resumes_on_the_next_holder(
    tmp_path: Path, private_redis: PrivateRedis, how: str
) -> None:
    """Three calls of a tool with side effects on disk; the holder is killed (or paused past
    its lease) while the model is asked for the third: the next holder runs the third only,
    the first two replayed from Redis, with the conversation and the state of before."""
    extra = "tools: [ledger_tools:append]\ncontext:\n  state_tool: true"
    redis = Redis.from_url(private_redis.url, decode_responses=True)
    async with StallingLLM(tool_calls=[("update_state", {"key": "ticket", "value": "T-7"})]) as llm:
        hosts, log, book = await start_hosts(tmp_path, 2, private_redis, llm, extra)
        try:
            await wait_for(lambda: _some(holder(redis)), 30, "the process placed")
            async with httpx.AsyncClient(timeout=30) as http:
                url = f"{hosts[0].url}/api/v1/processes/ledger/inject"
                first = await http.post(url, json={"payload": {"ticket": "remember T-7"}})
                assert first.status_code == 202, first.text

                async def context_saved() -> bool:
                    state = await redis.get(f"{PREFIX}:context:ledger")
                    said = await redis.hvals(f"{PREFIX}:conversation:ledger")
                    return state is not None and "T-7" in state and len(said) >= 2

                await wait_for(context_saved, 30, "the first run's conversation and state")
                # The second run: three appends; the model's answer after the second stalls.
                llm.tool_calls = [("append", {"n": n}) for n in (1, 2, 3, 3)]
                llm.stall = {len(llm.requests) + 3}
                second = await http.post(url, json={"payload": {"ticket": "three appends"}})
                assert second.status_code == 202, second.text
                event_id = second.json()["event_id"]

                async def two_done() -> bool:
                    return len(await steps_done(redis, event_id)) == 4

                await wait_for(two_done, 30, "the first two calls journaled done")
            assert [n for n, _, _ in ledger(book)] == [1, 2]
            victim_name = await holder(redis)
            (victim,) = [h for h in hosts if h.name == victim_name]
            (survivor,) = [h for h in hosts if h is not victim]
            stalled = len(llm.requests)
            victim.signal(signal.SIGKILL if how == "SIGKILL" else signal.SIGSTOP)

            async def finished() -> bool:
                return len(llm.requests) >= stalled + 2 and not await redis.xlen(
                    f"{PREFIX}:q:ledger"
                )

            await wait_for(finished, TTL * 3 + 30, "the run resumed and finished")
            if how == "SIGSTOP":  # resumed past its lease: it runs nothing of the run again
                victim.signal(signal.SIGCONT)
                await asyncio.sleep(TTL * 2)
        finally:
            await stop_hosts(hosts)
            await redis.aclose()
    calls = ledger(book)
    assert [n for n, _, _ in calls] == [1, 2, 3]  # each once, in all
    assert [h for _, _, h in calls] == [victim.name, victim.name, survivor.name]
    assert len({key for _, key, _ in calls}) == 3
    resumed = llm.requests[stalled]  # the next holder's first question: turn 3 again
    said = [m for m in resumed["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in said][-2:] == ["appended 1", "appended 2"]  # replayed
    users = [m["content"] for m in resumed["messages"] if m["role"] == "user"]
    assert any("remember T-7" in text for text in users)  # the conversation carried over
    system = next(m["content"] for m in resumed["messages"] if m["role"] == "system")
    assert '"ticket": "T-7"' in system  # the state dict carried over
    starts = [
        line["ctx"]["data"]
        for line in hook_log(log)
        if line["host"] == survivor.name and line["ctx"]["event"] == "session_start"
    ]
    recovered = [data["recovered"] for data in starts if data.get("recovered")]
    assert recovered[-1]["resumed"] == [{"event_id": event_id, "from_step": "turn 2 tool call 1"}]


async def test_an_approval_pending_at_a_kill_is_answered_over_any_hosts_api(
    tmp_path: Path, private_redis: PrivateRedis
) -> None:
    extra = "tools: [ledger_tools:append]\napproval:\n  tools: [append]\n  operator: true"
    redis = Redis.from_url(private_redis.url, decode_responses=True)
    async with StallingLLM(tool_calls=[("append", {"n": 1})] * 2) as llm:
        hosts, _, book = await start_hosts(tmp_path, 3, private_redis, llm, extra)
        try:
            await wait_for(lambda: _some(holder(redis)), 30, "the process placed")
            async with httpx.AsyncClient(timeout=30) as http:
                inject = f"{hosts[0].url}/api/v1/processes/ledger/inject"
                sent = await http.post(inject, json={"payload": {"ticket": "append one"}})
                assert sent.status_code == 202, sent.text

                async def journaled() -> bool:
                    return bool(await redis.hlen(f"{PREFIX}:approvals:ledger"))

                await wait_for(journaled, 30, "the approval journaled in Redis")
                victim_name = await holder(redis)
                (victim,) = [h for h in hosts if h.name == victim_name]
                asked = (await http.get(f"{victim.url}/api/v1/processes/ledger/approvals")).json()[
                    "approvals"
                ]
                assert [a["tool_name"] for a in asked] == ["append"]
                victim.kill()

                async def taken_over() -> bool:
                    now = await holder(redis)
                    return now is not None and now != victim.name

                await wait_for(taken_over, TTL * 3 + 10, "the process on another host")
                new = await holder(redis)
                (other,) = [h for h in hosts if h.name not in (victim.name, new)]
                listing = f"{other.url}/api/v1/processes/ledger/approvals"

                async def listed() -> bool:
                    answer = await http.get(listing)  # forwarded to the new holder
                    return answer.status_code == 200 and bool(answer.json()["approvals"])

                await wait_for(listed, 30, "the approval listed by another host")
                (pending,) = (await http.get(listing)).json()["approvals"]
                assert pending["request_id"] == asked[0]["request_id"]  # the same request
                assert ledger(book) == []
                answer = await http.post(
                    f"{listing}/{pending['request_id']}",
                    json={"approved": True, "reviewer": "ops", "reason": "fine"},
                )
                assert answer.status_code == 200, answer.text

                async def finished() -> bool:
                    return bool(ledger(book)) and not await redis.xlen(f"{PREFIX}:q:ledger")

                await wait_for(finished, 30, "the approved call run and the run finished")
                left = (await http.get(listing)).json()["approvals"]
        finally:
            await stop_hosts(hosts)
            await redis.aclose()
    assert [(n, h) for n, _, h in ledger(book)] == [(1, new)]
    assert left == []


async def _some(value: Any) -> bool:
    return await value is not None
