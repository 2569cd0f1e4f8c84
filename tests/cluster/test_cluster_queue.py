"""The Redis Streams queue backend, in one runtime on a real Redis: delivery, acknowledgement,
attempts, retries and dead letters as on one host, the fencing of a lost lease."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _cluster_support import seq
from redis.asyncio import Redis

from _process_support import FailingModel, Recorder, eventually
from tether import AgentRuntime, ProcessConfig, ProcessState, TriggerEvent
from tether.cluster import ClusterNode, cluster_config
from tether.hooks import HookBlocked, HookConfig, HookEvent
from tether.models import OpenAIModel
from tether.testing import FakeLLM

pytestmark = pytest.mark.slow

TTL = 2.0


def config(llm: FakeLLM | None = None, **fields: Any) -> ProcessConfig:
    model: Any = (
        FailingModel() if llm is None else OpenAIModel("fake", base_url=llm.base_url, api_key="k")
    )
    return cluster_config(ProcessConfig(model=model, **fields), TTL)


async def node_with(
    redis_url: str, redis_prefix: str, processes: dict[str, ProcessConfig], host: str = "h1"
) -> tuple[AgentRuntime, ClusterNode]:
    runtime = AgentRuntime()
    for name, cfg in processes.items():
        await runtime.add_process(name, cfg)
    node = ClusterNode(runtime, redis_url, host=host, prefix=redis_prefix, lease_ttl=TTL)
    await node.start()
    return runtime, node


async def test_injected_events_run_once_each_and_leave_the_stream_empty(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    runtime, node = await node_with(redis_url, redis_prefix, {"triage": config(llm, concurrency=2)})
    try:
        process = runtime.get("triage")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_START)
        await eventually(lambda: "triage" in node.held, timeout=10, what="the lease")
        for i in range(20):
            await process.inject(TriggerEvent("t", "manual", {"n": i}))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 20, timeout=20)
        assert sorted(seq(p) for p in llm.prompts) == list(range(20))
        for _ in range(500):  # each acknowledgement is written after its task_completed
            if not await redis.xlen(f"{redis_prefix}:q:triage"):
                break
            await asyncio.sleep(0.01)
        await node.queue("triage").drain(5)
        assert await redis.xlen(f"{redis_prefix}:q:triage") == 0
        pending = await redis.xpending(f"{redis_prefix}:q:triage", "tether")
        assert pending["pending"] == 0
        assert await redis.hlen(f"{redis_prefix}:attempts:triage") == 0
    finally:
        await node.stop()
    assert await redis.get(f"{redis_prefix}:lease:triage") is None  # released on the way out


async def test_a_failing_event_is_retried_then_dead_lettered_in_redis_with_its_attempts(
    redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    cfg = config(max_retries=2, retry_backoff=0.01, restart={"max_consecutive_failures": 100})
    runtime, node = await node_with(redis_url, redis_prefix, {"flaky": cfg})
    try:
        process = runtime.get("flaky")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
        await eventually(lambda: "flaky" in node.held, timeout=10, what="the lease")
        event_id = await process.inject(TriggerEvent("t", "manual", {"n": 1}))
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 3, timeout=10)
        assert rec.outcomes() == ["retrying", "retrying", "failed"]
        await node.queue("flaky").drain(5)
        raw = await redis.hget(f"{redis_prefix}:dead:flaky", event_id)
        assert raw is not None
        letter = json.loads(raw)
        assert (letter["reason"], letter["attempts"]) == ("process failed", 3)
        assert await redis.xlen(f"{redis_prefix}:q:flaky") == 0
        assert [d["event_id"] for d in process.dead_letters] == [event_id]
    finally:
        await node.stop()


async def left_by_a_dead_host(redis: Redis, redis_prefix: str, process: str, attempts: int) -> str:
    """What a host killed mid-run leaves: an entry read by its consumer ("ghost"), not
    acknowledged, with ``attempts`` attempts started; no lease. Returns the event id."""
    stream = f"{redis_prefix}:q:{process}"
    await redis.xgroup_create(stream, "tether", id="0", mkstream=True)
    event = TriggerEvent("t", "manual", {"n": 1})
    entry = await redis.xadd(stream, {"event": json.dumps(event.to_dict()), "attempts": 0})
    await redis.xreadgroup("tether", "ghost", {stream: ">"}, count=1)
    await redis.hset(f"{redis_prefix}:attempts:{process}", entry, attempts)
    return event.event_id


async def test_an_entry_whose_host_died_during_its_last_attempt_is_dead_lettered_at_takeover(
    redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    event_id = await left_by_a_dead_host(redis, redis_prefix, "flaky", attempts=3)
    runtime = AgentRuntime()
    process = await runtime.add_process("flaky", config(max_retries=2))
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=TTL)
    await node.start()
    try:
        await eventually(lambda: rec.of(HookEvent.SESSION_START), timeout=10, what="the start")
        recovered = rec.of(HookEvent.SESSION_START)[0]["recovered"]
        assert recovered == {
            "source": "redis",
            "events": 0,
            "event_ids": [],
            "dead_letters": 1,
            "from_hosts": ["ghost"],
            "fencing_token": 1,
        }
        [letter] = process.dead_letters
        assert letter["reason"] == "process failed"
        assert "went away while attempt 3 ran" in letter["error"]
        await node.queue("flaky").drain(5)
        assert (
            json.loads(await redis.hget(f"{redis_prefix}:dead:flaky", event_id) or "{}")["attempts"]
            == 3
        )
        assert await redis.xlen(f"{redis_prefix}:q:flaky") == 0
        assert rec.of(HookEvent.TASK_COMPLETED) == []  # it did not run again
    finally:
        await node.stop()


async def test_an_entry_whose_host_died_with_retries_left_goes_on_counting_its_attempts(
    redis_url: str, redis_prefix: str, redis: Redis
) -> None:
    event_id = await left_by_a_dead_host(redis, redis_prefix, "flaky", attempts=1)
    runtime = AgentRuntime()
    cfg = config(max_retries=2, retry_backoff=0.01, restart={"max_consecutive_failures": 100})
    process = await runtime.add_process("flaky", cfg)
    rec = Recorder().attach(process.hooks, HookEvent.SESSION_START, HookEvent.TASK_COMPLETED)
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=TTL)
    await node.start()
    try:
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, timeout=10)
        assert rec.of(HookEvent.SESSION_START)[0]["recovered"]["event_ids"] == [event_id]
        # Attempts 2 and 3 (the first ran on the dead host): as journal recovery counts.
        assert rec.outcomes() == ["retrying", "failed"]
        assert [d["attempts"] for d in process.dead_letters] == [3]
    finally:
        await node.stop()


async def test_redelivered_dead_letters_leave_redis_and_run_again(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    runtime, node = await node_with(redis_url, redis_prefix, {"triage": config(llm, max_retries=0)})
    try:
        process = runtime.get("triage")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
        await eventually(lambda: "triage" in node.held, timeout=10, what="the lease")
        llm.errors = [400]  # the first request is refused (not retried): that run fails
        event_id = await process.inject(TriggerEvent("t", "manual", {"n": 5}))
        await eventually(lambda: rec.outcomes() == ["failed"], timeout=10)
        await node.queue("triage").drain(5)
        assert await redis.hexists(f"{redis_prefix}:dead:triage", event_id)
        assert await process.redeliver_dead_letters() == 1
        await eventually(lambda: rec.outcomes() == ["failed", "success"], timeout=10)
        await node.queue("triage").drain(5)
        assert not await redis.hexists(f"{redis_prefix}:dead:triage", event_id)
        assert process.dead_letters == []
    finally:
        await node.stop()


async def test_a_holder_whose_lease_was_taken_stops_its_copy_then_takes_it_back_once_free(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    """The fencing path in one host: the renewal finds another token, the copy stops
    (session_end "lease lost"); once the lease is free again this host takes it back with a
    new token, and a slow session_start is not taken for an operator's stop."""

    async def slow(ctx: Any) -> None:
        await asyncio.sleep(1.0)  # longer than a placement round (ttl / 5)

    hooks = [HookConfig(event="session_start", callback=slow)]
    runtime, node = await node_with(redis_url, redis_prefix, {"solo": config(llm, hooks=hooks)})
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.SESSION_END, HookEvent.SESSION_START)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=10)
        # Another host's lease (as if this one had been paused past its TTL).
        await redis.set(f"{redis_prefix}:lease:solo", "999:elsewhere", px=1500)
        await eventually(lambda: bool(rec.of(HookEvent.SESSION_END)), timeout=5)
        assert rec.of(HookEvent.SESSION_END)[0]["reason"] == "lease lost"
        await eventually(lambda: len(rec.of(HookEvent.SESSION_START)) == 2, timeout=15)
        await eventually(lambda: process.state == ProcessState.RUNNING, timeout=5)
        assert "solo" in node.held
        assert await redis.get(f"{redis_prefix}:desired:solo") is None
        token = await redis.get(f"{redis_prefix}:lease:solo")
        assert token == "2:h1"  # a new fencing token
    finally:
        await node.stop()


