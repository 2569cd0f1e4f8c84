"""A declared secret never reaches the log lines tether writes about an error it did not
expect: what a trigger's firing raised, a failing runtime listener, a request the control API
or a webhook could not answer."""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from _net_support import free_port
from _process_support import Escapes, escaping, eventually, ticket
from tether import (
    AgentProcess,
    AgentRuntime,
    CronTrigger,
    FileWatchTrigger,
    ProcessConfig,
    WebhookTrigger,
)
from tether.api import WebhookServer
from tether.hooks import HookBlocked, HookContext, HookEvent
from tether.process._triggers import CronRunner

CANARY = "error-canary-7d31f0"


escapes = escaping(f"token {CANARY} refused")


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


def clock_starting_at(start: datetime) -> Callable[[], datetime]:
    """A wall clock that reads ``start`` now and then advances in real time."""
    origin = time.monotonic()
    return lambda: start + timedelta(seconds=time.monotonic() - origin)


# -- triggers --------------------------------------------------------------------------------


async def test_a_secret_a_file_watch_firing_raises_stays_out_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a file watch whose firing raised logged the traceback as raised, declared
    secrets and all."""
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), debounce_ms=10)
    config = ProcessConfig(model="scripted", triggers=[trigger], secrets={"VAULT": CANARY})
    process = AgentProcess("vault", config)
    process.hooks.register(HookEvent.FILE_CHANGED, escapes)
    async with process:
        for n in range(100):
            if "could not fire" in caplog.text:
                break
            (tmp_path / f"ticket-{n}.txt").write_text("new\n")
            with contextlib.suppress(AssertionError):
                await eventually(lambda: "could not fire" in caplog.text, timeout=0.5)

    assert "file watch inbox could not fire" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_in_the_name_of_a_file_change_a_hook_filtered_stays_out_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: the line about a file change a ``file_changed`` hook filtered named the
    file's path as given, and a path is the event's data: it may hold a declared secret."""
    trigger = FileWatchTrigger(id="inbox", watch_path=str(tmp_path), debounce_ms=10)
    config = ProcessConfig(model="scripted", triggers=[trigger], secrets={"VAULT": CANARY})
    process = AgentProcess("vault", config)

    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("not this one")

    process.hooks.register(HookEvent.FILE_CHANGED, refuse)
    async with process:
        for n in range(100):
            if "filtered by hook" in caplog.text:
                break
            (tmp_path / f"export-{CANARY}-{n}.txt").write_text("new\n")
            with contextlib.suppress(AssertionError):
                await eventually(lambda: "filtered by hook" in caplog.text, timeout=0.5)

    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("tether"))
    assert "export-[REDACTED:VAULT]-" in ours
    assert "filtered by hook: not this one" in ours
    assert CANARY not in ours  # (watchfiles' own debug lines name the paths it saw)


