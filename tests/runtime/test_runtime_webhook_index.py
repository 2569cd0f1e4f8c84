"""The runtime's webhook index: kept right across adds, removes, replacements and trigger
changes, with the same clash errors, and a route table built per change, not per request."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from _net_support import free_port
from tether import AgentRuntime, HookContext, HookEvent, HookManager, WebhookClashError
from tether.api import WebhookServer
from tether.process import WebhookTrigger

SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


class Abort(BaseException):
    """Passes the engine's isolation of hook errors: the start raises it."""


def webhook(path: str, port: int, **extra: Any) -> dict[str, Any]:
    return {"type": "webhook", "webhook_path": path, "webhook_port": port, **extra}


def served(runtime: AgentRuntime) -> dict[str, str]:
    """``host:port/path`` -> ``process/trigger id`` of every route."""
    return {
        f"{host}:{port}{path}": f"{route.process.name}/{route.trigger_id}"
        for (host, port), routes in runtime.webhook_routes().items()
        for path, route in routes.items()
    }


async def test_the_route_table_is_built_once_per_change_and_not_per_request() -> None:
    port = free_port()
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a", port)]})
    server = WebhookServer(runtime)
    async with runtime:
        await server.start()
        try:
            table = runtime.webhook_routes()
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                for _ in range(3):
                    assert (await client.post("/a", json={})).status_code == 202
                assert runtime.webhook_routes() is table
                await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/b", port)]})
                grown = runtime.webhook_routes()
                assert grown is not table
                assert (await client.post("/b", json={})).json()["process"] == "b"
                assert runtime.webhook_routes() is grown
                await runtime.remove_process("b")
                assert (await client.post("/b", json={})).status_code == 404
        finally:
            await server.stop()
    assert served(runtime) == {f"127.0.0.1:{port}/a": "a/webhook-0"}


async def test_the_route_table_cannot_be_changed_by_its_reader() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a", 9782)]})
    table = runtime.webhook_routes()
    with pytest.raises(TypeError):
        table[("127.0.0.1", 9782)]["/b"] = table[("127.0.0.1", 9782)]["/a"]  # type: ignore[index]


async def test_a_removed_process_frees_its_path_and_its_host_for_others() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
    await runtime.remove_process("a")
    await runtime.add_process(
        "b", {**SCRIPTED, "triggers": [webhook("/t", 9782, webhook_host="0.0.0.0")]}
    )
    assert served(runtime) == {"0.0.0.0:9782/t": "b/webhook-0"}


async def test_a_replaced_process_is_routed_to_the_new_one() -> None:
    runtime = AgentRuntime()
    old = await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
    await runtime.remove_process("a")
    new = await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
    route = runtime.webhook_route("127.0.0.1", 9782, "/t")
    assert route is not None
    assert route.process is new
    assert route.process is not old
    with pytest.raises(WebhookClashError, match=r"already served by a/webhook-0"):
        await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})


async def test_a_process_that_fails_to_start_leaves_no_route_behind() -> None:
    shared = HookManager()

    @shared.on(HookEvent.SESSION_START)
    async def refuse_a(ctx: HookContext) -> None:
        if ctx.process_id == "a":
            raise Abort("a may not start")

    runtime = AgentRuntime(hooks=shared)
    async with runtime:
        with pytest.raises(Abort, match="a may not start"):
            await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
        assert "a" not in runtime
        assert served(runtime) == {}
        await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
    assert served(runtime) == {"127.0.0.1:9782/t": "b/webhook-0"}


async def test_triggers_a_process_gains_and_loses_are_routed_and_checked() -> None:
    runtime = AgentRuntime()
    a = await runtime.add_process("a", SCRIPTED)
    await a.add_trigger(WebhookTrigger(id="in", webhook_path="/in", webhook_port=9782))
    assert served(runtime) == {"127.0.0.1:9782/in": "a/in"}
    with pytest.raises(WebhookClashError, match=r"path /in on port 9782 is already served by a/in"):
        await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/in", 9782)]})
    await a.remove_trigger("in")
    assert served(runtime) == {}
    await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/in", 9782)]})
    assert served(runtime) == {"127.0.0.1:9782/in": "b/webhook-0"}


async def test_a_rolled_back_trigger_change_is_routed_as_before() -> None:
    runtime = AgentRuntime()
    a = await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a", 9782, id="one")]})
    await a.remove_trigger("one")
    assert served(runtime) == {}
    await a.rollback()
    assert served(runtime) == {"127.0.0.1:9782/a": "a/one"}


async def test_a_removed_process_hears_no_more_of_its_trigger_changes() -> None:
    runtime = AgentRuntime()
    a = await runtime.add_process("a", SCRIPTED)
    await runtime.remove_process("a")
    await a.add_trigger(WebhookTrigger(id="in", webhook_path="/in", webhook_port=9782))
    assert served(runtime) == {}


async def test_a_port_names_the_first_trigger_on_it_when_another_host_asks() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a", 9782, id="x")]})
    await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/b", 9782, id="y")]})
    with pytest.raises(WebhookClashError) as raised:
        await runtime.add_process(
            "c", {**SCRIPTED, "triggers": [webhook("/c", 9782, webhook_host="0.0.0.0", id="z")]}
        )
    assert str(raised.value) == (
        "webhook trigger c/z: port 9782 already listens on 127.0.0.1 (for a/x), not on 0.0.0.0"
    )


async def test_a_process_whose_own_triggers_clash_is_refused() -> None:
    runtime = AgentRuntime()
    with pytest.raises(WebhookClashError) as raised:
        await runtime.add_process(
            "a", {**SCRIPTED, "triggers": [webhook("/t", 9782, id="p"), webhook("/t", 9782)]}
        )
    assert str(raised.value) == (
        "webhook trigger a/webhook-1: path /t on port 9782 is already served by a/p"
    )
    assert served(runtime) == {}


async def test_a_check_of_a_process_s_new_triggers_ignores_those_it_replaces() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/t", 9782)]})
    moved = WebhookTrigger(webhook_path="/t", webhook_port=9782, webhook_host="0.0.0.0")
    runtime.check_webhooks([("webhook-0", moved)], owner="a")  # its own: no clash
    other = moved.model_copy(update={"webhook_path": "/u"})
    with pytest.raises(WebhookClashError, match=r"already listens on 127.0.0.1 \(for a/"):
        runtime.check_webhooks([("w", other)], owner="b")
