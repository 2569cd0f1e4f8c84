"""AgentRuntime: many processes, one shared HookManager, webhook routing and clashes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from _process_support import eventually
from tether import (
    AgentRuntime,
    ProcessConfig,
    ProcessExistsError,
    ProcessState,
    TriggerEvent,
    WebhookClashError,
)
from tether.hooks import HookContext, HookEvent, HookManager

SCRIPTED = {"model": "scripted", "instructions": "You triage support tickets."}


def webhook(path: str, port: int = 9782, **extra: object) -> dict[str, object]:
    return {"type": "webhook", "webhook_path": path, "webhook_port": port, **extra}


async def test_a_process_added_while_the_runtime_runs_starts_at_once() -> None:
    async with AgentRuntime() as runtime:
        process = await runtime.add_process("late", SCRIPTED)
        assert process.state == ProcessState.RUNNING
    assert process.state == ProcessState.STOPPED


async def test_a_process_added_before_start_waits_for_start_all() -> None:
    runtime = AgentRuntime()
    process = await runtime.add_process("early", ProcessConfig(model="scripted"))
    assert process.state == ProcessState.CREATED
    await runtime.start_all()
    assert process.state == ProcessState.RUNNING
    await runtime.stop_all()
    assert process.state == ProcessState.STOPPED
    assert runtime.running is False


async def test_one_shared_manager_fires_for_every_process() -> None:
    shared = HookManager()
    seen: list[tuple[str, str]] = []

    @shared.on(HookEvent.SESSION_START)
    async def started(ctx: HookContext) -> None:
        seen.append((ctx.event.value, ctx.process_id))

    async with AgentRuntime(hooks=shared) as runtime:
        await runtime.add_process("a", SCRIPTED)
        await runtime.add_process("b", SCRIPTED)
    assert seen == [("session_start", "a"), ("session_start", "b")]


async def test_processes_are_kept_by_name_in_the_order_they_were_added() -> None:
    runtime = AgentRuntime()
    for name in ("c", "a", "b"):
        await runtime.add_process(name, SCRIPTED)
    assert [p.name for p in runtime] == ["c", "a", "b"]
    assert len(runtime) == 3
    assert "a" in runtime
    assert "z" not in runtime
    assert runtime.get("a") is runtime.processes["a"]
    assert runtime.get("z") is None
    await runtime.stop_all()


async def test_a_duplicate_name_is_refused() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("triage", SCRIPTED)
    with pytest.raises(ProcessExistsError, match="a process named 'triage' already exists"):
        await runtime.add_process("triage", SCRIPTED)
    await runtime.stop_all()


async def test_a_name_with_path_characters_is_refused() -> None:
    with pytest.raises(ValueError, match="is not allowed"):
        await AgentRuntime().add_process("../etc", SCRIPTED)


async def test_removing_a_process_stops_it_and_fires_session_end() -> None:
    shared = HookManager()
    ended: list[str] = []

    @shared.on(HookEvent.SESSION_END)
    async def end(ctx: HookContext) -> None:
        ended.append(ctx.process_id)

    async with AgentRuntime(hooks=shared) as runtime:
        process = await runtime.add_process("gone", SCRIPTED)
        assert await runtime.remove_process("gone") is True
        assert await runtime.remove_process("gone") is False
        assert "gone" not in runtime
    assert process.state == ProcessState.STOPPED
    assert ended == ["gone"]


async def test_listeners_hear_of_added_and_removed_processes() -> None:
    runtime = AgentRuntime()
    changes: list[tuple[str, str]] = []
    runtime.on_change(lambda change, process: changes.append((change, process.name)))

    async def failing(change: str, process: object) -> None:
        raise RuntimeError("a broken listener must not break add_process")

    runtime.on_change(failing)
    await runtime.add_process("a", SCRIPTED)
    await runtime.remove_process("a")
    assert changes == [("added", "a"), ("removed", "a")]


async def test_an_injected_event_runs_and_health_counts_states() -> None:
    async with AgentRuntime() as runtime:
        process = await runtime.add_process("triage", SCRIPTED)
        await runtime.add_process("idle", SCRIPTED)
        await runtime.get("idle").stop()  # type: ignore[union-attr]
        await process.inject(TriggerEvent("manual", "manual", {"ticket": "Login is down"}))
        await eventually(lambda: process.status()["invocation_count"] == 1)
        health = runtime.health()
    assert health["running"] is True
    assert health["processes"] == 2
    assert health["states"] == {"running": 1, "stopped": 1}
    assert health["dead_letters"] == 0
    assert health["uptime_s"] is not None


async def test_publish_reaches_event_triggers_of_that_type_only() -> None:
    config = {
        **SCRIPTED,
        "triggers": [{"type": "event", "id": "on-deploy", "event_type": "deploy"}],
    }
    async with AgentRuntime() as runtime:
        listener = await runtime.add_process("listener", config)
        await runtime.add_process("other", SCRIPTED)
        assert await runtime.publish("release") == []
        [event_id] = await runtime.publish("deploy", {"version": "1.2"})
        await eventually(lambda: listener.status()["invocation_count"] == 1)
    assert event_id in listener.transcripts


async def test_webhooks_on_one_port_share_it_by_path() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a")]})
    await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/b")]})
    routes = runtime.webhook_routes()
    assert list(routes) == [("127.0.0.1", 9782)]
    assert {path: r.process.name for path, r in routes[("127.0.0.1", 9782)].items()} == {
        "/a": "a",
        "/b": "b",
    }


async def test_a_webhook_path_clash_between_processes_is_refused() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/tickets", id="in")]})
    with pytest.raises(
        WebhookClashError, match=r"path /tickets on port 9782 is already served by a/in"
    ):
        await runtime.add_process("b", {**SCRIPTED, "triggers": [webhook("/tickets")]})
    assert "b" not in runtime


async def test_one_webhook_port_cannot_listen_on_two_hosts() -> None:
    runtime = AgentRuntime()
    await runtime.add_process("a", {**SCRIPTED, "triggers": [webhook("/a")]})
    with pytest.raises(WebhookClashError, match=r"port 9782 already listens on 127.0.0.1"):
        await runtime.add_process(
            "b", {**SCRIPTED, "triggers": [webhook("/b", webhook_host="0.0.0.0")]}
        )


async def test_add_manifest_loads_and_adds_the_process(tmp_path: Path) -> None:
    path = tmp_path / "triage.agent"
    path.write_text(textwrap.dedent("name: triage\nmodel: scripted\ninstructions: Hi.\n"))
    runtime = AgentRuntime()
    process = await runtime.add_manifest(path)
    assert process.name == "triage"
    assert process.config.instructions == "Hi."
    assert runtime.get("triage") is process
