"""A secret canary a command hook gets in its ``env`` never reaches hook-run records, the SQLite
file, the API's answers or the log, though the process declares no secret.

The hook programs are real subprocesses that print the canary and fail; the API is served on
127.0.0.1 and asked over real HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from _process_support import eventually, ticket
from conftest import ScriptFactory
from tether import AgentProcess, AgentRuntime, ProcessConfig
from tether._redact import MIN_LEARNED_LENGTH, Redactor
from tether.hooks import HookConfig, HookContext, HookEvent, HookManager, ShellHook
from tether.models import ScriptedModel

CANARY = "env-canary-7f3a9c"
UPS = HookEvent.USER_PROMPT_SUBMIT

#: Prints the TOKEN it was given to stderr and fails.
PRINTS_TOKEN = """
import os, sys
sys.stdin.read()
sys.stderr.write("token " + os.environ["TOKEN"] + " was rejected")
sys.exit(3)
"""


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


def config(tmp_path: Path, **fields: Any) -> ProcessConfig:
    return ProcessConfig(model=ScriptedModel(), journal_path=str(tmp_path / "tether.db"), **fields)


def file_bytes(tmp_path: Path) -> bytes:
    """Every byte SQLite wrote: the database, its WAL and shared-memory files."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tether.db*")))


async def runs_over_http(client: httpx.AsyncClient, name: str, count: int) -> httpx.Response:
    """GET the process's runs until ``count`` are recorded (at most 10 s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        r = await client.get(f"/processes/{name}/hooks/runs")
        assert r.status_code == 200, r.text
        if len(r.json()["runs"]) >= count:
            return r
        assert loop.time() < deadline, f"gave up waiting for {count} runs: {r.text}"
        await asyncio.sleep(0.01)


async def inject(client: httpx.AsyncClient, name: str) -> None:
    r = await client.post(f"/processes/{name}/inject", json={"payload": {"ticket": "hello"}})
    assert r.status_code == 202, r.text


def assert_no_canary(
    process: AgentProcess, tmp_path: Path, answer: httpx.Response, caplog: pytest.LogCaptureFixture
) -> None:
    for run in process.history.runs():  # the in-memory ring
        assert CANARY not in repr(run), run
    for run in process.hook_runs():  # the SQLite history (flushed first)
        assert CANARY not in repr(run), run
    assert CANARY.encode() not in file_bytes(tmp_path)
    assert CANARY not in answer.text
    assert CANARY not in caplog.text


async def test_a_host_variable_a_failing_command_hook_prints_is_redacted_everywhere(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    make_script: ScriptFactory,
) -> None:
    """Regression: a ``${VAR}`` env value of a HookConfig reached the run's error text."""
    monkeypatch.setenv("SOME_VAR", CANARY)
    hook = HookConfig(
        event="user_prompt_submit", command=make_script(PRINTS_TOKEN), env={"TOKEN": "${SOME_VAR}"}
    )
    process = await runtime.add_process("vault", config(tmp_path, hooks=[hook]))
    await inject(client, "vault")
    answer = await runs_over_http(client, "vault", 1)

    [run] = answer.json()["runs"]
    assert run["outcome"] == "failed"
    assert "token [REDACTED:TOKEN] was rejected" in run["error"]
    assert "token [REDACTED:TOKEN] was rejected" in caplog.text  # the warning was logged
    assert_no_canary(process, tmp_path, answer, caplog)


async def test_a_secretstr_env_value_of_a_hook_registered_in_code_is_redacted_everywhere(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    make_script: ScriptFactory,
) -> None:
    """Regression: a ShellHook's SecretStr env value, registered on a running process in code,
    reached the history and the log."""
    process = await runtime.add_process("vault", config(tmp_path))
    shell = ShellHook(make_script(PRINTS_TOKEN), env={"TOKEN": SecretStr(CANARY)})
    process.hooks.register(UPS, shell.callback)
    await inject(client, "vault")
    answer = await runs_over_http(client, "vault", 1)

    [run] = answer.json()["runs"]
    assert "token [REDACTED:TOKEN] was rejected" in run["error"]
    assert_no_canary(process, tmp_path, answer, caplog)


async def test_an_env_value_of_a_hook_deployed_over_http_is_redacted_from_its_runs(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    make_script: ScriptFactory,
) -> None:
    """Regression: the env value of a command hook deployed with POST /processes leaked."""
    hook = {"event": "user_prompt_submit", "command": make_script(PRINTS_TOKEN)}
    hook["env"] = {"TOKEN": CANARY}
    body = {"model": "scripted", "journal_path": str(tmp_path / "tether.db"), "hooks": [hook]}
    r = await client.post("/processes", json={"name": "vault", "config": body})
    assert r.status_code == 201, r.text
    await inject(client, "vault")
    answer = await runs_over_http(client, "vault", 1)

    assert "[REDACTED:TOKEN]" in answer.json()["runs"][0]["error"]
    process = runtime.get("vault")
    assert process is not None
    assert_no_canary(process, tmp_path, answer, caplog)


