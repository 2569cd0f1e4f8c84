"""The step journal of a clustered process in a real Redis: every write fenced by the lease's
token, written in order on the store's thread, read back as the durable runs need it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.asyncio import Redis

from tether.store._redis import Keys
from tether.store._redis_steps import CALL_WAIT, RedisStepStore, StepsFenced, connect_sync


class Lease:
    """The token a holder thinks it holds (the stream queue's, in a host)."""

    def __init__(self) -> None:
        self.token: str | None = "1:h1"


@pytest.fixture
def lease() -> Lease:
    return Lease()


@pytest.fixture
def store(redis_url: str, redis_prefix: str, lease: Lease) -> Iterator[RedisStepStore]:
    client = connect_sync(redis_url, timeout=2.0)
    made = RedisStepStore(client, Keys(redis_prefix), "ledger", token=lambda: lease.token)
    yield made
    made.close()
    client.close()


async def take(redis: Redis, prefix: str, token: str) -> None:
    await redis.set(f"{prefix}:lease:ledger", token)


def on_thread(store: RedisStepStore, call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call`` as a process's journal writes run it: on the store's thread, its error raised."""
    return store.submit(call, *args, **kwargs).result(10)


async def test_steps_written_are_read_back_in_the_runs_order(
    store: RedisStepStore, redis: Redis, redis_prefix: str
) -> None:
    await take(redis, redis_prefix, "1:h1")
    rows = [
        ("tool:2:0", "started", {"tool_name": "append"}),
        ("model:1", "done", {"content": None, "tool_calls": []}),
        ("tool:1:0", "done", {"text": "appended 1", "counted": 1, "denied": 0}),
        ("model:2", "done", {"content": None, "tool_calls": []}),
    ]
    on_thread(store, store.write, "evt-1", rows, time.time(), state={"n": 1})
    found = store.steps("evt-1")
    assert list(found) == ["model:1", "tool:1:0", "model:2", "tool:2:0"]
    assert found["tool:2:0"] == ("started", {"tool_name": "append"})
    assert store.steps("evt-2") == {}
    assert store.context() == ([], {"n": 1})


async def test_a_write_by_a_host_whose_lease_is_another_hosts_lands_nothing(
    store: RedisStepStore, redis: Redis, redis_prefix: str, lease: Lease
) -> None:
    await take(redis, redis_prefix, "2:h2")  # another host took the process over
    with pytest.raises(StepsFenced):
        on_thread(store, store.write, "evt-1", [("model:1", "done", {})], time.time())
    with pytest.raises(StepsFenced):
        on_thread(store, store.save_context, [(False, None, [(0, '{"role": "user"}')])], "{}")
    with pytest.raises(StepsFenced):
        on_thread(store, store.save_approval, "key", {"request_id": "r"}, None)
    lease.token = None  # fenced here already: not even sent
    with pytest.raises(StepsFenced):
        on_thread(store, store.forget, [("evt-1", time.time())])
    assert await redis.keys(f"{redis_prefix}:steps:*") == []
    assert await redis.keys(f"{redis_prefix}:conversation:*") == []
    assert await redis.keys(f"{redis_prefix}:approvals:*") == []


async def test_a_write_made_off_the_stores_thread_that_is_fenced_is_logged_not_raised(
    store: RedisStepStore, redis: Redis, redis_prefix: str, caplog: Any
) -> None:
    """A stop's last writes (made on the event loop) never stop the stop."""
    await take(redis, redis_prefix, "2:h2")
    await asyncio.to_thread(store.write, "evt-1", [("model:1", "done", {})], time.time())
    assert "its lease is another host's" in caplog.text
    assert store.steps("evt-1") == {}


async def test_forgetting_a_run_keeps_the_steps_a_later_run_of_its_event_wrote(
    store: RedisStepStore, redis: Redis, redis_prefix: str
) -> None:
    await take(redis, redis_prefix, "1:h1")
    on_thread(store, store.write, "evt-1", [("model:1", "done", {"a": 1})], 100.0)
    on_thread(store, store.write, "evt-1", [("model:2", "done", {"b": 2})], 200.0)
    on_thread(store, store.write, "evt-2", [("model:1", "done", {"c": 3})], 100.0)
    on_thread(store, store.forget, [("evt-1", 150.0)])
    assert list(store.steps("evt-1")) == ["model:2"]
    assert list(store.steps("evt-2")) == ["model:1"]


async def test_a_takeover_prunes_the_steps_of_every_run_that_will_not_resume(
    store: RedisStepStore, redis: Redis, redis_prefix: str
) -> None:
    await take(redis, redis_prefix, "1:h1")
    for event_id in ("done-long-ago", "claimed"):
        on_thread(store, store.write, event_id, [("model:1", "done", {})], time.time())
    on_thread(store, store.prune_except, ["claimed"])
    assert store.steps("done-long-ago") == {}
    assert list(store.steps("claimed")) == ["model:1"]


async def test_the_conversation_changes_apply_in_order(
    store: RedisStepStore, redis: Redis, redis_prefix: str
) -> None:
    await take(redis, redis_prefix, "1:h1")
    said = [(i, f'{{"role": "user", "content": "m{i}"}}') for i in range(4)]
    on_thread(store, store.save_context, [(False, None, said)], None)
    # Compaction dropped the first two, a run added one; then a rewind wrote it all anew.
    on_thread(store, store.save_context, [(False, 2, [(4, '{"content": "m4"}')])], '{"k": 1}')
    messages, state = store.context()
    assert [seq for seq, _ in messages] == [2, 3, 4]
    assert state == {"k": 1}
    on_thread(store, store.save_context, [(True, None, [(5, '{"content": "m5"}')])], None)
    assert store.context() == ([(5, {"content": "m5"})], {"k": 1})


async def test_approvals_are_kept_with_their_answer_until_forgotten(
    store: RedisStepStore, redis: Redis, redis_prefix: str
) -> None:
    await take(redis, redis_prefix, "1:h1")
    on_thread(store, store.save_approval, "k2", {"request_id": "r2", "asked_at": 2.0}, None)
    on_thread(store, store.save_approval, "k1", {"request_id": "r1", "asked_at": 1.0}, None)
    on_thread(store, store.save_approval, "k2", {"request_id": "r2", "asked_at": 2.0}, {"ok": 1})
    assert [(k, r["request_id"], d) for k, r, d in store.approvals()] == [
        ("k1", "r1", None),
        ("k2", "r2", {"ok": 1}),
    ]
    on_thread(store, store.forget_approval, "k1")
    assert [k for k, _, _ in store.approvals()] == ["k2"]


async def test_a_write_queued_under_a_lease_this_host_has_since_taken_again_lands_nothing(
    store: RedisStepStore, redis: Redis, redis_prefix: str, lease: Lease
) -> None:
    """A write of the last hold, still queued on the store's thread when the host took the
    process over again (a new token), must not land over what was written since."""
    await take(redis, redis_prefix, "1:h1")
    gate = threading.Event()
    store.submit(gate.wait, 10)  # the thread is busy: what follows waits behind it
    stale = store.submit(store.write, "evt-1", [("model:1", "done", {"old": 1})], time.time())
    lease.token = "3:h1"
    await take(redis, redis_prefix, "3:h1")
    gate.set()
    with pytest.raises(StepsFenced):
        await asyncio.wrap_future(stale)
    assert store.steps("evt-1") == {}


async def test_a_stops_write_once_the_lease_is_lost_does_not_wait_for_a_stuck_thread(
    store: RedisStepStore, lease: Lease, caplog: Any
) -> None:
    """A host cut off from Redis: its store's thread is stuck in a call; the stop's last
    writes (on the event loop) are not made, and wait for nothing."""
    gate, finished = threading.Event(), threading.Event()

    def stuck() -> None:  # (shorter than a waiting call's bound: one that waited sees it end)
        gate.wait(CALL_WAIT / 2)
        finished.set()

    store.submit(stuck)
    lease.token = None  # the node fenced the queue: the lease is lost
    try:
        await asyncio.to_thread(store.write, "evt-1", [("model:1", "done", {})], time.time())
        await asyncio.to_thread(store.close)
        assert not finished.is_set()  # neither waited for the stuck call
    finally:
        gate.set()
    assert "its lease is not held here" in caplog.text