@pytest.mark.parametrize("write", ["ack", "dead", "attempt"])
async def test_every_fenced_write_is_refused_with_a_stale_token_and_changes_nothing(
    redis_prefix: str, redis: Redis, write: str
) -> None:
    """The scripts behind an acknowledgement, a dead letter and an attempt count compare the
    caller's fencing token with the lease's: a host whose lease was taken writes nothing."""
    from tether.store._redis import FENCED, GROUP, Keys, Scripts

    keys, scripts = Keys(redis_prefix), Scripts(redis)
    stream, attempts, dead, lease = (
        keys.stream("p"),
        keys.attempts("p"),
        keys.dead("p"),
        keys.lease("p"),
    )
    await redis.xgroup_create(stream, GROUP, id="0", mkstream=True)
    entry = await redis.xadd(stream, {"event": "{}", "attempts": 0})
    await redis.xreadgroup(GROUP, "h1", {stream: ">"}, count=1)
    await redis.hset(attempts, entry, 1)
    await redis.set(lease, "2:h2")  # the lease moved on; h1 still holds token 1:h1
    if write == "ack":
        answer = await scripts.ack(keys=[lease, stream, attempts], args=["1:h1", GROUP, entry])
    elif write == "dead":
        answer = await scripts.dead(
            keys=[lease, stream, attempts, dead], args=["1:h1", GROUP, entry, "e1", "{}"]
        )
    else:
        answer = await scripts.attempt(keys=[lease, attempts], args=["1:h1", entry, 5])
    assert answer == FENCED
    assert (await redis.xpending(stream, GROUP))["pending"] == 1
    assert await redis.xlen(stream) == 1
    assert await redis.hget(attempts, entry) == "1"
    assert not await redis.exists(dead)
    # The holder's own token writes.
    answer = await scripts.ack(keys=[lease, stream, attempts], args=["2:h2", GROUP, entry])
    assert answer == 1
    assert await redis.xlen(stream) == 0


