"""One control plane: the control API of any host lists every process of the cluster with its
host, and injects, stops, starts, switches hooks and reads hook-run history for a process
wherever it runs (through Redis). Two hosts here are two runtimes with their own API over
real HTTP and their own ClusterNode, on one real Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _cli_support import cli_in_thread
from _process_support import eventually
from tether import AgentRuntime, HookConfig, OrchestrationAPI, ProcessConfig
from tether.cluster import ClusterNode, cluster_config, rendezvous
from tether.models import OpenAIModel
from tether.testing import FakeLLM

pytestmark = pytest.mark.slow

TTL = 2.0


class Host:
    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[str] = []
        self.runtime = AgentRuntime()
        self.node: ClusterNode | None = None
        self.api: OrchestrationAPI | None = None
        self.http: httpx.AsyncClient | None = None

    async def start(self, redis_url: str, redis_prefix: str, llm: FakeLLM) -> Host:
        async def audit(ctx: Any) -> None:
            self.seen.append(ctx.data["event_id"])

        model = OpenAIModel("fake", base_url=llm.base_url, api_key="k")
        hooks = [HookConfig(event="task_created", callback=audit, tag="audit")]
        config = cluster_config(ProcessConfig(model=model, hooks=hooks), TTL)
        await self.runtime.add_process("alpha", config)
        self.api = OrchestrationAPI(self.runtime, port=0, webhooks=False)
        self.node = ClusterNode(
            self.runtime, redis_url, host=self.name, prefix=redis_prefix, lease_ttl=TTL
        )
        self.node.local_app = self.api.app
        await self.node.start()
        await self.api.start()
        self.http = httpx.AsyncClient(base_url=f"{self.api.url}/api/v1", timeout=30)
        return self

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.aclose()
        if self.api is not None:
            await self.api.stop()
        if self.node is not None:
            await self.node.stop()
        await self.runtime.stop_all()


def clients(hosts: tuple[Host, Host]) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
    """The API clients of the owner host and of the other host."""
    owner, other = hosts
    assert owner.http is not None
    assert other.http is not None
    return owner.http, other.http


async def published(host: Host, *, timeout: float) -> None:
    """Wait until ``host`` lists "alpha" running: the holder takes the lease first and
    publishes the process's status next, and in between every host lists it "starting"."""
    assert host.node is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while [p["state"] for p in await host.node.processes()] != ["running"]:
        if loop.time() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for alpha's status")
        await asyncio.sleep(0.01)


@pytest.fixture
async def hosts(
    redis_url: str, redis_prefix: str, llm: FakeLLM
) -> AsyncIterator[tuple[Host, Host]]:
    """(the host running "alpha", the other one), both started."""
    first, second = Host("east"), Host("west")
    try:
        await first.start(redis_url, redis_prefix, llm)
        await second.start(redis_url, redis_prefix, llm)
        owner = first if rendezvous("alpha", ["east", "west"]) == "east" else second
        other = second if owner is first else first
        assert owner.node is not None
        await eventually(lambda: "alpha" in owner.node.held, timeout=15, what="the placement")
        await published(other, timeout=15)
        yield owner, other
    finally:
        await second.stop()
        await first.stop()


async def test_every_host_lists_every_process_with_the_host_it_runs_on(
    hosts: tuple[Host, Host],
) -> None:
    owner, other = hosts
    _, at_other = clients(hosts)
    listed = (await at_other.get("/processes")).json()
    assert listed["host"] == other.name
    assert [(p["name"], p["host"], p["state"]) for p in listed["processes"]] == [
        ("alpha", owner.name, "running")
    ]


