"""Several real runtime OS processes (``tether serve --cluster``) on one real Redis: events
survive a host's SIGKILL, a host cut off from Redis stops before another starts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
from _cluster_support import Host, RedisProxy, hook_log, seq, write_manifests
from redis.asyncio import Redis

from tether.cluster import rendezvous
from tether.testing import FakeLLM

pytestmark = pytest.mark.slow

TTL = 2.0


async def holders(redis: Redis, redis_prefix: str, names: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        token = await redis.get(f"{redis_prefix}:lease:{name}")
        out[name] = token.split(":", 1)[1] if token else None
    return out


async def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert callable(condition)
        if await condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_thousand_events_over_three_hosts_survive_a_host_killed_mid_run(
    tmp_path: Path, redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    names = [f"agent{i}" for i in range(6)]
    manifests = write_manifests(tmp_path, names, concurrency=4)
    log = tmp_path / "hooks.jsonl"
    hosts = [Host(tmp_path, f"host{i}") for i in range(3)]
    async with FakeLLM(port=0, latency=0.05) as llm:
        try:
            await asyncio.gather(
                *(
                    h.start(
                        manifests,
                        redis_url=redis_url,
                        prefix=redis_prefix,
                        ttl=TTL,
                        model_url=llm.base_url,
                        hook_log=log,
                    )
                    for h in hosts
                )
            )

            async def spread() -> bool:
                placed = await holders(redis, redis_prefix, names)
                return None not in placed.values() and len(set(placed.values())) == 3

            marks = {"started": time.monotonic()}
            await wait_for(spread, 30, "every process placed, on all three hosts")
            marks["spread"] = time.monotonic()
            async with httpx.AsyncClient(timeout=30) as http:
                sem = asyncio.Semaphore(16)

                async def inject(i: int) -> None:
                    host = hosts[i % 3]
                    async with sem:
                        answer = await http.post(
                            f"{host.url}/api/v1/processes/{names[i % 6]}/inject",
                            json={"payload": {"n": i}},
                        )
                    assert answer.status_code == 202, answer.text
                    assert answer.json()["status"] == "queued"

                await asyncio.gather(*(inject(i) for i in range(1000)))
                marks["injected"] = time.monotonic()
                # Every host lists every process, with the host it runs on.
                listed = (await http.get(f"{hosts[0].url}/api/v1/processes")).json()
                placed = await holders(redis, redis_prefix, names)
                assert {p["name"]: p["host"] for p in listed["processes"]} == placed

            deadline = time.monotonic() + 60
            while len(llm.prompts) < 300 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            placed = await holders(redis, redis_prefix, names)
            victim = max(hosts, key=lambda h: list(placed.values()).count(h.name))
            moved = [name for name, host in placed.items() if host == victim.name]
            victim.kill()
            killed_at = time.time()
            marks["killed"] = time.monotonic()
            await victim.child.wait()  # type: ignore[union-attr]
            # What was delivered to the victim and not acknowledged: in flight at the kill.
            in_flight: set[int] = set()
            pending_at_kill: set[str] = set()  # the victim's processes with entries in flight
            for name in moved:
                stream = f"{redis_prefix}:q:{name}"
                rows = await redis.xpending_range(stream, "tether", "-", "+", 10_000, victim.name)
                if rows:
                    pending_at_kill.add(name)
                for row in rows:
                    for _, fields in await redis.xrange(
                        stream, row["message_id"], row["message_id"]
                    ):
                        in_flight.add(json.loads(fields["event"])["payload"]["n"])

            async def taken_over() -> bool:
                now = await holders(redis, redis_prefix, moved)
                return all(h not in (None, victim.name) for h in now.values())

            await wait_for(taken_over, TTL + 10, "the victim's processes on survivors")

            async def all_done() -> bool:
                for name in names:
                    if await redis.xlen(f"{redis_prefix}:q:{name}"):
                        return False
                return len({seq(p) for p in llm.prompts}) >= 1000

            marks["taken over"] = time.monotonic()
            await wait_for(all_done, 90, "every event run")
            marks["done"] = time.monotonic()
        finally:
            await asyncio.gather(*(h.stop() for h in hosts))
    marks["stopped"] = time.monotonic()
    print({k: round(v - marks["started"], 1) for k, v in marks.items()})
    counts: dict[int, int] = {}
    for prompt in llm.prompts:
        counts[seq(prompt)] = counts.get(seq(prompt), 0) + 1
    lost = sorted(set(range(1000)) - set(counts))
    duplicated = sorted(n for n, c in counts.items() if c > 1)
    print(
        f"\ncluster kill: victim {victim.name} ran {moved}; {len(in_flight)} entries in flight "
        f"at the kill; {len(lost)} lost; {len(duplicated)} run twice: {duplicated}"
    )
    assert lost == []
    assert set(duplicated) <= in_flight, "only the entries in flight at the kill run twice"
    for name in names:
        assert await redis.hlen(f"{redis_prefix}:dead:{name}") == 0
    # Every process of the victim started again on a survivor within TTL + 5 s, and its
    # session_start said what it reclaimed.
    starts = [
        line
        for line in hook_log(log)
        if line["ctx"]["event"] == "session_start" and line["at"] > killed_at
    ]
    for name in moved:
        mine = [s for s in starts if s["ctx"]["process_id"] == name]
        assert mine, f"{name} started again nowhere"
        first = min(mine, key=lambda s: s["at"])
        assert first["host"] != victim.name
        assert first["at"] - killed_at <= TTL + 5
        recovered = first["ctx"]["data"]["recovered"]
        assert recovered["source"] == "redis"
        # It reclaimed the victim's entries in flight (a process idle at the kill had none).
        assert (victim.name in recovered["from_hosts"]) == (name in pending_at_kill)


async def test_a_host_cut_off_from_redis_stops_its_copy_before_another_host_starts_one(
    tmp_path: Path, redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    # Host names such that the first host (behind the proxy) is the one the process prefers:
    # it keeps the process until it is cut off.
    a_name, b_name = next(
        (a, b)
        for i in range(100)
        for a, b in [(f"near{i}", f"far{i}")]
        if rendezvous("solo", [a, b]) == a
    )
    manifests = write_manifests(tmp_path, ["solo"], concurrency=2)
    log = tmp_path / "hooks.jsonl"
    proxy = await RedisProxy(redis_url).start()
    a, b = Host(tmp_path, a_name), Host(tmp_path, b_name)
    async with FakeLLM(port=0, latency=0.05) as llm_a, FakeLLM(port=0, latency=0.05) as llm_b:
        try:
            common = {"prefix": redis_prefix, "ttl": TTL, "hook_log": log}
            await a.start(manifests, redis_url=proxy.url, model_url=llm_a.base_url, **common)

            async def a_holds() -> bool:
                return (await holders(redis, redis_prefix, ["solo"]))["solo"] == a_name

            await wait_for(a_holds, 20, "the first host holding the process")
            await b.start(manifests, redis_url=redis_url, model_url=llm_b.base_url, **common)
            async with httpx.AsyncClient(timeout=30) as http:
                for i in range(40):  # through the second host: it adds them to the stream
                    answer = await http.post(
                        f"{b.url}/api/v1/processes/solo/inject", json={"payload": {"n": i}}
                    )
                    assert answer.status_code == 202, answer.text
            deadline = time.monotonic() + 30
            while len(llm_a.prompts) < 10 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert llm_a.prompts, "the first host ran nothing"
            last_a = time.time()
            seen = len(llm_a.prompts)

            async def watch_a() -> None:
                nonlocal last_a, seen
                while True:
                    if len(llm_a.prompts) != seen:
                        seen, last_a = len(llm_a.prompts), time.time()
                    await asyncio.sleep(0.005)

            watcher = asyncio.create_task(watch_a())
            await proxy.cut()
            cut_at = time.time()

            async def b_started() -> bool:
                return any(
                    line["host"] == b_name and line["ctx"]["event"] == "session_start"
                    for line in hook_log(log)
                )

            await wait_for(b_started, TTL + 10, "the second host starting the process")
            watcher.cancel()
            lines = hook_log(log)
            b_start = next(
                line["at"]
                for line in lines
                if line["host"] == b_name and line["ctx"]["event"] == "session_start"
            )
            a_end = [
                line
                for line in lines
                if line["host"] == a_name and line["ctx"]["event"] == "session_end"
            ]
            assert a_end, "the cut-off host never stopped its copy"
            assert a_end[0]["ctx"]["data"]["reason"] == "lease lost"
            assert a_end[0]["at"] < b_start
            assert last_a < b_start, "the cut-off host ran the model after the other started"
            assert b_start - cut_at <= TTL + 5

            async def all_done() -> bool:
                got = {seq(p) for p in llm_a.prompts + llm_b.prompts}
                return len(got) >= 40 and not await redis.xlen(f"{redis_prefix}:q:solo")

            await wait_for(all_done, 60, "every event run")
        finally:
            await proxy.cut()
            a.kill()  # cut off: nothing of it is left in Redis to hand over
            await asyncio.gather(a.stop(), b.stop())