async def test_an_acknowledgement_after_the_lease_was_taken_is_refused_and_the_copy_stops(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM, caplog: Any
) -> None:
    """The lease is taken while an event runs, before the holder's renewal (a long TTL) can
    notice: the run's acknowledgement is fenced, the entry stays pending for the new holder,
    and the copy stops as having lost its lease."""
    started, gate = asyncio.Event(), asyncio.Event()

    async def held_up(ctx: Any) -> None:
        started.set()
        await gate.wait()

    hooks = [HookConfig(event="user_prompt_submit", callback=held_up, timeout=60)]
    runtime = AgentRuntime()
    await runtime.add_process(
        "solo",
        cluster_config(
            ProcessConfig(
                model=OpenAIModel("fake", base_url=llm.base_url, api_key="k"), hooks=hooks
            ),
            60,
        ),
    )
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=60)
    await node.start()
    try:
        process = runtime.get("solo")
        assert process is not None
        rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.SESSION_END)
        await eventually(lambda: "solo" in node.held, timeout=10, what="the lease")
        await process.inject(TriggerEvent("t", "manual", {"n": 1}))
        await asyncio.wait_for(started.wait(), 10)
        await redis.set(f"{redis_prefix}:lease:solo", "999:elsewhere", px=60_000)
        with caplog.at_level("ERROR", logger="tether.cluster"):
            gate.set()
            await eventually(lambda: bool(rec.of(HookEvent.SESSION_END)), timeout=10)
        assert rec.outcomes() == ["success"]
        assert rec.of(HookEvent.SESSION_END)[0]["reason"] == "lease lost"
        # A write of the run's end found it (the step journal's save of the conversation, or
        # the ack), not the renewal.
        assert "a write found its lease taken (fenced)" in caplog.text
        pending = await redis.xpending(f"{redis_prefix}:q:solo", "tether")
        assert pending["pending"] == 1  # left for the next holder
        assert await redis.xlen(f"{redis_prefix}:q:solo") == 1
    finally:
        gate.set()
        await node.stop()


