"""Security review, by experiment: secret values that reach a process in unusual places.

Each test puts a canary secret where an attacker or a careless client could put it and then
looks for it in what a command hook really receives (a real subprocess writes its stdin to a
file), in the control API's answers over real HTTP, in the SQLite file's bytes and in the log.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from _net_support import free_port
from _process_support import eventually
from conftest import ScriptFactory
from tether import AgentRuntime, HookContext, HookEvent, TriggerEvent

SECRET = "declared-canary-9f8e41"
HMAC_KEY = "webhook-hmac-canary-aa11bb"
MCP_TOKEN = "mcp-header-canary-5566cc"

#: Appends the event it gets on stdin (one JSON line) to the file named by its first argument.
DUMPS_STDIN = """
import sys
event = sys.stdin.read()
with open(sys.argv[1], "a") as out:
    out.write(event.replace("\\n", " ") + "\\n")
"""


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


def db_bytes(tmp_path: Path) -> bytes:
    """Every byte SQLite wrote: the database, its WAL and shared-memory files."""
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("tether.db*")))


async def test_a_declared_secret_sent_as_a_payload_key_is_redacted_everywhere(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    make_script: ScriptFactory,
) -> None:
    """Regression: redaction walked the values of the event data but not its keys, so a
    payload ``{"<secret>": ...}`` reached command hooks and dry-run answers (the SQLite file:
    see the dead-letter test below and the journal test of the first enqueue)."""
    seen = tmp_path / "stdin.jsonl"
    hook = [make_script(DUMPS_STDIN), str(seen)]
    config = {
        "model": "scripted",
        "secrets": {"API_KEY": SECRET},
        "journal_path": str(tmp_path / "tether.db"),
        "hooks": [
            {"event": "task_created", "command": hook},
            {"event": "user_prompt_submit", "command": hook},
        ],
    }
    r = await client.post("/processes", json={"name": "triage", "config": config})
    assert r.status_code == 201, r.text
    r = await client.post("/processes/triage/inject", json={"payload": {SECRET: {SECRET: 1}}})
    assert r.status_code == 202, r.text
    process = runtime.get("triage")
    assert process is not None
    await eventually(lambda: process.status()["invocation_count"] >= 1, what="the run")
    dry = await client.post(
        "/processes/triage/hooks/dry-run",
        json={"event": "user_prompt_submit", "data": {"prompt": "hi", SECRET: [SECRET]}},
    )
    assert dry.status_code == 200, dry.text
    answers = [dry]
    for path in ("/processes", "/processes/triage", "/processes/triage/hooks/runs"):
        answers.append(await client.get(path))
    events = [json.loads(line) for line in seen.read_text().splitlines()]
    assert len(events) == 3  # task_created, user_prompt_submit, and the dry run
    assert all(SECRET not in json.dumps(event) for event in events), events
    assert "[REDACTED:API_KEY]" in json.dumps(events[0]["data"]) + json.dumps(events[2]["data"])
    for answer in answers:
        assert SECRET not in answer.text, answer.text
    assert SECRET not in caplog.text


async def test_a_declared_secret_as_a_dead_letters_payload_key_is_redacted_everywhere(
    runtime: AgentRuntime, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Regression: a dead letter's payload was shown and journaled with its keys as sent."""
    journal = str(tmp_path / "tether.db")
    config = {"model": "scripted", "secrets": {"API_KEY": SECRET}, "journal_path": journal}
    assert (
        await client.post("/processes", json={"name": "t", "config": config})
    ).status_code == 201
    await client.post("/processes/t/stop")
    r = await client.post("/processes/t/inject", json={"payload": {f"key {SECRET}": "x"}})
    assert r.json()["status"] == "dead_lettered", r.text
    letters = await client.get("/processes/t/dead-letters")
    assert SECRET not in letters.text
    assert letters.json()["dead_letters"][0]["payload"] == {"key [REDACTED:API_KEY]": "x"}
    await runtime.remove_process("t")
    assert SECRET.encode() not in db_bytes(tmp_path)


async def test_a_declared_secret_in_a_payload_never_reaches_the_journal_file(
    runtime: AgentRuntime, tmp_path: Path
) -> None:
    config = {
        "model": "scripted",
        "secrets": {"K": SECRET},
        "journal_path": str(tmp_path / "tether.db"),
    }
    process = await runtime.add_process("t", config)
    await process.inject(TriggerEvent("api", "manual", {"note": f"key {SECRET}"}))
    await eventually(lambda: process.status()["invocation_count"] >= 1, what="the run")
    await runtime.remove_process("t")
    assert SECRET.encode() not in db_bytes(tmp_path)


# -- SecretStr config values the redactor does not know (a fix in tether/process/) ----------


def _recorder(runtime: AgentRuntime, seen: list[str]) -> None:
    async def record(ctx: HookContext) -> None:
        seen.append(json.dumps(ctx.data, default=str))

    runtime.hooks.register(HookEvent.USER_PROMPT_SUBMIT, record)


async def test_a_webhook_triggers_hmac_key_in_a_payload_never_reaches_hooks(
    runtime: AgentRuntime,
) -> None:
    seen: list[str] = []
    _recorder(runtime, seen)
    trigger = {
        "type": "webhook",
        "webhook_path": "/t",
        "webhook_port": free_port(),
        "secret": HMAC_KEY,
    }
    process = await runtime.add_process("t", {"model": "scripted", "triggers": [trigger]})
    await process.inject(TriggerEvent("api", "manual", {"note": f"the key is {HMAC_KEY}"}))
    await eventually(lambda: seen, what="user_prompt_submit")
    assert HMAC_KEY not in seen[0]