async def test_tether_ps_on_any_host_shows_the_host_of_each_process(
    hosts: tuple[Host, Host], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, other = hosts
    assert other.api is not None
    done = await cli_in_thread(capsys, monkeypatch)("ps", "--url", other.api.url)
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()[:2]
    assert header.split()[:3] == ["NAME", "HOST", "STATE"]
    assert row.split()[:3] == ["alpha", owner.name, "running"]


async def test_an_event_injected_on_another_host_runs_where_the_process_runs(
    hosts: tuple[Host, Host], llm: FakeLLM
) -> None:
    owner, other = hosts
    _, at_other = clients(hosts)
    assert owner.node is not None
    answer = await at_other.post("/processes/alpha/inject", json={"payload": {"n": 7}})
    assert answer.status_code == 202
    event_id = answer.json()["event_id"]
    assert other.seen == [event_id]  # task_created ran on the host that took the request
    await eventually(lambda: any("n: 7" in p for p in llm.prompts), what="the run")
    owner_process = owner.runtime.get("alpha")
    assert owner_process is not None
    await eventually(lambda: owner_process.invocation_count == 1, what="the run on the owner")


async def test_a_hook_disabled_through_another_host_is_disabled_where_the_process_runs(
    hosts: tuple[Host, Host],
) -> None:
    owner, other = hosts
    at_owner, at_other = clients(hosts)
    answer = await at_other.post("/processes/alpha/hooks/audit/disable")
    assert answer.status_code == 200, answer.text
    assert answer.json()["enabled"] is False
    await at_owner.post("/processes/alpha/inject", json={"payload": {"n": 1}})
    assert owner.seen == []  # the owner's hook is off
    assert other.seen == []


async def test_a_hook_enabled_again_through_another_host_runs_where_the_process_runs(
    hosts: tuple[Host, Host],
) -> None:
    owner, other = hosts
    at_owner, at_other = clients(hosts)
    off = await at_other.post("/processes/alpha/hooks/audit/disable")
    assert off.json()["enabled"] is False
    on = await at_other.post("/processes/alpha/hooks/audit/enable")
    assert on.status_code == 200, on.text
    assert on.json()["enabled"] is True
    answer = await at_other.post("/processes/alpha/inject", json={"payload": {"n": 2}})
    event_id = answer.json()["event_id"]
    # task_created runs on the host the inject reached; the owner's copy of the hook is on
    # again too (its catalog says so), which an inject there shows.
    assert other.seen == [event_id]
    there = await at_owner.post("/processes/alpha/inject", json={"payload": {"n": 3}})
    assert owner.seen == [there.json()["event_id"]]


async def test_hook_runs_are_read_from_redis_on_any_host(hosts: tuple[Host, Host]) -> None:
    owner, _ = hosts
    at_owner, at_other = clients(hosts)
    assert owner.node is not None
    await at_owner.post("/processes/alpha/inject", json={"payload": {"n": 1}})
    runs: list[dict[str, Any]] = []

    async def read() -> bool:
        nonlocal runs
        runs = (await at_other.get("/processes/alpha/hooks/runs?event=task_created")).json()["runs"]
        return bool(runs)

    for _ in range(100):
        if await read():
            break
        await owner.node.flush_history("alpha")
    assert runs
    assert runs[-1]["event"] == "task_created"
    assert runs[-1]["process"] == "alpha"
    since = runs[-1]["recorded_at"]
    later = await at_other.get("/processes/alpha/hooks/runs", params={"since": since})
    assert runs[-1] in later.json()["runs"]
    future = await at_other.get(
        "/processes/alpha/hooks/runs", params={"since": "2999-01-01T00:00:00"}
    )
    assert future.json()["runs"] == []
    bad = await at_other.get("/processes/alpha/hooks/runs", params={"since": "soon"})
    assert bad.status_code == 422
    assert "since" in bad.json()["error"]["message"]


async def test_a_process_stopped_through_another_host_stays_stopped_until_started(
    hosts: tuple[Host, Host], llm: FakeLLM
) -> None:
    owner, other = hosts
    _, at_other = clients(hosts)
    assert owner.node is not None
    assert other.node is not None
    answer = await at_other.post("/processes/alpha/stop")
    assert answer.status_code == 200, answer.text
    await eventually(
        lambda: not {"alpha"} & {*owner.node.held, *owner.node.leases.leaving},  # type: ignore[union-attr]
        timeout=10,
        what="the stop (its lease given back)",
    )

    async def listed() -> list[tuple[str, Any, str]]:
        body = (await at_other.get("/processes")).json()
        return [(p["name"], p["host"], p["state"]) for p in body["processes"]]

    assert await listed() == [("alpha", None, "stopped")]
    refused = await at_other.post("/processes/alpha/restart")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "PROCESS_NOT_PLACED"
    answer = await at_other.post("/processes/alpha/start")
    assert answer.status_code == 202
    await eventually(
        lambda: "alpha" in owner.node.held or "alpha" in other.node.held,  # type: ignore[union-attr]
        timeout=15,
        what="the process running again",
    )


async def test_the_approvals_of_a_process_no_host_runs_are_listed_from_redis(
    hosts: tuple[Host, Host], redis: Any, redis_prefix: str
) -> None:
    """Between a holder's loss and the takeover (or while stopped cluster-wide) the pending
    approvals are what Redis journaled, not this host's idle copy."""
    owner, _ = hosts
    _, at_other = clients(hosts)
    assert owner.node is not None
    await at_other.post("/processes/alpha/stop")
    await eventually(
        lambda: not {"alpha"} & {*owner.node.held, *owner.node.leases.leaving},  # type: ignore[union-attr]
        timeout=10,
        what="the stop",
    )
    asked = {"request_id": "r-1", "tool_name": "refund", "arguments": {"n": 1}, "asked_at": 1.0}
    answered = {**asked, "request_id": "r-2", "asked_at": 2.0}
    await redis.hset(
        f"{redis_prefix}:approvals:alpha",
        mapping={
            "k1": json.dumps({"request": asked, "decision": None}),
            "k2": json.dumps({"request": answered, "decision": {"approved": True}}),
        },
    )
    listed = (await at_other.get("/processes/alpha/approvals")).json()
    assert listed == {"name": "alpha", "approvals": [asked]}
