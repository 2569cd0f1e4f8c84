"""A clustered process's step journal writes (to Redis, through ``RedisWrites``) that fail are
counted in the process's ``status()`` (``journal_errors``, the last error as
``journal_error``, redacted) as its own journal writes are, and its runs go on; a write
fenced by a lease another host took is no error and is not counted."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from _cluster_support import PrivateRedis
from redis.asyncio import Redis

from _process_support import Recorder, eventually
from tether import AgentRuntime, ProcessConfig, ProcessState, TriggerEvent
from tether.cluster import ClusterNode, cluster_config
from tether.hooks import HookEvent
from tether.models import OpenAIModel
from tether.testing import FakeLLM

pytestmark = pytest.mark.slow

#: Long enough that no renewal round notices a dead Redis while a test runs (it would stop
#: the copy after TTL/2).
TTL = 60.0


class HeldTool:
    """A tool whose calls wait for ``gate`` (the test acts on Redis while the first waits)."""

    def __init__(self) -> None:
        self.called, self.gate = asyncio.Event(), asyncio.Event()

    async def lookup(self, ticket: str) -> str:
        """Look a ticket up."""
        self.called.set()
        await self.gate.wait()
        return f"found {ticket}"


def fenced_steps(caplog: Any) -> list[str]:
    """What RedisWrites logged of its writes fenced (``StepsFenced``)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.pathname.endswith(os.path.join("cluster", "_steps.py"))
        and "its lease is" in r.getMessage()
    ]


async def held_process(
    redis_url: str, prefix: str, llm: FakeLLM, tool: HeldTool, calls: int = 1, **fields: Any
) -> tuple[AgentRuntime, ClusterNode]:
    """A node holding process ``ledger`` whose run calls ``tool`` ``calls`` times."""
    llm.tool_calls = [("lookup", {"ticket": f"T-{n}"}) for n in range(calls)]
    model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    runtime = AgentRuntime()
    config = ProcessConfig(model=model, tools=[tool.lookup], **fields)
    await runtime.add_process("ledger", cluster_config(config, TTL))
    node = ClusterNode(runtime, redis_url, host="h1", prefix=prefix, lease_ttl=TTL)
    await node.start()
    try:
        await eventually(lambda: "ledger" in node.held, timeout=20, what="the lease")
    except BaseException:
        await node.stop()
        raise
    return runtime, node


async def test_a_step_journal_write_lost_with_redis_is_counted_in_status_and_the_run_goes_on(
    private_redis: PrivateRedis, llm: FakeLLM
) -> None:
    """Redis dies while the tool runs (its ``started`` mark landed): the call's outcome, the
    model's last answer and the conversation are written to no Redis; each failure is counted
    and named in status(), the address (declared a secret here) redacted, and the run
    completes."""
    address = f"127.0.0.1:{private_redis.port}"
    tool = HeldTool()
    runtime, node = await held_process(
        private_redis.url, "errors", llm, tool, secrets={"REDIS_ADDRESS": address}
    )
    try:
        process = runtime.get("ledger")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
        await process.inject(TriggerEvent("t", "manual", {"n": 1}))
        await asyncio.wait_for(tool.called.wait(), 30)  # (a first model call imports the SDK)
        assert process.status()["journal_errors"] == 0  # the mark landed
        private_redis.kill()
        tool.gate.set()
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), timeout=20, what="the run")
        await eventually(lambda: process.journal_errors >= 1, timeout=20, what="a write failed")
        status = process.status()
        assert "Connection refused" in status["journal_error"]
        assert "[REDACTED:REDIS_ADDRESS]" in status["journal_error"]
        assert address not in status["journal_error"]
        assert rec.outcomes() == ["success"]
        assert status["state"] == ProcessState.RUNNING.value
    finally:
        if private_redis.child is None:  # killed: started again, empty, so the node leaves
            private_redis.start()
        await node.stop()


async def test_a_fenced_step_journal_write_is_not_counted(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM, caplog: Any
) -> None:
    """Another host takes the lease while the tool runs: the next call's ``started`` mark
    (waited for before the tool runs) is fenced, and the copy stops as having lost the lease;
    that is not a failed write."""
    tool = HeldTool()
    runtime, node = await held_process(redis_url, redis_prefix, llm, tool, calls=2)
    try:
        process = runtime.get("ledger")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.SESSION_END)
        await process.inject(TriggerEvent("t", "manual", {"n": 1}))
        await asyncio.wait_for(tool.called.wait(), 30)  # (a first model call imports the SDK)
        await redis.set(f"{redis_prefix}:lease:ledger", "999:elsewhere", px=60_000)
        with caplog.at_level("ERROR", logger="tether.cluster"):
            tool.gate.set()
            await eventually(lambda: rec.of(HookEvent.SESSION_END), timeout=20, what="the stop")
        assert fenced_steps(caplog)
        assert rec.of(HookEvent.SESSION_END)[0]["reason"] == "lease lost"
        status = process.status()
        assert (status["journal_errors"], status["journal_error"]) == (0, None)
    finally:
        await node.stop()