async def test_an_mcp_servers_header_value_in_a_payload_never_reaches_hooks(
    runtime: AgentRuntime,
) -> None:
    seen: list[str] = []
    _recorder(runtime, seen)
    server: dict[str, Any] = {
        "name": "crm",
        "transport": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"Authorization": MCP_TOKEN},
    }
    process = await runtime.add_process("t", {"model": "scripted", "mcp_servers": [server]})
    await process.inject(TriggerEvent("api", "manual", {"note": f"the token is {MCP_TOKEN}"}))
    await eventually(lambda: seen, what="user_prompt_submit")
    assert MCP_TOKEN not in seen[0]


async def test_a_webhook_key_added_at_run_time_is_redacted_from_then_on(
    runtime: AgentRuntime,
) -> None:
    from tether.process._config import WebhookTrigger

    seen: list[str] = []
    _recorder(runtime, seen)
    process = await runtime.add_process("t", {"model": "scripted"})
    trigger = WebhookTrigger(webhook_path="/t", webhook_port=free_port(), secret=HMAC_KEY)
    assert await process.add_trigger(trigger)
    await process.inject(TriggerEvent("api", "manual", {"note": f"the key is {HMAC_KEY}"}))
    await eventually(lambda: seen, what="user_prompt_submit")
    assert HMAC_KEY not in seen[0]
    assert "[REDACTED:webhook_secret]" in seen[0]


def test_an_mcp_url_refused_never_echoes_its_password() -> None:
    from pydantic import ValidationError

    from tether.process._mcp import McpServerConfig

    with pytest.raises(ValidationError) as caught:
        McpServerConfig(name="crm", transport="http", url="ftp://bot:pw-canary-88@h/mcp")
    assert "pw-canary-88" not in str(caught.value)
    assert "ftp://bot:****@h/mcp" in str(caught.value)


async def test_an_mcp_urls_password_in_a_payload_never_reaches_hooks(
    runtime: AgentRuntime,
) -> None:
    seen: list[str] = []
    _recorder(runtime, seen)
    server = {"name": "crm", "transport": "http", "url": "http://bot:pw-canary-88@h/mcp"}
    process = await runtime.add_process("t", {"model": "scripted", "mcp_servers": [server]})
    await process.inject(TriggerEvent("api", "manual", {"note": "it is pw-canary-88"}))
    await eventually(lambda: seen, what="user_prompt_submit")
    assert "pw-canary-88" not in seen[0]
    assert "[REDACTED:mcp.crm.url_password]" in seen[0]


async def test_an_mcp_urls_password_added_at_run_time_never_reaches_config_change_hooks(
    runtime: AgentRuntime,
) -> None:
    """Regression: add_mcp_server declared the url's password only after the change applied,
    so the config_change hooks (and the change's recorded details) got it in clear."""
    seen: list[str] = []

    async def record(ctx: HookContext) -> None:
        seen.append(json.dumps(ctx.data))

    runtime.hooks.register(HookEvent.CONFIG_CHANGE, record)
    process = await runtime.add_process("t", {"model": "scripted"})
    server = {"name": "crm", "transport": "http", "url": "http://bot:pw-canary-88@h/mcp"}
    assert await process.add_mcp_server(server)
    [change] = seen
    assert "pw-canary-88" not in change
    assert "[REDACTED:mcp.crm.url_password]" in change
    assert "pw-canary-88" not in json.dumps(process.config_history, default=str)


def test_a_secret_declared_from_a_generator_is_redacted_from_event_data_too() -> None:
    """Regression: Redactor.declare read its iterable twice, so the ``declared`` redactor
    (event data, the journal) got nothing from a generator and left the secret in clear."""
    from tether._redact import Redactor

    redactor = Redactor([("A", "first-secret")], learned=lambda: ())
    redactor.declare(pair for pair in [("B", "second-secret")])
    assert redactor.text("second-secret") == "[REDACTED:B]"
    assert redactor.declared.value({"note": "second-secret"}) == {"note": "[REDACTED:B]"}


def test_a_secret_inside_a_secrets_name_leaves_its_markers_whole_when_redacted_again() -> None:
    """Regression: with TRIAGE_WEBHOOK_SECRET=secret (or s), each redaction of the same text (a
    record, then its log line, then the CLI's view) rewrote the markers themselves:
    ``[REDACTED:webhook_[REDACTED:webhook_secret]]``."""
    from tether._redact import Redactor

    redactor = Redactor([("webhook_secret", "secret")])
    once = redactor.text("the secret is set")
    assert once == "the [REDACTED:webhook_secret] is set"
    assert redactor.text(once) == once
    assert redactor.value({once: [once]}) == {once: [once]}
    short = Redactor([("webhook_secret", "s")])
    assert short.text(short.text("is")) == "i[REDACTED:webhook_secret]"


def test_text_that_only_looks_like_a_marker_keeps_no_secret() -> None:
    """Only the redactor's own markers are kept whole: a secret wrapped in a marker of a name
    it does not know is still redacted."""
    from tether._redact import Redactor

    redactor = Redactor([("api_key", "sk-canary-123")])
    assert redactor.text("[REDACTED:sk-canary-123] [REDACTED:api_key]") == (
        "[REDACTED:[REDACTED:api_key]] [REDACTED:api_key]"
    )
