"""Secret canaries planted where the earlier reviews did not look: the dry run's decision, the
repr of a configuration declaring MCP servers, and webhooks a browser page can reach.

Hook programs are real subprocesses; the API and the webhook listener are served on 127.0.0.1
and asked over real HTTP.
"""

from __future__ import annotations

import httpx
import pytest

from conftest import ScriptFactory
from tether import AgentRuntime, HookConfig, ProcessConfig

CANARY = "leak-canary-5e1d07"

#: Refuses every event, quoting the TOKEN it was given as its reason.
BLOCKS_WITH_TOKEN = """
import json, os, sys
sys.stdin.read()
print(json.dumps({"block": True, "reason": "token " + os.environ["TOKEN"] + " is not allowed"}))
"""


async def test_a_block_reason_quoting_a_hooks_env_value_is_redacted_from_a_dry_run(
    runtime: AgentRuntime,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    make_script: ScriptFactory,
) -> None:
    """Regression: the dry run's ``reason`` was the block reason as the hook gave it, so a
    command hook quoting a secret it was handed sent the secret back to the API's caller
    (its trace entry, beside it, was redacted)."""
    monkeypatch.setenv("SOME_VAR", CANARY)
    hook = HookConfig(
        event="user_prompt_submit",
        command=make_script(BLOCKS_WITH_TOKEN),
        env={"TOKEN": "${SOME_VAR}"},
    )
    await runtime.add_process("vault", ProcessConfig(model="scripted", hooks=[hook]))

    r = await client.post(
        "/processes/vault/hooks/dry-run",
        json={"event": "user_prompt_submit", "data": {"prompt": "hello"}},
    )

    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["decision"] == "blocked"
    assert answer["reason"] == "token [REDACTED:TOKEN] is not allowed"
    assert CANARY not in r.text
