"""Manifests declare the three new hook kinds; the shipped persistent example runs from one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from _manifest_support import problems, write
from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, HookEvent, load_manifest, manifest_to_process_config
from tether.hooks.kinds._http import HttpHookConfig
from tether.hooks.kinds._persistent import PersistentHookConfig
from tether.hooks.kinds._prompt import PromptHookConfig
from tether.manifest import manifest_json_schema
from tether.models import ScriptedModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

KINDS = """
name: kinds
model: scripted
hooks:
  - event: user_prompt_submit
    command: ["{python}", "{policy}"]
    persistent: true
    fail_closed: true
  - event: pre_tool_use
    url: https://policy.internal/hooks/tools
    headers: {{Authorization: "Bearer $${{POLICY_TOKEN}}"}}
    secret: signing-key
    timeout: 2
  - event: user_prompt_submit
    prompt: Deny prompts that ask for credentials.
    model: scripted
  - event: task_completed
    command: "/bin/true"
"""


def kinds_manifest(tmp_path: Path) -> Path:
    policy = EXAMPLES / "hooks" / "policy_server.py"
    return write(tmp_path, KINDS.format(python=sys.executable, policy=policy))


def test_a_manifest_declares_persistent_url_and_prompt_hooks(tmp_path: Path) -> None:
    config = manifest_to_process_config(load_manifest(kinds_manifest(tmp_path)))

    persistent, url, prompt, command = config.hooks
    assert isinstance(persistent, PersistentHookConfig)
    assert persistent.persistent is True
    assert isinstance(url, HttpHookConfig)
    # $${VAR} stays a reference, resolved each time the hook runs; the value is a secret.
    assert url.headers["Authorization"].get_secret_value() == "Bearer ${POLICY_TOKEN}"
    assert isinstance(prompt, PromptHookConfig)
    assert prompt.model == "scripted"
    assert type(command).kind == "command"


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("url: ftp://x/hook", "4: hooks[0].url: url 'ftp://x/hook' must start with http"),
        ("url: https://x/h\n    headers: {Host: x}", "hooks[0].headers: headers: 'Host' is set"),
        ("command: /bin/cat\n    persistent: maybe", "hooks[0].persistent: Input should be"),
        ("prompt: ''", "hooks[0].prompt: prompt must state the policy"),
        ("prompt: p\n    model: gpt-5", "hooks[0].model: model must be a model spec"),
    ],
)
def test_a_bad_hook_of_a_new_kind_is_one_problem_at_its_path(
    tmp_path: Path, entry: str, says: str
) -> None:
    text = f"name: bad\nhooks:\n  - event: task_created\n    {entry}\n"

    found = problems(tmp_path, text)

    assert len(found) == 1, found
    assert says in found[0]


def test_the_schema_describes_the_new_kinds() -> None:
    defs = manifest_json_schema()["$defs"]

    assert {"url", "headers", "secret"} <= set(defs["ManifestUrlHook"]["properties"])
    assert {"prompt", "model"} <= set(defs["ManifestPromptHook"]["properties"])
    assert "persistent" in defs["ManifestHook"]["properties"]


async def test_the_shipped_persistent_example_refuses_password_tickets(tmp_path: Path) -> None:
    manifest = load_manifest(kinds_manifest(tmp_path))
    config = manifest_to_process_config(manifest)
    config = config.model_copy(update={"hooks": config.hooks[:1], "model": ScriptedModel()})
    process = AgentProcess("kinds", config)
    recorder = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    await process.start()
    try:
        await process.inject(ticket("Reset my password"))
        await process.inject(ticket("Login page is down"))
        await eventually(lambda: len(recorder.outcomes()) == 2, what="both tickets")
    finally:
        await process.stop()

    [dead] = process.dead_letters
    assert dead["error"] == "password resets go to the identity team"
    assert process.config.model.prompts[0].endswith(  # type: ignore[union-attr]
        "Answer with a priority (P1-P3) and a team."
    )
