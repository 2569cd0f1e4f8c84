"""Stop leaves nothing running: after stop() of every process, no thread, child process or
open descriptor is left that was not there before (journal, history, command hooks, detached
grandchildren, a persistent hook's co-process and its detached grandchildren, async hooks,
file-watch and webhook triggers, API)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

import httpx
import pytest

from _net_support import free_port
from _process_support import children, eventually
from tether import AgentRuntime, HookContext, HookEvent, HookManager, OrchestrationAPI

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


#: watchfiles runs its watch in a thread of anyio's pool, which keeps an idle thread up to
#: 10 s before it ends it: not a thread of tether's (its watch has ended with the trigger).
POOLED = ("AnyIO worker thread",)


#: A persistent hook's program: each event starts a detached ``sleep`` (holding its pipes).
PERSISTENT = """
import json, os, sys
for line in sys.stdin:
    os.system("setsid sleep 300 &")
    print(json.dumps({"id": json.loads(line)["id"]}), flush=True)
"""


def threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None and t.name not in POOLED}


def thread_names(idents: set[int]) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.ident in idents)


def fds() -> dict[int, str]:
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return out


async def settled(before_threads: set[int], before_children: set[int]) -> None:
    """Threads and children end a moment after the stop (a thread's last instructions)."""
    await eventually(lambda: threads() <= before_threads, timeout=5, what="threads to end")
    await eventually(lambda: children() <= before_children, timeout=5, what="children to go")


@pytest.mark.slow
async def test_stopping_every_process_leaves_no_thread_child_or_descriptor(tmp_path: Path) -> None:
    db = tmp_path / "tether.db"
    watched = tmp_path / "inbox"
    watched.mkdir()
    port = free_port()
    before = (threads(), children(), fds())

    runtime = AgentRuntime(hooks=HookManager())
    persistent = tmp_path / "persistent.py"
    persistent.write_text(PERSISTENT)
    hooks = [
        {"event": "task_completed", "command": ["/bin/sh", "-c", "setsid sleep 300 & exit 0"]},
        {"event": "task_created", "command": [sys.executable, str(persistent)], "persistent": True},
        {"event": "user_prompt_submit", "command": ["/bin/true"], "mode": "async"},
    ]
    triggers = [
        {"type": "webhook", "webhook_path": "/t", "webhook_port": port},
        {"type": "file_watch", "watch_path": str(watched)},
    ]
    config = {"model": "scripted", "journal_path": str(db), "hooks": hooks, "triggers": triggers}
    first = await runtime.add_process("first", config)
    second = await runtime.add_process("second", {"model": "scripted", "journal_path": str(db)})

    async def noted(ctx: HookContext) -> None:
        await asyncio.sleep(0)

    second.hooks.register(HookEvent.TASK_COMPLETED, noted, mode="async")
    api = OrchestrationAPI(runtime, port=0)
    await api.start()
    await runtime.start_all()
    async with httpx.AsyncClient() as client:
        for i in range(5):
            r = await client.post(f"http://127.0.0.1:{port}/t", json={"n": i})
            assert r.status_code == 202
            r = await client.post(f"{api.url}/api/v1/processes/second/inject", json={})
            assert r.status_code == 202
    (watched / "note.txt").write_text("hello")
    await eventually(
        lambda: (
            first.status()["invocation_count"] >= 6 and second.status()["invocation_count"] >= 5
        ),
        timeout=20,
        what="the runs",
    )
    await api.stop()
    await runtime.stop_all()

    await settled(before[0], before[1])
    assert thread_names(threads() - before[0]) == []
    assert children() - before[1] == set()
    # watchfiles' Rust watcher closes its poll descriptors on a thread of its own, a moment
    # after the watch ended.
    await eventually(lambda: set(fds()) <= set(before[2]), timeout=5, what="descriptors")
    left = {fd: target for fd, target in fds().items() if fd not in before[2]}
    assert left == {}
