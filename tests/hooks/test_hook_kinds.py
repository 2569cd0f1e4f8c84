"""HookConfig's url, persistent and prompt kinds: what each declaration builds, what it refuses
(naming the field, never showing a secret), and what a manager closes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

import tether.agent  # noqa: F401 - loads the prompt kind's builder, as every process does
from _executor_support import PolicyServer
from _process_support import eventually
from conftest import ScriptFactory
from tether import HookConfig, HookEvent, HookManager
from tether.hooks.kinds._registry import EXECUTOR_KINDS
from tether.models import ScriptedModel

TOKEN = "tok-9d2e61f0c4aa"
ECHO = """
import os
from tether.hookserver import serve

@serve
def handle(event):
    return {"data": {"pid": os.getpid()}}
"""


@pytest.fixture
async def service() -> AsyncIterator[PolicyServer]:
    async with PolicyServer() as server:
        yield server


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_each_kind_is_built_from_its_key_field() -> None:
    url = HookConfig(event="pre_tool_use", url="https://policy.internal/hook")
    persistent = HookConfig(event="task_created", command=["/bin/cat"], persistent=True)
    prompt = HookConfig(event="user_prompt_submit", prompt="Deny passwords.")
    command = HookConfig(event="task_created", command=["/bin/cat"], persistent=False)

    assert [type(h).kind for h in (url, persistent, prompt)] == ["url", "persistent", "prompt"]
    assert command.persistent is False
    assert {"url", "persistent", "prompt"} <= set(EXECUTOR_KINDS)


def test_the_catalog_names_each_hooks_executor_kind() -> None:
    manager = HookManager()
    for config in (
        HookConfig(event="task_created", url="https://policy.internal/hook?token=x"),
        HookConfig(event="task_created", command=["/bin/cat"], persistent=True),
        HookConfig(event="task_created", command=["/bin/cat"], persistent=False),
        HookConfig(event="task_created", prompt="Deny everything on Sundays.", timeout=12),
    ):
        manager.register_config(config)

    described = [(i.executor_kind, i.name, i.timeout) for i in manager.describe()]

    assert described == [
        ("url", "https://policy.internal/hook?…", 5.0),
        ("persistent", "/bin/cat", 5.0),
        ("command", "/bin/cat", 5.0),
        ("prompt", "prompt: Deny everything on Sundays.", 12.0),
    ]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"url": "ftp://x/hook"}, "url\n  Value error, url 'ftp://x/hook' must start with http"),
        ({"url": "https://u:pw@x/hook"}, "must not carry credentials"),
        ({"url": "https://x/h", "headers": {"Host": "y"}}, "'Host' is set by tether itself"),
        ({"url": "https://x/h", "secret": ""}, "secret\n  Value error, secret must not be empty"),
        ({"url": "https://x/h", "max_output_bytes": True}, "max_output_bytes must be an int"),
        ({"command": ["/bin/cat"], "persistent": "yes"}, "persistent\n  Input should be a valid"),
        ({"prompt": "  "}, "prompt\n  Value error, prompt must state the policy"),
        ({"prompt": "p", "model": "gpt-5"}, "model must be a model spec ('openai:<model name>'"),
        ({"url": "https://x/h", "prompt": "p"}, "set exactly one of"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_field(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        HookConfig(event="task_created", **fields)

    assert says in str(refused.value)


@pytest.mark.parametrize(
    "headers",
    [{"Bad Name": TOKEN}, {"Authorization": 12345}, [TOKEN]],
    ids=["bad name", "not text", "not a mapping"],
)
def test_a_refused_header_declaration_never_shows_a_value(headers: Any) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        HookConfig(event="task_created", url="https://x/h", headers=headers)

    assert TOKEN not in str(refused.value)
    assert "12345" not in str(refused.value)
    assert "headers" in str(refused.value)


def test_header_values_and_the_secret_are_masked_in_every_dump() -> None:
    config = HookConfig(
        event="task_created",
        url="https://x/h",
        headers={"Authorization": f"Bearer {TOKEN}"},
        secret=TOKEN,
    )

    assert TOKEN not in config.model_dump_json()
    assert TOKEN not in repr(config)
    assert TOKEN not in json.dumps(config.model_dump(mode="json"))


async def test_the_url_hooks_of_one_manager_share_one_connection(service: PolicyServer) -> None:
    manager = HookManager()
    for path in ("/allow", "/rewrite"):
        manager.register_config(HookConfig(event="task_created", url=f"{service.url}{path}"))
    try:
        for _ in range(3):
            result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
            assert result.errors == []
    finally:
        await manager.aclose()

    assert len(service.requests) == 6
    assert len({r.client_port for r in service.requests}) == 1


async def test_closing_the_manager_stops_its_persistent_programs(
    make_script: ScriptFactory,
) -> None:
    manager = HookManager()
    manager.register_config(
        HookConfig(event="task_created", command=[make_script(ECHO)], persistent=True)
    )
    result = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    pid = result.data["pid"]
    assert not gone(pid)

    await manager.aclose()

    await eventually(lambda: gone(pid), what="the persistent program to stop")
    again = await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    assert again.data["pid"] != pid  # the hook stays usable: a new program
    await manager.aclose()


async def test_a_persistent_hooks_env_secret_is_known_to_the_redactor(
    make_script: ScriptFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", TOKEN)
    manager = HookManager()
    manager.register_config(
        HookConfig(
            event="task_created",
            command=[make_script(ECHO)],
            persistent=True,
            env={"TOKEN": "${HOOK_TOKEN}"},
        )
    )
    from tether.hooks._secrets import CommandSecrets

    assert ("TOKEN", TOKEN) in CommandSecrets(manager)()


async def test_a_prompt_hook_declared_with_a_model_object_uses_it() -> None:
    model = ScriptedModel(tool_calls=[("decide", {"decision": "deny", "reason": "no"})])
    manager = HookManager()
    manager.register_config(HookConfig(event="user_prompt_submit", prompt="Deny all.", model=model))

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    assert result.blocked is True
    assert result.reason == "no"


async def test_a_prompt_hook_without_a_model_outside_a_process_is_a_clear_error() -> None:
    manager = HookManager()
    manager.register_config(HookConfig(event="user_prompt_submit", prompt="Deny all."))

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    ((_, error),) = result.errors
    assert "has no model" in str(error)


def test_a_persistent_hook_environment_is_a_secret_like_a_commands() -> None:
    config = HookConfig(
        event="task_created", command=["/bin/cat"], persistent=True, env={"TOKEN": TOKEN}
    )

    assert TOKEN not in config.model_dump_json()


def test_a_hook_objects_callback_registered_in_code_keeps_its_kind_and_secrets() -> None:
    from tether import HttpHook, PersistentHook, PromptHook
    from tether.hooks._secrets import CommandSecrets

    manager = HookManager()
    manager.register(
        HookEvent.TASK_CREATED,
        HttpHook("https://x/h", headers={"Authorization": TOKEN}, timeout=3).callback,
    )
    manager.register(HookEvent.TASK_CREATED, PersistentHook(["/bin/cat"], timeout=4).callback)
    manager.register(HookEvent.TASK_CREATED, PromptHook("Deny all.", timeout=6).callback)

    described = [(i.executor_kind, i.timeout) for i in manager.describe()]

    assert described == [("url", 3.0), ("persistent", 4.0), ("prompt", 6.0)]
    assert ("header Authorization", TOKEN) in CommandSecrets(manager)()


def test_a_persistent_hook_cannot_speak_claude_codes_protocol() -> None:
    with pytest.raises(pydantic.ValidationError, match="a persistent hook speaks tether's JSON"):
        HookConfig(
            event="task_created", command=["/bin/cat"], persistent=True, protocol="claude-code"
        )


def test_a_url_hook_may_speak_claude_codes_protocol() -> None:
    config = HookConfig(event="pre_tool_use", url="https://x/h", protocol="claude-code")

    assert config.protocol == "claude-code"


def test_the_catalog_says_what_a_url_or_persistent_hook_speaks() -> None:
    manager = HookManager()
    manager.register_config(
        HookConfig(event="pre_tool_use", url="https://x/h", protocol="claude-code")
    )
    manager.register_config(HookConfig(event="pre_tool_use", command=["cat"], persistent=True))

    assert [i.protocol for i in manager.describe()] == ["claude-code", "tether"]