async def test_a_published_event_goes_through_task_created_to_the_stream_and_runs_once(
    redis_url: str, redis_prefix: str, redis: Redis, llm: FakeLLM
) -> None:
    """Event triggers under the cluster: the runtime that publishes need not hold the
    process; the event passes task_created there (which may refuse it: a dead letter, nothing
    added to the stream), is added to the stream and runs once, on the holder."""

    async def refuse(ctx: Any) -> None:
        raise HookBlocked("refunds need a human")

    def cfg() -> ProcessConfig:
        return config(
            llm,
            triggers=[
                {"type": "event", "id": "orders", "event_type": "order.placed"},
                {"type": "event", "id": "refunds", "event_type": "refund.asked"},
            ],
            hooks=[
                HookConfig(event="task_created", callback=refuse, matcher={"trigger_id": "refunds"})
            ],
        )

    first, node1 = await node_with(redis_url, redis_prefix, {"solo": cfg()}, host="h1")
    second, node2 = await node_with(redis_url, redis_prefix, {"solo": cfg()}, host="h2")
    try:
        await eventually(lambda: "solo" in node1.held or "solo" in node2.held, timeout=10)
        holder, other = (first, second) if "solo" in node1.held else (second, first)
        held, elsewhere = holder.get("solo"), other.get("solo")
        assert held is not None
        assert elsewhere is not None
        done = Recorder().attach(held.hooks, HookEvent.TASK_COMPLETED)
        not_here = Recorder().attach(elsewhere.hooks, HookEvent.TASK_COMPLETED)
        [refused] = await other.publish("refund.asked", {"n": 6})
        [accepted] = await other.publish("order.placed", {"n": 7})
        await eventually(lambda: len(done.of(HookEvent.TASK_COMPLETED)) == 1, timeout=10)
        assert done.of(HookEvent.TASK_COMPLETED)[0]["event_id"] == accepted
        assert not_here.of(HookEvent.TASK_COMPLETED) == []
        assert [seq(p) for p in llm.prompts] == [7]
        letters = [(d["event_id"], d["reason"]) for d in elsewhere.dead_letters]
        assert letters == [(refused, "blocked by hook")]
        await asyncio.sleep(0.5)  # and nothing else runs
        assert len(done.of(HookEvent.TASK_COMPLETED)) == 1
        assert len(llm.prompts) == 1
    finally:
        await node1.stop()
        await node2.stop()


async def test_hook_run_history_in_redis_is_capped_at_its_length_keeping_the_newest(
    redis_url: str, redis_prefix: str, llm: FakeLLM
) -> None:
    """A clustered process's hook runs go to a Redis stream capped (approximately, as
    XADD MAXLEN ~ trims) at HISTORY_KEPT entries: older runs make room for newer ones. (Read
    with the node's own client, every call bounded.)"""
    from tether.cluster._node import HISTORY_KEPT

    async def audit(ctx: Any) -> None:
        return None

    hooks = [HookConfig(event="task_created", callback=audit, name="audit")]
    runtime, node = await node_with(redis_url, redis_prefix, {"solo": config(llm, hooks=hooks)})
    try:
        process = runtime.get("solo")
        assert process is not None
        await eventually(lambda: "solo" in node.held, timeout=10, what="the lease")
        batch = HISTORY_KEPT * 6 // 10
        for round_ in range(2):
            for i in range(batch):
                data = {"event_id": f"{round_}-{i}", "trigger_id": "t", "trigger_type": "manual"}
                await process.hooks.dispatch(HookEvent.TASK_CREATED, data)
            await asyncio.wait_for(node.flush_history("solo"), 30)
        kept = await asyncio.wait_for(node.client.xlen(f"{redis_prefix}:history:solo"), 30)
        assert HISTORY_KEPT <= kept < HISTORY_KEPT + 200, kept  # trimmed in whole nodes
        runs = await asyncio.wait_for(node.hook_runs("solo"), 30)
        assert len(runs) == HISTORY_KEPT
        last = await asyncio.wait_for(node.hook_runs("solo", last=1), 30)
        assert [run["hook_name"] for run in last] == ["audit"]
        assert last[0] == runs[-1]
    finally:
        await node.stop()