async def test_a_secret_in_a_command_line_is_redacted_from_the_hook_name(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: a command hook is named after its command line, and the name was recorded
    as it was, a declared secret in it included."""
    command = [sys.executable, "-c", "import sys; sys.stdin.read()", f"--key={CANARY}"]
    hook = HookConfig(event="user_prompt_submit", command=command)
    declared = config(tmp_path, hooks=[hook], secrets={"K": CANARY})
    process = await runtime.add_process("vault", declared)
    await inject(client, "vault")
    answer = await runs_over_http(client, "vault", 1)

    [run] = process.history.runs()
    assert run.outcome == "passed"
    assert run.hook_name.endswith("--key=[REDACTED:K]")
    assert_no_canary(process, tmp_path, answer, caplog)


async def test_a_secret_in_a_failing_command_line_stays_out_of_the_failure_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    command = [sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(1)", CANARY]
    hook = HookConfig(event="user_prompt_submit", command=command)
    process = AgentProcess(
        "vault", ProcessConfig(model=ScriptedModel(), hooks=[hook], secrets={"K": CANARY})
    )
    async with process:
        await process.inject(ticket())
        await eventually(lambda: process.history.runs(outcome="failed"), what="the hook run")
    assert CANARY not in caplog.text


async def test_the_catalog_and_the_process_views_never_show_env_values(
    client: httpx.AsyncClient,
) -> None:
    hook = {"event": "task_created", "command": ["true"], "name": "notify"}
    hook["env"] = {"TOKEN": CANARY}
    body = {"model": "scripted", "hooks": [hook]}
    r = await client.post("/processes", json={"name": "vault", "config": body})
    assert r.status_code == 201, r.text
    assert CANARY not in r.text
    for path in ("/hooks/catalog", "/processes/vault/hooks", "/processes/vault"):
        answer = await client.get(path)
        assert answer.status_code == 200, path
        assert "notify" in answer.text  # the hook is listed
        assert CANARY not in answer.text, path


def test_describe_never_shows_a_command_hooks_env_values() -> None:
    manager = HookManager()
    manager.register_config(
        HookConfig(event="task_created", command=["true"], env={"TOKEN": CANARY})
    )
    manager.register(UPS, ShellHook(["true"], env={"TOKEN": CANARY}).callback)
    infos = manager.describe()
    assert len(infos) == 2
    assert CANARY not in repr(infos)


async def test_a_value_stays_redacted_after_its_hook_is_removed(
    tmp_path: Path, make_script: ScriptFactory
) -> None:
    """Runs are built from the ring when read, and written to SQLite in later batches: the
    value a removed hook was given must still be known then."""
    process = AgentProcess("vault", config(tmp_path))
    shell = ShellHook(make_script(PRINTS_TOKEN), env={"TOKEN": SecretStr(CANARY)})
    hook_id = process.hooks.register(UPS, shell.callback)
    async with process:
        await process.inject(ticket())
        await eventually(lambda: process.history.runs(outcome="failed"), what="the hook run")
        assert await process.hooks.remove(hook_id)
        [run] = process.history.runs(outcome="failed")
        assert run.error is not None
        assert "[REDACTED:TOKEN]" in run.error
        assert CANARY not in repr(process.hook_runs())
    assert CANARY.encode() not in file_bytes(tmp_path)


def test_short_learned_values_are_not_redacted_but_short_declared_ones_are() -> None:
    learned = (("DEBUG", "1"), ("MODE", "a" * (MIN_LEARNED_LENGTH - 1)), ("T", CANARY))
    redactor = Redactor([("K", "ab")], learned=lambda: learned)
    assert redactor.text(f"exit 1 aaa ab {CANARY}") == "exit 1 aaa [REDACTED:K] [REDACTED:T]"


async def test_a_hooks_env_value_never_rewrites_what_reaches_hooks_and_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: every env value a command hook was given was redacted from event data, so
    a prompt mentioning "json" reached the hooks and the model as "[REDACTED:FORMAT]"."""
    monkeypatch.setenv("SOME_VAR", "json")
    seen: list[str] = []

    async def rules(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])
        ctx.data["prompt"] += "\nAnswer in one sentence."

    model = ScriptedModel(reply="ok")
    hooks = [
        HookConfig(event="task_completed", command=["true"], env={"FORMAT": "${SOME_VAR}"}),
        HookConfig(event="task_completed", command=["true"], env={"STYLE": "plain-prose"}),
        HookConfig(event="user_prompt_submit", callback=rules),
    ]
    process = AgentProcess("fmt", ProcessConfig(model=model, hooks=hooks))
    async with process:
        for _ in range(2):  # the second run comes after the hooks were handed their values
            await process.inject(ticket("reply in json, as plain-prose"))
            await eventually(lambda: process.history.runs(event="task_completed"), what="a run")
        await eventually(lambda: len(seen) == 2, what="two prompts")
    assert all("reply in json, as plain-prose" in prompt for prompt in seen)
    sent = [str(r["messages"][-1]["content"]) for r in model.requests]
    assert len(sent) == 2
    for text in sent:
        assert "reply in json, as plain-prose" in text
        assert text.endswith("\nAnswer in one sentence.")
        assert "REDACTED" not in text


def test_only_secret_env_values_are_learned() -> None:
    """A literal env value is configuration in the open; a SecretStr, a ${VAR} reference and a
    passed-through variable may be credentials."""
    shell = ShellHook(
        ["true"],
        env={"FORMAT": "json-lines", "TOKEN": SecretStr(CANARY), "HOME_DIR": "${PATH}"},
    )
    assert {name for name, _ in shell.secrets()} == {"TOKEN", "HOME_DIR"}
