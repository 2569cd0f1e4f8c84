"""Idle processes by the thousand in one runtime: add, start, stop, memory, webhook latency.

Run: ``.venv/bin/python bench/scale.py`` (``--profile`` adds a cProfile of the largest add;
``--sizes 100,1000`` picks the sizes; ``--journaled-sizes`` those of the journaled rows).

Every row is measured in this one run, each in a fresh interpreter. A row adds N idle
processes (the scripted model, no trigger) to a running ``AgentRuntime`` (so each add also
starts its process), then stops them all with ``stop_all``. Beside it, the baseline: the
same N ``AgentProcess`` objects created and started by hand in a dict, with no runtime (what
the runtime's own bookkeeping adds is the difference). "first/last 1k" are the seconds the
first and the last 1,000 adds took (for N below 1,000: the first and last tenth, scaled to
1,000). RSS is the resident memory the N started processes added (read from /proc, after a
collection), per process. The journaled rows give every process the same SQLite journal
file; a size that fails (a descriptor limit) says how far it got. The webhook rows time one
unsigned POST over loopback HTTP to one of N processes, each with a webhook trigger of its
own on one shared port (median of REQUESTS).
"of it gc s" is how long CPython's cyclic garbage collector ran during the adds (gc.callbacks):
its full collections walk every live object, so their total grows with the heap, and a
runtime of N processes pays about N times a process's objects each time. The row "collector
off" is the largest runtime row with the collector disabled during the adds: what tether's
own code costs.

Targets (issue 28): 10,000 idle processes added and started within 3 s, the last 1,000 adds
no slower than twice the first 1,000, at most 40 KiB RSS per idle process, stopped within 3 s;
a webhook request at 10,000 processes within 1.5x its latency at 10.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from tether import AgentProcess, AgentRuntime, ProcessConfig
from tether.api import WebhookServer

SIZES = (100, 1_000, 10_000)
JOURNALED_SIZES = (100, 1_000, 10_000)
WEBHOOK_SIZES = (10, 10_000)
REQUESTS = 300
ADD_TARGET_S = 3.0
STOP_TARGET_S = 3.0
RSS_TARGET_KIB = 40.0
SLOWDOWN_TARGET = 2.0
WEBHOOK_TARGET = 1.5


def rss_kib() -> float:
    """The resident memory of this process now (not its peak), in KiB."""
    gc.collect()
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024


class GcPauses:
    """Seconds the cyclic garbage collector ran while this is open (gc.callbacks)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def idle_config(journal: str | None = None, **extra: Any) -> ProcessConfig:
    return ProcessConfig(model="scripted", instructions="Stay idle.", journal_path=journal, **extra)