async def test_a_clustered_process_keeps_its_recorder_its_listeners_and_its_own_reads(
    redis_url: str, redis_prefix: str, llm: FakeLLM
) -> None:
    """The cluster sends the runs to Redis through the process's own recorder: a listener
    added before the host started (telemetry's, say) and the process's own hook_runs() still
    see every run."""

    async def audit(ctx: Any) -> None:
        return None

    runtime = AgentRuntime()
    process = await runtime.add_process(
        "solo", config(llm, hooks=[HookConfig(event="task_created", callback=audit)])
    )
    heard: list[Any] = []
    process.history.add_listener(heard.extend)
    node = ClusterNode(runtime, redis_url, host="h1", prefix=redis_prefix, lease_ttl=TTL)
    await node.start()
    try:
        await eventually(lambda: "solo" in node.held, timeout=10, what="the lease")
        await process.inject(TriggerEvent("t", "manual", {"n": 1}))
        await eventually(lambda: len(llm.prompts) == 1, timeout=10, what="the run")
        assert [run.event for run in heard] == ["task_created"]
        assert [run.event for run in process.hook_runs()] == ["task_created"]
        in_redis = await node.hook_runs("solo")
        assert [run["event"] for run in in_redis] == ["task_created"]
    finally:
        await node.stop()


async def test_a_node_loop_that_lost_its_cancellation_is_cancelled_again_until_it_ends() -> None:
    """On Python 3.11 redis-py's asyncio.wait_for can lose a cancel (the CI hang of stop)."""
    from tether.cluster._node import _cancel_and_wait

    cancels = 0

    async def loses_the_first_cancel() -> None:
        nonlocal cancels
        while True:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancels += 1
                if cancels == 2:
                    raise

    task = asyncio.get_running_loop().create_task(loses_the_first_cancel())
    await asyncio.sleep(0)
    await asyncio.wait_for(_cancel_and_wait([task]), 10)
    assert task.cancelled()
    assert cancels == 2


async def test_the_newest_runs_of_a_filter_are_read_from_redis_across_pages(
    redis_url: str, redis_prefix: str, llm: FakeLLM
) -> None:
    """hook_runs(last=N, match=...) reads the stream newest first, a page at a time, and
    answers what a read of the whole stream filtered would: the newest N matching runs,
    oldest first, found across pages (the matching runs are 1 in 7)."""
    from tether.cluster._node import HISTORY_PAGE

    async def audit(ctx: Any) -> None:
        return None

    hooks = [HookConfig(event="task_created", callback=audit, name="audit")]
    runtime, node = await node_with(redis_url, redis_prefix, {"solo": config(llm, hooks=hooks)})
    try:
        process = runtime.get("solo")
        assert process is not None
        await eventually(lambda: "solo" in node.held, timeout=10, what="the lease")
        for i in range(HISTORY_PAGE * 3):
            data = {"event_id": f"e{i}", "trigger_id": "t", "trigger_type": "manual"}
            await process.hooks.dispatch(HookEvent.TASK_CREATED, data)
        await asyncio.wait_for(node.flush_history("solo"), 30)
        every = await asyncio.wait_for(node.hook_runs("solo"), 30)
        assert len(every) == HISTORY_PAGE * 3

        chosen = {run["dispatch_id"] for run in every[::7]}

        def sevenths(run: dict[str, Any]) -> bool:
            return run["dispatch_id"] in chosen

        wanted = [run for run in every if sevenths(run)][-100:]
        found = await asyncio.wait_for(node.hook_runs("solo", last=100, match=sevenths), 30)
        assert found == wanted
        assert found[-1] == every[::7][-1]
        assert await asyncio.wait_for(node.hook_runs("solo", last=0), 30) == []
        assert await asyncio.wait_for(node.hook_runs("solo", match=sevenths), 30) == [
            run for run in every if sevenths(run)
        ]
    finally:
        await node.stop()
