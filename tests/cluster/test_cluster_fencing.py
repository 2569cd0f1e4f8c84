"""The cluster stays fenced: every write a holder makes for a process checks its token (the
status hash too); a holder paused past its lease and resumed runs no task_completed hook for a
run that is another host's now; a host whose event loop is kept busy still takes a dead
host's processes over within about TTL plus one tick (placement runs in a thread)."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from _cluster_support import Host, hook_log, seq, write_manifests
from redis.asyncio import Redis

from _process_support import Recorder, eventually
from tether import AgentRuntime, ProcessConfig, ProcessState, TriggerEvent
from tether.cluster import ClusterNode, cluster_config, rendezvous
from tether.hooks import HookConfig, HookEvent
from tether.models import OpenAIModel
from tether.store._redis import FENCED, GROUP, Keys, Scripts
from tether.testing import FakeLLM

TTL = 2.0


def config(llm: FakeLLM, **fields: Any) -> ProcessConfig:
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    return cluster_config(ProcessConfig(model=model, **fields), TTL)


async def test_a_status_is_published_and_taken_back_only_by_the_holder_that_wrote_it(
    redis_prefix: str, redis: Redis
) -> None:
    keys, scripts = Keys(redis_prefix), Scripts(redis)
    lease, status = keys.lease("p"), keys.status
    await redis.set(lease, "2:h2")  # h2 holds the lease now; h1 still has token 1:h1
    answer = await scripts.publish(keys=[lease, status], args=["1:h1", "p", '{"host": "h1"}'])
    assert answer == FENCED
    assert not await redis.exists(status)
    mine = json.dumps({"host": "h2", "fencing_token": 2, "state": "running"})
    assert await scripts.publish(keys=[lease, status], args=["2:h2", "p", mine]) == 1
    # The host that held token 1 leaves: it must not delete h2's summary.
    assert await scripts.unpublish(keys=[status], args=["p", 1, "h1"]) == FENCED
    assert json.loads(await redis.hget(status, "p"))["host"] == "h2"
    assert await scripts.unpublish(keys=[status], args=["p", 2, "h2"]) == 1
    assert not await redis.hexists(status, "p")


async def test_a_holder_that_lost_its_lease_leaves_the_next_holders_status_in_place(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    """Regression: a holder stopping its copy after it lost the lease deleted the process's
    entry of the status hash (an unfenced HDEL), the new holder's: GET /processes showed a
    running process as "starting"."""
    runtime = AgentRuntime()
    await runtime.add_process("solo", config(llm))
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=TTL)
    await node.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.SESSION_END)
        status = f"{redis_prefix}:status"
        await eventually(lambda: "solo" in node.held, timeout=10)
        for _ in range(200):  # h1 publishes its status at each round
            if await redis.hexists(status, "solo"):
                break
            await asyncio.sleep(0.02)
        theirs = json.dumps({"host": "h2", "fencing_token": 999, "state": "running"})
        await redis.set(f"{redis_prefix}:lease:solo", "999:h2", px=60_000)
        await redis.hset(status, "solo", theirs)
        await eventually(lambda: bool(rec.of(HookEvent.SESSION_END)), timeout=10)
        await eventually(
            lambda: not {"solo"} & {*node.held, *node.leases.leaving}, timeout=10, what="h1 gone"
        )
        assert rec.of(HookEvent.SESSION_END)[0]["reason"] == "lease lost"
        assert await redis.hget(status, "solo") == theirs
    finally:
        await node.stop()


async def test_a_holder_whose_write_was_fenced_starts_no_further_attempt(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    """The lease is taken while a run is held up (a long TTL: no renewal notices first);
    the next event's attempt count is fenced, and that attempt does not start: its model
    is never called here, and its entry stays pending for the next holder."""
    started, gate = asyncio.Event(), asyncio.Event()

    async def held_up(ctx: Any) -> None:
        started.set()
        await gate.wait()

    hooks = [HookConfig(event="user_prompt_submit", callback=held_up, timeout=60)]
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    runtime = AgentRuntime()
    await runtime.add_process(
        "solo", cluster_config(ProcessConfig(model=model, hooks=hooks, concurrency=1), 60)
    )
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=60)
    await node.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.SESSION_END)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=10)
        for n in range(2):
            await process.inject(TriggerEvent("t", "manual", {"n": n}))
        await asyncio.wait_for(started.wait(), 10)
        await eventually(lambda: node.queue("solo").qsize() == 1, timeout=10, what="read ahead")
        await redis.set(f"{redis_prefix}:lease:solo", "999:elsewhere", px=60_000)
        gate.set()
        await eventually(lambda: bool(rec.of(HookEvent.SESSION_END)), timeout=10)
        await asyncio.sleep(0.5)
        assert [seq(p) for p in llm.prompts] == [0]
        pending = await redis.xpending(f"{redis_prefix}:q:solo", "tether")
        assert pending["pending"] == 2  # both left for the next holder
    finally:
        gate.set()
        await node.stop()


async def test_a_holder_paused_past_its_lease_runs_no_task_completed_hook_once_resumed(
    tmp_path: Path, redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    """Regression: a host paused (SIGSTOP) past its lease and resumed (SIGCONT) finished the
    runs it had in flight and ran their task_completed hooks, after the next holder had run
    them again. Now it checks its lease first: the runs are the other host's, and it runs
    none of those hooks."""
    a_name, b_name = next(
        (a, b)
        for i in range(100)
        for a, b in [(f"first{i}", f"second{i}")]
        if rendezvous("solo", [a, b]) == a
    )
    manifests = write_manifests(
        tmp_path, ["solo"], concurrency=2, logged=("session_start", "session_end", "task_completed")
    )
    log = tmp_path / "hooks.jsonl"
    a, b = Host(tmp_path, a_name), Host(tmp_path, b_name)

    def lines(host: str, event: str) -> list[dict[str, Any]]:
        return [x for x in hook_log(log) if x["host"] == host and x["ctx"]["event"] == event]

    # The first host's model answers slowly: runs are in flight when it is paused.
    async with FakeLLM(port=0, latency=1.5) as llm_a, FakeLLM(port=0, latency=0.05) as llm_b:
        try:
            common = {"prefix": redis_prefix, "ttl": TTL, "hook_log": log, "redis_url": redis_url}
            await a.start(manifests, model_url=llm_a.base_url, **common)
            lease = f"{redis_prefix}:lease:solo"
            deadline = time.monotonic() + 20
            while (await redis.get(lease) or "").split(":")[-1] != a_name:
                assert time.monotonic() < deadline, "the first host never took the process"
                await asyncio.sleep(0.05)
            await b.start(manifests, model_url=llm_b.base_url, **common)
            async with httpx.AsyncClient(timeout=30) as http:
                for n in range(6):
                    answer = await http.post(
                        f"{b.url}/api/v1/processes/solo/inject", json={"payload": {"n": n}}
                    )
                    assert answer.status_code == 202, answer.text
            while len(llm_a.prompts) < 2:  # two runs waiting on the model
                assert time.monotonic() < deadline + 20, "the first host ran nothing"
                await asyncio.sleep(0.02)
            a.signal(signal.SIGSTOP)
            in_flight = {seq(p) for p in llm_a.prompts}
            deadline = time.monotonic() + TTL + 20
            while await redis.xlen(f"{redis_prefix}:q:solo"):  # the second host ran the rest
                assert time.monotonic() < deadline, "the second host did not take over"
                await asyncio.sleep(0.05)
            assert in_flight <= {seq(p) for p in llm_b.prompts}, "run again by the new holder"
            resumed_at = time.time()
            a.signal(signal.SIGCONT)  # the model's answers are waiting for it
            deadline = time.monotonic() + 20
            while not [x for x in lines(a_name, "session_end") if x["at"] > resumed_at]:
                assert time.monotonic() < deadline, "the resumed host never stopped its copy"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # what it would still run, it has run by now
        finally:
            a.signal(signal.SIGCONT)
            await asyncio.gather(a.stop(), b.stop())
    late = [x["ctx"]["data"] for x in lines(a_name, "task_completed") if x["at"] > resumed_at]
    assert late == [], "the resumed host ran task_completed hooks of runs it no longer held"
    ends = [x for x in lines(a_name, "session_end") if x["at"] > resumed_at]
    assert ends[0]["ctx"]["data"]["reason"] == "lease lost"


def burn(seconds: float) -> None:
    """Keep the CPU busy, holding the event loop, for ``seconds``."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        sum(range(1000))


