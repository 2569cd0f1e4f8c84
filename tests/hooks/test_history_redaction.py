"""A secret canary never reaches hook-run records, the SQLite file or the log.

The canary is a configured secret (``ProcessConfig(secrets=...)``). Hooks learn it the way real
ones do: from their own code or environment, never from the (already redacted) event data.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from _process_support import Recorder, eventually, ticket
from conftest import ScriptFactory
from tether import AgentProcess, ProcessConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent
from tether.models import ScriptedModel

CANARY = "canary-123"
UPS = HookEvent.USER_PROMPT_SUBMIT


#: Command hooks that each leak the canary one way.
WRITES_IT_TO_STDERR = f"""
import sys
sys.stdin.read()
sys.stderr.write("token {CANARY} was rejected")
sys.exit(2)
"""

RETURNS_IT_AS_DATA = f"""
import json, sys
event = json.load(sys.stdin)
data = dict(event["data"], prompt=event["data"]["prompt"] + " (key {CANARY})")
print(json.dumps({{"data": data}}))
"""

WRITES_IT_TO_ITS_LOG_FIELD = f"""
import json, sys
sys.stdin.read()
print(json.dumps({{"log": "used {CANARY}"}}))
"""


def secret_process(tmp_path: Path, **config: Any) -> AgentProcess:
    return AgentProcess(
        "vault",
        ProcessConfig(
            model=ScriptedModel(),
            secrets={"K": CANARY},
            journal_path=str(tmp_path / "tether.db"),
            **config,
        ),
    )


def file_bytes(tmp_path: Path) -> bytes:
    """Every byte SQLite wrote: the database, its WAL and shared-memory files."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tether.db*")))


def assert_no_canary(
    process: AgentProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for run in process.hook_runs():
        assert CANARY not in repr(run), run
    for run in process.history.runs():
        assert CANARY not in repr(run), run
    assert CANARY.encode() not in file_bytes(tmp_path)
    assert CANARY not in caplog.text


async def run_one(process: AgentProcess, *, event: str = "ticket") -> None:
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    async with process:
        await process.inject(ticket(event))
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what="the run")


async def run_with_hook(
    tmp_path: Path,
    event: HookEvent,
    callback: Callable[[HookContext], Awaitable[None]],
    **options: Any,
) -> AgentProcess:
    """Run one ticket through a secret-holding process with ``callback`` hooked to ``event``."""
    process = secret_process(tmp_path)
    process.hooks.register(event, callback, **options)
    await run_one(process)
    return process


async def run_config_hook(tmp_path: Path, script: str) -> AgentProcess:
    """Run one ticket through a secret-holding process with ``script`` as a prompt hook."""
    process = secret_process(
        tmp_path, hooks=[HookConfig(event="user_prompt_submit", command=script)]
    )
    await run_one(process)
    return process


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


async def test_a_secret_in_a_callbacks_error_message_is_redacted_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def leaks(ctx: HookContext) -> None:
        raise RuntimeError(f"login with {CANARY} refused")

    process = await run_with_hook(tmp_path, UPS, leaks)
    [run] = process.hook_runs(outcome="failed")
    assert run.error == "login with [REDACTED:K] refused"
    assert "[REDACTED:K]" in caplog.text
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_in_a_command_hooks_stderr_is_redacted_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make_script: ScriptFactory
) -> None:
    script = make_script(WRITES_IT_TO_STDERR)
    process = await run_config_hook(tmp_path, script)
    [run] = process.hook_runs(outcome="failed")
    assert run.error is not None
    assert "token [REDACTED:K] was rejected" in run.error
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_in_a_block_reason_is_redacted_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked(f"{CANARY} may not be used here")

    process = await run_with_hook(tmp_path, UPS, refuses)
    [run] = process.hook_runs(outcome="blocked")
    assert run.error == "[REDACTED:K] may not be used here"
    assert process.dead_letters[0]["error"] == "[REDACTED:K] may not be used here"
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_in_a_refused_agent_changes_block_reason_stays_out_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked(f"changes need {CANARY}")

    process = secret_process(tmp_path)
    process.hooks.register(HookEvent.CONFIG_CHANGE, refuses)
    async with process:
        assert await process.update_instructions("Be terse.", source="agent") is False
    assert process.hook_runs(outcome="blocked")[0].error == "changes need [REDACTED:K]"
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_in_an_async_hooks_error_is_redacted_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def leaks_later(ctx: HookContext) -> None:
        raise RuntimeError(f"webhook said {CANARY}")

    process = await run_with_hook(tmp_path, HookEvent.TASK_COMPLETED, leaks_later, mode="async")
    [run] = process.hook_runs(outcome="failed")
    assert (run.mode, run.error) == ("async", "webhook said [REDACTED:K]")
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_a_command_hook_returns_as_data_is_redacted_everywhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make_script: ScriptFactory
) -> None:
    script = make_script(RETURNS_IT_AS_DATA)
    process = await run_config_hook(tmp_path, script)
    [run] = process.hook_runs(event="user_prompt_submit")
    assert (run.outcome, run.patch_applied) == ("applied", True)
    assert_no_canary(process, tmp_path, caplog)


async def test_a_secret_a_command_hook_writes_to_its_log_field_stays_out_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make_script: ScriptFactory
) -> None:
    script = make_script(WRITES_IT_TO_ITS_LOG_FIELD)
    await run_config_hook(tmp_path, script)
    assert CANARY not in caplog.text


async def test_a_secret_in_the_event_data_is_redacted_before_a_hook_sees_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    async def echoes(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])
        raise RuntimeError(f"cannot handle {ctx.data['prompt']!r}")

    process = AgentProcess(
        "vault", ProcessConfig(model=ScriptedModel(), secrets={"K": CANARY})
    )  # no journal: the event payload itself is not a hook record
    process.hooks.register(UPS, echoes)
    await run_one(process, event=f"my key is {CANARY}")
    assert CANARY not in seen[0]
    [run] = process.hook_runs(outcome="failed")
    assert run.error is not None
    assert "[REDACTED:K]" in run.error
    assert CANARY not in caplog.text