def chunks(marks: list[float], n: int) -> tuple[float, float]:
    """Seconds of the first and the last 1,000 adds (or tenth, scaled to 1,000)."""
    size = min(1_000, max(1, n // 10))
    first = marks[size] - marks[0]
    last = marks[n] - marks[n - size]
    return first * 1_000 / size, last * 1_000 / size


async def runtime_row(n: int, journal: str | None, *, collect: bool = True) -> dict[str, Any]:
    config = idle_config(journal)
    before = rss_kib()
    runtime = AgentRuntime()
    await runtime.start_all()
    marks = [time.perf_counter()]
    if not collect:
        gc.disable()
    try:
        with GcPauses() as pauses:
            for i in range(n):
                await runtime.add_process(f"p{i}", config)
                marks.append(time.perf_counter())
    except OSError as exc:
        await runtime.stop_all()
        return {"failed": f"{type(exc).__name__} after {len(runtime)} processes: {exc}"}
    rss = (rss_kib() - before) / n
    first, last = chunks(marks, n)
    start = time.perf_counter()
    await runtime.stop_all()
    stopped = time.perf_counter() - start
    added = marks[-1] - marks[0]
    return {
        "add": added,
        "first": first,
        "last": last,
        "gc": pauses.seconds,
        "rss": rss,
        "stop": stopped,
    }


async def baseline_row(n: int) -> dict[str, Any]:
    """The same processes created and started by hand: no runtime around them."""
    config = idle_config()
    before = rss_kib()
    processes: dict[str, AgentProcess] = {}
    start = time.perf_counter()
    with GcPauses() as pauses:
        for i in range(n):
            process = AgentProcess(f"p{i}", config)
            processes[process.name] = process
            await process.start()
    added = time.perf_counter() - start
    rss = (rss_kib() - before) / n
    start = time.perf_counter()
    await asyncio.gather(*(p.stop() for p in processes.values()))
    await asyncio.gather(*(p.aclose() for p in processes.values()))
    return {"add": added, "gc": pauses.seconds, "rss": rss, "stop": time.perf_counter() - start}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def webhook_latency(n: int) -> float:
    """Median seconds of one webhook POST answered 202 with ``n`` webhook processes."""
    port = free_port()
    runtime = AgentRuntime()
    for i in range(n):
        trigger = {"type": "webhook", "webhook_path": f"/p{i}", "webhook_port": port}
        await runtime.add_process(f"p{i}", idle_config(triggers=[trigger], max_queue_size=1))
    server = WebhookServer(runtime)
    await runtime.start_all()
    await server.start()
    times: list[float] = []
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for k in range(REQUESTS + 20):
                path = f"/p{k * 7919 % n}"
                start = time.perf_counter()
                answer = await client.post(path, json={"k": k})
                times.append(time.perf_counter() - start)
                assert answer.status_code == 202, answer.text
    finally:
        await server.stop()
        await runtime.stop_all()
    return statistics.median(times[20:])


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def print_rows(rows: list[tuple[str, int, dict[str, Any]]]) -> None:
    print(
        f"{'':<26}{'N':>7}{'add+start s':>13}{'of it gc s':>12}{'first 1k s':>12}"
        f"{'last 1k s':>11}{'KiB/proc':>10}{'stop s':>9}"
    )
    for label, n, row in rows:
        if "failed" in row:
            print(f"{label:<26}{n:>7}  {row['failed']}")
            continue
        first = f"{row['first']:.3f}" if "first" in row else "—"
        last = f"{row['last']:.3f}" if "last" in row else "—"
        print(
            f"{label:<26}{n:>7}{row['add']:>13.3f}{row['gc']:>12.3f}{first:>12}{last:>11}"
            f"{row['rss']:>10.1f}{row['stop']:>9.3f}"
        )


def check_targets(rows: list[tuple[str, int, dict[str, Any]]]) -> None:
    for label, n, row in rows:
        if not label.startswith("runtime") or "journaled" in label or "failed" in row:
            continue
        if n != max(r[1] for r in rows):
            continue
        print(f"targets at N={n:,} ({label}):")
        print(
            f"  added and started {row['add']:.2f} s <= {ADD_TARGET_S} s: "
            f"{verdict(row['add'] <= ADD_TARGET_S)}"
        )
        ratio = row["last"] / row["first"]
        print(
            f"  last 1k / first 1k {ratio:.2f} <= {SLOWDOWN_TARGET}: "
            f"{verdict(ratio <= SLOWDOWN_TARGET)}"
        )
        print(
            f"  RSS {row['rss']:.1f} KiB/process <= {RSS_TARGET_KIB}: "
            f"{verdict(row['rss'] <= RSS_TARGET_KIB)}"
        )
        print(
            f"  stopped {row['stop']:.2f} s <= {STOP_TARGET_S} s: "
            f"{verdict(row['stop'] <= STOP_TARGET_S)}"
        )


def in_child(kind: str, n: int, journal: str | None = None) -> dict[str, Any]:
    """One row, measured in a fresh interpreter (so memory freed by a row before is not
    counted as this one's, and every row starts from the same heap)."""
    command = [sys.executable, __file__, "--row", kind, str(n), journal or ""]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


async def one_row(kind: str, n: int, journal: str) -> dict[str, Any]:
    if kind == "baseline":
        return await baseline_row(n)
    if kind == "webhook":
        return {"seconds": await webhook_latency(n)}
    return await runtime_row(n, journal or None, collect=kind != "runtime-nogc")


def main(args: argparse.Namespace) -> None:
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(
        f"idle processes in one runtime (open-file limit {limit}); each row in a fresh interpreter"
    )
    rows: list[tuple[str, int, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            rows.append(("baseline (no runtime)", n, in_child("baseline", n)))
            rows.append(("runtime", n, in_child("runtime", n)))
        n = max(args.sizes)
        rows.append(("runtime, collector off", n, in_child("runtime-nogc", n)))
        for n in args.journaled_sizes:
            journal = str(Path(folder) / f"journal-{n}.db")
            rows.append(("runtime, journaled", n, in_child("runtime", n, journal)))
    print_rows(rows)
    check_targets(rows)
    if args.webhook_sizes:
        latencies = {n: in_child("webhook", n)["seconds"] for n in args.webhook_sizes}
        print(f"\nwebhook POST over loopback, median of {REQUESTS}")
        for n, seconds in latencies.items():
            print(f"  N={n:>6,}: {seconds * 1e3:.3f} ms")
        low, high = min(latencies), max(latencies)
        ratio = latencies[high] / latencies[low]
        print(
            f"  N={high:,} / N={low:,}: {ratio:.2f}x <= {WEBHOOK_TARGET}x: "
            f"{verdict(ratio <= WEBHOOK_TARGET)}"
        )
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        asyncio.run(runtime_row(max(args.sizes), None))
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


def sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=sizes, default=SIZES)
    parser.add_argument("--journaled-sizes", type=sizes, default=JOURNALED_SIZES)
    parser.add_argument("--webhook-sizes", type=sizes, default=WEBHOOK_SIZES)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--row", nargs=3, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.row:
        kind, n, journal = arguments.row
        print(json.dumps(asyncio.run(one_row(kind, int(n), journal))))
    else:
        main(arguments)
