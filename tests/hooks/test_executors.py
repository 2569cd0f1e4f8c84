"""The executor seam: what runs a hook is an Executor, chosen by the HookConfig kind."""

from __future__ import annotations

import sys
from typing import Any

import pydantic
import pytest

from tether import HookConfig, HookContext, HookEvent, HookManager, ProcessConfig
from tether.hooks import HookBlocked, ShellHook
from tether.hooks._executor import CallbackExecutor, Executor
from tether.hooks._shell import CommandExecutor
from tether.hooks.kinds._base import BaseHookConfig
from tether.hooks.kinds._callback import CallbackHookConfig
from tether.hooks.kinds._command import CommandHookConfig
from tether.hooks.kinds._registry import EXECUTOR_KINDS, KINDS


async def noop(ctx: HookContext) -> None:
    return None


class Upper:
    """An executor of its own kind: uppercases the prompt, refuses an empty one."""

    kind = "upper"
    timeout = None
    backstop = 0.0

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, ctx: HookContext) -> None:
        self.runs += 1
        if not ctx.data.get("prompt"):
            raise HookBlocked("empty prompt")
        ctx.data["prompt"] = ctx.data["prompt"].upper()


def test_a_hook_config_builds_the_class_of_the_kind_its_fields_name() -> None:
    command = HookConfig(event="task_created", command=["/bin/true"])
    callback = HookConfig(event="task_created", callback=noop)
    assert type(command) is CommandHookConfig
    assert type(callback) is CallbackHookConfig
    assert isinstance(command, BaseHookConfig)
    assert isinstance(callback, BaseHookConfig)
    assert (command.kind, callback.kind) == ("command", "callback")


def test_model_validate_and_a_list_field_choose_the_kind_too() -> None:
    validated = HookConfig.model_validate({"event": "task_created", "command": "true"})
    assert type(validated) is CommandHookConfig
    from_json = HookConfig.model_validate_json('{"event": "task_created", "command": ["true"]}')
    assert type(from_json) is CommandHookConfig
    config = ProcessConfig(model="scripted", hooks=[{"event": "task_created", "command": "true"}])
    assert [type(h) for h in config.hooks] == [CommandHookConfig]


def test_a_field_of_another_kind_reads_as_its_default() -> None:
    command = HookConfig(event="task_created", command=["/bin/true"])
    callback = HookConfig(event="task_created", callback=noop)
    assert command.callback is None
    assert (callback.command, callback.cwd, callback.env) == (None, None, {})
    assert callback.max_output_bytes == 65536
    with pytest.raises(AttributeError):
        _ = callback.no_such_field


def test_an_error_in_a_list_of_hooks_keeps_its_plain_location() -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        ProcessConfig(
            model="scripted", hooks=[{"event": "task_created", "command": "true", "timeout": -1}]
        )
    assert [e["loc"] for e in refused.value.errors()] == [("hooks", 0, "timeout")]


@pytest.mark.parametrize(
    ("fields", "which"),
    [({}, "neither"), ({"command": "true", "callback": noop}, "both")],
    ids=["neither", "both"],
)
def test_naming_no_kind_or_two_is_one_clear_error(fields: dict[str, Any], which: str) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        HookConfig(event="task_created", env={"K": "secret-value-1"}, **fields)
    text = str(refused.value)
    assert f"set exactly one of 'command', 'callback', 'url' or 'prompt' (got {which})" in text
    assert "secret-value-1" not in text


def test_every_registered_kind_is_listed_with_the_plugin_kind() -> None:
    assert set(KINDS) <= set(EXECUTOR_KINDS)
    assert {"callback", "command", "plugin"} <= set(EXECUTOR_KINDS)
    for kind, cls in KINDS.items():
        assert cls.kind == kind
        assert cls.key in cls.model_fields


def test_the_built_in_executors_satisfy_the_protocol() -> None:
    shell = ShellHook(["/bin/true"], timeout=2.0)
    assert isinstance(CallbackExecutor(noop), Executor)
    assert isinstance(CommandExecutor(shell), Executor)
    assert isinstance(Upper(), Executor)


async def test_an_executor_of_a_new_kind_runs_blocks_and_is_shown_by_its_kind() -> None:
    manager = HookManager()
    upper = Upper()
    manager.register(
        HookEvent.USER_PROMPT_SUBMIT, upper.run, name="upper", executor=upper, timeout=1.0
    )
    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})
    assert (result.fired, result.data["prompt"]) == (1, "HI")
    refused = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": ""})
    assert (refused.blocked, refused.reason) == (True, "empty prompt")
    [info] = manager.describe()
    assert (info.executor_kind, info.name, info.timeout) == ("upper", "upper", 1.0)
    assert upper.runs == 2


async def test_a_command_config_runs_its_program_and_shows_its_own_timeout() -> None:
    manager = HookManager()
    answer = '{"data": {"prompt": "from the program"}}'
    script = f"import sys; sys.stdin.read(); print({answer!r})"
    manager.register_config(
        HookConfig(event="user_prompt_submit", command=[sys.executable, "-c", script], timeout=4)
    )
    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})
    assert result.data["prompt"] == "from the program"
    [info] = manager.describe()
    assert (info.executor_kind, info.timeout) == ("command", 4.0)
    # The engine bounds the run past the program's own timeout (the program is killed first).
    assert manager._timeout_of(manager._by_id[info.hook_id]) == 4.0 + CommandExecutor.backstop


async def test_a_shell_hook_registered_in_code_is_a_command_and_a_plain_callable_a_callback() -> (
    None
):
    manager = HookManager(default_timeout=7.0)
    shell = ShellHook([sys.executable, "-c", "import sys; sys.stdin.read()"], timeout=3.0)
    manager.register(HookEvent.TASK_CREATED, shell.callback)
    manager.register(HookEvent.TASK_CREATED, noop)
    kinds = [(i.executor_kind, i.timeout) for i in manager.describe()]
    assert kinds == [("command", 3.0), ("callback", 7.0)]


@pytest.mark.parametrize("declared", [["event", "task_created"], "command: true", 3])
def test_a_hook_declared_by_something_else_than_a_mapping_is_refused_saying_what_is_allowed(
    declared: Any,
) -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        HookConfig.model_validate(declared)
    text = str(refused.value)
    assert "a hook is declared by a mapping of its fields" in text
    assert "one of command, callback, url, prompt" in text
    assert f"got {type(declared).__name__}" in text
    with pytest.raises(pydantic.ValidationError) as in_a_list:
        ProcessConfig(model="scripted", hooks=[declared])
    assert [e["loc"] for e in in_a_list.value.errors()] == [("hooks", 0)]


def test_a_declaration_of_any_kind_is_an_instance_of_hook_config() -> None:
    from tether import HookConfig

    command = HookConfig(event="session_start", command="true")
    http = HookConfig(event="session_start", url="https://hooks.example.com/h")
    assert isinstance(command, HookConfig)
    assert isinstance(http, HookConfig)
    assert issubclass(type(command), HookConfig)
    assert not isinstance({"event": "session_start", "command": "true"}, HookConfig)
    assert "anyOf" in str(HookConfig.model_json_schema()) or "oneOf" in str(
        HookConfig.model_json_schema()
    )
