"""A declared secret never reaches the log lines tether writes about what a hook raised past
the engine (an exception that is no ``Exception``, which the engine does not isolate), about
async command hooks, or the text of an error that ends up in a traceback."""

from __future__ import annotations

import contextlib
import logging
import sys

import pytest

from _process_support import Escapes, FailingModel, GatedModel, escaping, eventually, ticket
from tether import AgentProcess, HookConfig, HookEvent, ProcessConfig, TriggerEvent
from tether.process import InvalidEventError

CANARY = "log-canary-90c2e4"


escapes = escaping(f"token {CANARY} refused")


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


async def test_a_secret_a_task_completed_hook_raises_at_a_stop_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the error of a ``task_completed`` ("dead_lettered") hook at a stop was
    logged as raised, declared secrets and all."""
    model = GatedModel()
    config = ProcessConfig(model=model, secrets={"VAULT": CANARY}, stop_timeout=0.05)
    process = AgentProcess("vault", config)
    process.hooks.register(HookEvent.TASK_COMPLETED, escapes)
    await process.start()
    for n in range(3):
        await process.inject(ticket(f"ticket {n}"))
    await eventually(lambda: model.active == 1, what="the first run")
    with contextlib.suppress(Escapes):
        await process.stop()

    assert "task_completed of" in caplog.text
    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_a_session_end_hook_raises_after_a_crash_stays_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the error of a ``session_end`` hook fired by a crash was logged as its
    repr, declared secrets and all."""
    config = ProcessConfig(
        model=FailingModel(),
        secrets={"VAULT": CANARY},
        max_retries=0,
        restart={"policy": "never", "max_consecutive_failures": 1},
    )
    process = AgentProcess("vault", config)
    process.hooks.register(HookEvent.SESSION_END, escapes)
    await process.start()
    await process.inject(ticket())
    await eventually(lambda: "session_end of" in caplog.text, what="the crash's session_end")
    with contextlib.suppress(Escapes):
        await process.stop()

    assert "token [REDACTED:VAULT] refused" in caplog.text
    assert CANARY not in caplog.text


async def test_a_secret_in_an_async_command_hooks_command_line_stays_out_of_its_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the warnings about async hooks (one that tried to block, dropped, cancelled
    at a drain) named a command hook by its command line as declared, secrets and all."""
    program = "import sys; sys.stdin.read(); print('{\"block\": true}')"
    command = [sys.executable, "-c", program, f"--key={CANARY}"]
    hook = HookConfig(event="task_created", command=command, mode="async")
    process = AgentProcess(
        "vault", ProcessConfig(model="scripted", hooks=[hook], secrets={"VAULT": CANARY})
    )
    async with process:
        await process.inject(ticket())
        await eventually(lambda: "cannot block" in caplog.text, what="the async hook's warning")

    assert "--key=[REDACTED:VAULT]" in caplog.text
    assert CANARY not in caplog.text


def test_an_event_refused_for_a_value_that_is_not_json_never_quotes_its_payload() -> None:
    """Regression: the error of a payload that is not JSON quoted the payload (its first 200
    characters), so a credential beside the bad value reached tracebacks and logs."""
    with pytest.raises(InvalidEventError) as refused:
        TriggerEvent("crm", "manual", {"token": CANARY, CANARY: "key", "when": object()})

    assert "payload must be JSON-serialisable" in str(refused.value)
    assert "Object of type object is not JSON serializable" in str(refused.value)
    assert CANARY not in str(refused.value)
