"""The cluster heals: a Redis that comes back empty (restarted without persistence, a failover
to an empty replica, FLUSHALL) loses its streams and their consumer group; the hosts make them
again and run every event accepted afterwards. While Redis is away, an inject is refused with
a 503 and Retry-After (QueueUnavailableError in Python), never a 500. Each test here has a
redis-server of its own, which it stops or restarts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _cluster_support import Host, PrivateRedis, seq, write_manifests
from redis.asyncio import Redis

from _process_support import Recorder, eventually
from tether import (
    AgentRuntime,
    OrchestrationAPI,
    ProcessConfig,
    ProcessState,
    QueueUnavailableError,
    TriggerEvent,
)
from tether.cluster import ClusterNode, cluster_config
from tether.hooks import HookConfig, HookEvent
from tether.models import OpenAIModel
from tether.testing import FakeLLM

TTL = 2.0


async def test_an_empty_redis_restart_in_the_middle_of_a_load_leaves_no_later_event_unrun(
    tmp_path: Path, private_redis: PrivateRedis
) -> None:
    """Regression: the consumer group was made once, at start; after an empty restart XADD
    made the stream without it, every read failed with NOGROUP and the events accepted with
    202 never ran. Two real hosts; the load goes on through the restart."""
    names = ["alpha", "beta"]
    manifests = write_manifests(tmp_path, names, concurrency=2)
    log = tmp_path / "hooks.jsonl"
    hosts = [Host(tmp_path, "h1"), Host(tmp_path, "h2")]
    accepted: dict[int, float] = {}  # n -> when its inject was sent (time.monotonic())
    refused: list[tuple[int, str | None]] = []  # (status, Retry-After) of the other answers
    restarted_at = float("inf")
    async with FakeLLM(port=0, latency=0.05) as llm:
        try:
            common = {"redis_url": private_redis.url, "prefix": "heal", "ttl": TTL}
            await asyncio.gather(
                *(h.start(manifests, model_url=llm.base_url, hook_log=log, **common) for h in hosts)
            )
            async with httpx.AsyncClient(timeout=30) as http:

                async def inject(n: int) -> None:
                    sent = time.monotonic()
                    host = hosts[n % 2]
                    answer = await http.post(
                        f"{host.url}/api/v1/processes/{names[n % 2]}/inject",
                        json={"payload": {"n": n}},
                    )
                    if answer.status_code == 202:
                        accepted[n] = sent
                    else:
                        refused.append((answer.status_code, answer.headers.get("retry-after")))

                n = 0
                for _ in range(60):  # the load before the restart
                    await inject(n)
                    n += 1
                    await asyncio.sleep(0.01)
                private_redis.kill()
                for _ in range(10):  # while Redis is away
                    await inject(n)
                    n += 1
                    await asyncio.sleep(0.02)
                private_redis.start()  # empty
                restarted_at = time.monotonic()
                for _ in range(120):  # the load after it
                    await inject(n)
                    n += 1
                    await asyncio.sleep(0.01)
            after = {m for m, sent in accepted.items() if sent >= restarted_at}
            assert len(after) >= 60, f"few events accepted after the restart: {len(after)}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not after <= {seq(p) for p in llm.prompts}:
                await asyncio.sleep(0.05)
        finally:
            await asyncio.gather(*(h.stop() for h in hosts))
    ran = {seq(p) for p in llm.prompts}
    before = {m for m, sent in accepted.items() if sent < restarted_at}
    print(
        f"\nempty restart: {len(before)} accepted before it ({len(before - ran)} lost with "
        f"Redis's data), {len(refused)} refused while away, {len(after)} accepted after it"
    )
    assert sorted(after - ran) == [], "accepted (202) after the restart and never run"
    assert refused, "no inject was refused while Redis was away"
    assert all(status == 503 and retry for status, retry in refused), refused


def node_config(llm: FakeLLM) -> ProcessConfig:
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    return cluster_config(ProcessConfig(model=model, concurrency=2), TTL)


async def test_events_added_after_a_flushall_run_on_the_host_that_held_the_process(
    private_redis: PrivateRedis, llm: FakeLLM
) -> None:
    """The holder's lease goes with the data: it stops its copy, takes the process again
    with a new lease, makes the stream and its group again, and runs what comes next; again
    the second time, when the new lease has the token the first one had."""
    runtime = AgentRuntime()
    await runtime.add_process("solo", node_config(llm))
    node = ClusterNode(runtime, private_redis.url, host="h1", prefix="heal", lease_ttl=TTL)
    await node.start()
    redis: Any = Redis.from_url(private_redis.url, decode_responses=True)
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
        await eventually(lambda: bool(rec.of(HookEvent.SESSION_START)), timeout=10)
        await process.inject(TriggerEvent("t", "manual", {"n": 0}))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 1, timeout=10)
        for flush in range(2):  # the second time, the lease's token is the first one again
            await redis.flushall()
            for _ in range(500):  # the holder finds its lease gone and takes it again
                if await redis.get("heal:lease:solo") == "1:h1":
                    break
                await asyncio.sleep(0.02)
            assert await redis.get("heal:lease:solo") == "1:h1", f"not taken again ({flush})"
            for n in range(1 + flush * 10, 11 + flush * 10):
                await process.inject(TriggerEvent("t", "manual", {"n": n}))
            ran = 11 + flush * 10
            await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == ran, timeout=20)  # noqa: B023
        assert sorted(seq(p) for p in llm.prompts) == list(range(21))
        groups = await redis.xinfo_groups("heal:q:solo")
        assert [g["name"] for g in groups] == ["tether"]
    finally:
        await node.stop()
        await redis.aclose()


async def test_the_events_a_holder_held_when_redis_lost_its_data_are_added_again_and_run(
    private_redis: PrivateRedis, llm: FakeLLM
) -> None:
    """One run in flight, one event read ahead: a FLUSHALL takes their stream entries with it.
    The holder, finding its lease gone under a new epoch, adds both to the stream again (the
    run in flight runs no task_completed hook here) and they run."""
    started, gate = asyncio.Event(), asyncio.Event()

    async def held_up(ctx: Any) -> None:
        started.set()
        await gate.wait()

    hooks = [HookConfig(event="user_prompt_submit", callback=held_up, timeout=60)]
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    runtime = AgentRuntime()
    await runtime.add_process(
        "solo", cluster_config(ProcessConfig(model=model, hooks=hooks, concurrency=1), TTL)
    )
    node = ClusterNode(runtime, private_redis.url, host="h1", prefix="heal", lease_ttl=TTL)
    await node.start()
    redis: Any = Redis.from_url(private_redis.url, decode_responses=True)
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=10)
        for n in range(2):
            await process.inject(TriggerEvent("t", "manual", {"n": n}))
        await asyncio.wait_for(started.wait(), 10)
        await eventually(lambda: node.queue("solo").qsize() == 1, timeout=10, what="read ahead")
        await redis.flushall()
        gate.set()
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, timeout=20)
        assert rec.outcomes() == ["success", "success"]
        assert sorted({seq(p) for p in llm.prompts}) == [0, 1]
    finally:
        gate.set()
        await node.stop()
        await redis.aclose()


async def test_the_events_a_holder_held_run_when_redis_comes_back_empty_after_a_long_outage(
    private_redis: PrivateRedis, llm: FakeLLM
) -> None:
    """Redis stays away past TTL/2: the holder stops its copy without knowing whether Redis
    will come back with its data. It keeps what it left (the run it cut off, the event read
    ahead) until Redis answers: empty (a new epoch), it adds them again, and they run."""
    started, gate = asyncio.Event(), asyncio.Event()

    async def held_up(ctx: Any) -> None:
        started.set()
        await gate.wait()

    hooks = [HookConfig(event="user_prompt_submit", callback=held_up, timeout=60)]
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    runtime = AgentRuntime()
    await runtime.add_process(
        "solo", cluster_config(ProcessConfig(model=model, hooks=hooks, concurrency=1), TTL)
    )
    node = ClusterNode(runtime, private_redis.url, host="h1", prefix="heal", lease_ttl=TTL)
    await node.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_END)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=10)
        for n in range(2):
            await process.inject(TriggerEvent("t", "manual", {"n": n}))
        await asyncio.wait_for(started.wait(), 10)
        await eventually(lambda: node.queue("solo").qsize() == 1, timeout=10, what="read ahead")
        private_redis.kill()
        await eventually(lambda: bool(rec.of(HookEvent.SESSION_END)), timeout=10)
        await eventually(lambda: "solo" not in node.leases.leaving, timeout=10)
        gate.set()
        private_redis.start()  # empty
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, timeout=20)
        assert rec.outcomes() == ["success", "success"]
        assert sorted({seq(p) for p in llm.prompts}) == [0, 1]
    finally:
        gate.set()
        await node.stop()


async def test_a_stream_deleted_under_a_reading_holder_is_made_again_with_its_group(
    private_redis: PrivateRedis, llm: FakeLLM, caplog: Any
) -> None:
    """Only the stream goes (its lease stays): the holder's read finds NOGROUP, makes the
    stream and group again, and reads on without stopping its copy."""
    runtime = AgentRuntime()
    await runtime.add_process("solo", node_config(llm))
    node = ClusterNode(runtime, private_redis.url, host="h1", prefix="heal", lease_ttl=TTL)
    await node.start()
    redis: Any = Redis.from_url(private_redis.url, decode_responses=True)
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_END)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=10)
        with caplog.at_level("WARNING", logger="tether.cluster"):
            await redis.delete("heal:q:solo")
            await eventually(lambda: "was gone; made again" in caplog.text, timeout=10)
        event = TriggerEvent("t", "manual", {"n": 1})
        await redis.xadd("heal:q:solo", {"event": json.dumps(event.to_dict()), "attempts": 0})
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 1, timeout=10)
        assert rec.of(HookEvent.SESSION_END) == []
    finally:
        await node.stop()
        await redis.aclose()


async def test_an_inject_and_the_cluster_list_while_redis_is_away_answer_503_with_retry_after(
    private_redis: PrivateRedis, llm: FakeLLM
) -> None:
    runtime = AgentRuntime()
    await runtime.add_process("solo", node_config(llm))
    node = ClusterNode(runtime, private_redis.url, host="h1", prefix="heal", lease_ttl=TTL)
    await node.start()
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        await eventually(lambda: "solo" in node.held, timeout=10)
        private_redis.kill()
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1", timeout=30) as http:
            answer = await http.post("/processes/solo/inject", json={"payload": {"n": 1}})
            listed = await http.get("/processes")
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["error"]["code"] == "QUEUE_UNAVAILABLE"
        assert "retry later" in answer.json()["error"]["message"]
        assert listed.status_code == 503, listed.text  # the cluster's list needs Redis too
        assert listed.headers["retry-after"] == "1"
        assert listed.json()["error"]["code"] == "CLUSTER_UNAVAILABLE"
        with pytest.raises(QueueUnavailableError, match=r"'solo'.*retry later"):
            await process.inject(TriggerEvent("t", "manual", {"n": 2}))
        assert process.dead_letters == []  # refused, not dead-lettered: the caller retries
    finally:
        await api.stop()
        await node.stop()
