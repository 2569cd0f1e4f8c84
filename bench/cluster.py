"""Events per second across 1, 2 and 3 hosts on Redis, beside one host's in-memory queue.

Run: ``.venv/bin/python bench/cluster.py`` (Redis on 127.0.0.1:6379, or ``TETHER_REDIS_URL``).

Every row is measured in this one run. Each host is a real ``tether serve`` OS process on
loopback; the model is a FakeLLM in an OS process of its own, answering after 50 ms. Six
processes with concurrency 4 each; EVENTS events are injected over the hosts' control APIs
(round robin, 32 at a time) and the clock stops when every one has run: the hosts' APIs say
so for the in-memory queue, the emptied streams (entries are deleted when acknowledged) for
the cluster. The first row
is one host without ``--cluster`` (the in-memory queue); the others run ``--cluster`` with
1, 2 and 3 hosts (the Redis Streams queue, leases, history in Redis). On a machine with fewer
cores than hosts the rows measure CPU sharing as much as the cluster: read them beside the
cores the run had (printed).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

EVENTS = 600
PROCESSES = [f"bench{i}" for i in range(6)]
LATENCY = 0.05
TTL = 5.0
REDIS_URL = os.environ.get("TETHER_REDIS_URL", "redis://127.0.0.1:6379/0")


def manifests(folder: Path) -> list[Path]:
    paths = []
    for name in PROCESSES:
        path = folder / f"{name}.agent"
        path.write_text(
            f'version: "1.0"\nname: {name}\nmodel: openai:fake-llm\n'
            "instructions: Answer briefly.\nconcurrency: 4\nmax_queue_size: 10000\n"
        )
        paths.append(path)
    return paths


async def start_host(
    folder: Path, name: str, files: list[Path], model_url: str, cluster: list[str]
) -> tuple[asyncio.subprocess.Process, str]:
    out = folder / f"{name}.out"
    env = {**os.environ, "OPENAI_BASE_URL": model_url, "OPENAI_API_KEY": "bench"}
    with out.open("wb") as sink:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; from tether.cli import main; sys.exit(main())",
            "serve",
            *map(str, files),
            "--port",
            "0",
            "--quiet",
            *cluster,
            env=env,
            stdout=sink,
            stderr=asyncio.subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"control API on (http://127\.0\.0\.1:\d+)", out.read_text())
        if found:
            return child, found[1]
        await asyncio.sleep(0.05)
    raise RuntimeError(f"host {name} did not start:\n{out.read_text()}")


async def placed(prefix: str, hosts: int) -> None:
    """Wait until every process runs, spread over ``hosts`` hosts (and stays so 1 s)."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            tokens = [await client.get(f"{prefix}:lease:{p}") for p in PROCESSES]
            owners = {t.split(":", 1)[1] for t in tokens if t}
            if all(tokens) and len(owners) == hosts:
                return
            await asyncio.sleep(0.2)
        raise RuntimeError("the processes were not placed in time")
    finally:
        await client.aclose()


async def clean(prefix: str) -> None:
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        keys = [k async for k in client.scan_iter(f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


FAKE_LLM = """
import asyncio
from tether.testing import FakeLLM

async def main():
    async with FakeLLM(port=0, latency=%r) as llm:
        print(llm.base_url, flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


async def start_llm() -> tuple[asyncio.subprocess.Process, str]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FAKE_LLM % LATENCY, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    line = await asyncio.wait_for(child.stdout.readline(), 30)
    return child, line.decode().strip()


async def finished(http: httpx.AsyncClient, urls: list[str], prefix: str | None, runs: int) -> None:
    """Wait until ``runs`` runs are done: every stream empty (cluster), or the hosts' APIs
    counting them (in memory)."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        while True:
            if prefix is not None:
                if not any([await client.xlen(f"{prefix}:q:{p}") for p in PROCESSES]):
                    return
            else:
                done = 0
                for url in urls:
                    listed = (await http.get(f"{url}/api/v1/processes")).json()["processes"]
                    busy = any(p["queue_size"] or p["in_flight"] for p in listed)
                    done += 0 if busy else sum(p["invocation_count"] for p in listed)
                if done >= runs:
                    return
            await asyncio.sleep(0.02)
    finally:
        await client.aclose()


async def row(folder: Path, model_url: str, hosts: int, cluster: bool) -> float:
    """Events per second of one configuration."""
    files = manifests(folder)
    prefix = f"tether-bench-{uuid.uuid4().hex[:8]}"
    children = []
    try:
        for i in range(hosts):
            options = [
                *("--cluster", REDIS_URL, "--cluster-host", f"h{i}"),
                *("--cluster-prefix", prefix, "--lease-ttl", f"{TTL}"),
            ]
            options = options if cluster else []
            children.append(await start_host(folder, f"h{i}", files, model_url, options))
        if cluster:
            await placed(prefix, hosts)
        urls = [url for _, url in children]
        watched = prefix if cluster else None
        async with httpx.AsyncClient(timeout=60) as http:
            # One warm-up event per process (its first model call opens the connection).
            for i, name in enumerate(PROCESSES):
                await http.post(
                    f"{urls[i % hosts]}/api/v1/processes/{name}/inject",
                    json={"payload": {"n": -1}},
                )
            await finished(http, urls, watched, len(PROCESSES))
            gate = asyncio.Semaphore(32)

            async def inject(i: int) -> None:
                async with gate:
                    answer = await http.post(
                        f"{urls[i % hosts]}/api/v1/processes/{PROCESSES[i % 6]}/inject",
                        json={"payload": {"n": i}},
                    )
                    answer.raise_for_status()

            started = time.perf_counter()
            await asyncio.gather(*(inject(i) for i in range(EVENTS)))
            await finished(http, urls, watched, len(PROCESSES) + EVENTS)
            return EVENTS / (time.perf_counter() - started)
    finally:
        for child, _ in children:
            if child.returncode is None:
                child.send_signal(signal.SIGTERM)
        for child, _ in children:
            try:
                await asyncio.wait_for(child.wait(), 20)
            except TimeoutError:
                child.send_signal(signal.SIGKILL)
                await child.wait()
        await clean(prefix)


async def main() -> None:
    rows = [("1 host, in-memory queue", 1, False)] + [
        (f"{n} host{'s' if n > 1 else ''}, Redis Streams", n, True) for n in (1, 2, 3)
    ]
    results = []
    llm, model_url = await start_llm()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, hosts, cluster in rows:
                rate = await row(Path(tmp), model_url, hosts, cluster)
                results.append((label, rate))
                print(f"  measured: {label}: {rate:.0f} events/s", flush=True)
    finally:
        llm.send_signal(signal.SIGTERM)
        await llm.wait()
    base = results[0][1]
    print(
        f"\n{EVENTS} events, {len(PROCESSES)} processes x concurrency 4, FakeLLM latency "
        f"{LATENCY * 1000:.0f} ms, {os.cpu_count()} CPU cores (load {os.getloadavg()[0]:.1f})"
    )
    print(f"{'configuration':<30} {'events/s':>10} {'vs in-memory':>14}")
    for label, rate in results:
        print(f"{label:<30} {rate:>10.0f} {rate / base:>13.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