async def test_a_host_whose_loop_is_busy_takes_a_dead_hosts_process_over_within_ttl_and_a_tick(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    """Regression: placement ran in the event loop, so a survivor whose loop was busy took
    over long after the dead host's lease expired (10.3 s with TTL 5). The dead host here
    left a lease that expires in TTL and three events it had read and not run."""
    from redis import Redis as SyncRedis

    keys = Keys(redis_prefix)
    stream, lease = keys.stream("solo"), keys.lease("solo")
    await redis.xgroup_create(stream, GROUP, id="0", mkstream=True)
    for n in range(3):
        event = TriggerEvent("t", "manual", {"n": n})
        await redis.xadd(stream, {"event": json.dumps(event.to_dict()), "attempts": 0})
    await redis.xreadgroup(GROUP, "gone", {stream: ">"}, count=3)
    await redis.set(lease, "7:gone", px=int(TTL * 1000))
    expires = time.monotonic() + TTL
    runtime = AgentRuntime()
    await runtime.add_process("solo", config(llm, concurrency=2))
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=TTL)
    taken: list[float] = []
    done = threading.Event()

    def watch() -> None:  # off the busy loop: when the lease became h1's
        client = SyncRedis.from_url(redis_url, decode_responses=True)
        try:
            while not done.is_set() and not taken:
                if (client.get(lease) or "").endswith(":h1"):
                    taken.append(time.monotonic())
                time.sleep(0.01)
        finally:
            client.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    await node.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
        while time.monotonic() < expires + TTL + 2:  # the loop: busy, a second at a time
            burn(1.0)
            await asyncio.sleep(0)
        assert taken, "the lease was not taken while the loop was busy"
        assert taken[0] - expires <= TTL / 5 + 1.6  # a round later, with room for a loaded machine
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, timeout=20)
        assert sorted(seq(p) for p in llm.prompts) == [0, 1, 2]  # none lost
    finally:
        done.set()
        watcher.join()
        await node.stop()