async def test_a_secret_a_cron_firing_raises_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: a cron trigger whose firing raised logged the traceback as raised,
    declared secrets and all."""
    process = AgentProcess("vault", ProcessConfig(model="scripted", secrets={"VAULT": CANARY}))
    process.hooks.register(HookEvent.TASK_CREATED, escapes)
    runner = CronRunner(
        "nightly",
        CronTrigger(cron_expression="0 3 * * *"),
        clock=clock_starting_at(datetime(2030, 1, 1, 2, 59, 59, 990_000, tzinfo=UTC)),
        redact=process.redactor.text,
    )
    async with process:
        runner.start(process.inject_trigger)
        try:
            await eventually(lambda: "could not fire" in caplog.text, what="the cron firing")
        finally:
            await runner.stop()

    assert "cron trigger nightly could not fire" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_a_deferred_extension_call_raises_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: a deferred extension call (``call_later``) whose handler raised what the
    call does not isolate was left to asyncio, which logged the traceback as raised ("Task
    exception was never retrieved"), declared secrets and all."""
    process = AgentProcess("vault", ProcessConfig(model="scripted", secrets={"VAULT": CANARY}))

    async def classify(text: str) -> None:
        raise Escapes(f"token {CANARY} refused")

    process.hooks.register("ticket.classify", classify)
    async with process:
        process.hooks.call_later(0, "ticket.classify", text="Login is down")
        await eventually(lambda: "deferred call" in caplog.text, what="the deferred call")
    gc.collect()  # asyncio logs a task's unretrieved error when the task is collected

    assert "deferred call of ticket.classify failed" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_in_a_bad_answer_of_model_or_tools_for_run_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the warning about a ``model.for_run`` or ``tools.for_run`` answer that is
    no model (or tool) quoted the answer as given, declared secrets and all."""
    process = AgentProcess("vault", ProcessConfig(model="scripted", secrets={"VAULT": CANARY}))

    def model_for_run(**kwargs: object) -> object:
        return {"api_key": CANARY}

    def tools_for_run(**kwargs: object) -> object:
        return [f"lookup --token {CANARY}"]

    process.hooks.register("model.for_run", model_for_run)
    process.hooks.register("tools.for_run", tools_for_run)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: "which is not a tool" in caplog.text, what="the run")

    assert "model.for_run answered {'api_key': '[REDACTED:VAULT]'}" in caplog.text
    assert "tools.for_run answered 'lookup --token [REDACTED:VAULT]'" in caplog.text
    assert CANARY not in caplog.text


# -- the runtime -----------------------------------------------------------------------------


async def test_a_secret_a_runtime_listener_raises_stays_out_of_the_log(
    runtime: AgentRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a runtime listener that raised was logged with its traceback as raised,
    declared secrets and all (at a removal too, the process gone from the runtime by then)."""

    def listener(change: str, process: AgentProcess) -> None:
        raise RuntimeError(f"{change}: token {CANARY} refused")

    runtime.on_change(listener)
    await runtime.add_process("vault", ProcessConfig(model="scripted", secrets={"VAULT": CANARY}))
    assert await runtime.remove_process("vault")

    assert "added: token [REDACTED:VAULT] refused" in caplog.text
    assert "removed: token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_the_runtime_redacts_the_secrets_of_every_process_it_holds_or_held(
    runtime: AgentRuntime,
) -> None:
    """What the runtime logs for no one process (an API request's error) may carry the secret
    of any of them, one removed included."""
    await runtime.add_process("a", ProcessConfig(model="scripted", secrets={"A": "alpha-key-1"}))
    await runtime.add_process("b", ProcessConfig(model="scripted", secrets={"B": "beta-key-22"}))
    assert await runtime.remove_process("b")

    shown = runtime.redact("alpha-key-1 and beta-key-22")

    assert shown == "[REDACTED:A] and [REDACTED:B]"


# -- HTTP ------------------------------------------------------------------------------------


async def test_a_secret_in_the_traceback_of_an_api_500_stays_out_of_the_log(
    runtime: AgentRuntime, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a request the control API could not answer had its traceback logged as
    raised (by uvicorn, for a hook's own BaseException), declared secrets and all."""
    await runtime.add_process("vault", ProcessConfig(model="scripted", secrets={"VAULT": CANARY}))
    runtime.hooks.register(HookEvent.TASK_CREATED, escapes)

    r = await client.post("/processes/vault/inject", json={"payload": {}})

    assert r.status_code == 500
    assert r.json()["error"]["code"] == "INTERNAL_ERROR"
    assert "POST /api/v1/processes/vault/inject failed" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_in_the_traceback_of_a_webhook_500_stays_out_of_the_log(
    runtime: AgentRuntime, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a webhook request that could not be handled had its traceback logged as
    raised (by uvicorn, for a hook's own BaseException), declared secrets and all."""
    port = free_port()
    trigger = WebhookTrigger(webhook_path="/t", webhook_port=port)
    config = ProcessConfig(model="scripted", triggers=[trigger], secrets={"VAULT": CANARY})
    await runtime.add_process("vault", config)
    runtime.hooks.register(HookEvent.TASK_CREATED, escapes)
    server = WebhookServer(runtime)
    await server.start()
    try:
        async with httpx.AsyncClient() as client:
            r = await client.post(f"http://127.0.0.1:{port}/t", json={})
    finally:
        await server.stop()

    assert r.status_code == 500
    assert "webhook /t failed" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text
