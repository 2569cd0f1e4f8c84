"""HookConfig: every field, default and bound of the reference table, and register_config."""

from __future__ import annotations

import json
import sys
from typing import Any

import pydantic
import pytest

from tether import HookConfig, HookContext, HookEvent, HookManager


async def callback(ctx: HookContext) -> None:
    return None


DEFAULTS: dict[str, Any] = {
    "command": None,
    "callback": None,
    "timeout": None,
    "priority": 0,
    "once": False,
    "tag": None,
    "fail_closed": False,
    "cwd": None,
    "env": {},
    "env_passthrough": [],
    "max_output_bytes": 65536,
}


@pytest.mark.parametrize(("field", "default"), sorted(DEFAULTS.items()))
def test_a_field_has_its_documented_default(field: str, default: Any) -> None:
    config = HookConfig(event="task_completed", command=["/bin/true"])
    expected = ["/bin/true"] if field == "command" else default

    assert getattr(config, field) == expected


def test_event_is_required() -> None:
    with pytest.raises(pydantic.ValidationError, match="event"):
        HookConfig(command="/bin/true")  # type: ignore[call-arg]


def test_an_event_member_is_stored_as_its_value() -> None:
    config = HookConfig(event=HookEvent.TASK_CREATED, command="/bin/true")

    assert config.event == "task_created"


def test_an_event_name_with_a_typo_is_a_validation_error_listing_the_valid_events() -> None:
    with pytest.raises(pydantic.ValidationError, match="user_promt_submit") as info:
        HookConfig(event="user_promt_submit", command="/bin/true")

    for event in HookEvent:
        assert event.value in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1, 3600.001, 86400])
def test_a_timeout_outside_zero_to_3600_is_a_validation_error(timeout: float) -> None:
    with pytest.raises(pydantic.ValidationError, match="timeout"):
        HookConfig(event="task_completed", command="/bin/true", timeout=timeout)


@pytest.mark.parametrize("timeout", [0.001, 5, 3600])
def test_a_timeout_within_the_bounds_is_accepted(timeout: float) -> None:
    assert HookConfig(event="task_completed", command="x", timeout=timeout).timeout == timeout


@pytest.mark.parametrize("size", [0, -1, 10 * 1024 * 1024 + 1])
def test_max_output_bytes_outside_one_byte_to_10_mib_is_a_validation_error(size: int) -> None:
    with pytest.raises(pydantic.ValidationError, match="max_output_bytes"):
        HookConfig(event="task_completed", command="/bin/true", max_output_bytes=size)


def test_max_output_bytes_of_exactly_10_mib_is_accepted() -> None:
    config = HookConfig(event="task_completed", command="x", max_output_bytes=10 * 1024 * 1024)

    assert config.max_output_bytes == 10 * 1024 * 1024


def test_both_command_and_callback_is_a_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError, match="exactly one"):
        HookConfig(event="session_start", command="/bin/true", callback=callback)


def test_neither_command_nor_callback_is_a_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError, match="exactly one"):
        HookConfig(event="session_start")


@pytest.mark.parametrize("command", ["", "   ", []])
def test_an_empty_command_is_a_validation_error(command: str | list[str]) -> None:
    with pytest.raises(pydantic.ValidationError, match="command"):
        HookConfig(event="session_start", command=command)


def test_an_unknown_key_is_rejected() -> None:
    with pytest.raises(pydantic.ValidationError, match="entrypoint"):
        HookConfig.model_validate(
            {"event": "session_start", "command": "/bin/true", "entrypoint": "x"}
        )


def test_a_sync_callback_raises_type_error() -> None:
    def sync(ctx: HookContext) -> None:
        return None

    with pytest.raises(TypeError, match="async"):
        HookConfig(event="session_start", callback=sync)


def test_a_callable_object_with_an_async_call_is_a_valid_callback() -> None:
    class Hook:
        async def __call__(self, ctx: HookContext) -> None:
            return None

    hook = Hook()

    assert HookConfig(event="session_start", callback=hook).callback is hook


def test_a_command_may_be_a_string_or_a_list() -> None:
    assert HookConfig(event="task_completed", command="./notify.sh --channel ops").command == (
        "./notify.sh --channel ops"
    )
    assert HookConfig(event="task_completed", command=["./notify.sh", "-v"]).command == [
        "./notify.sh",
        "-v",
    ]


def test_env_values_are_masked_in_a_json_dump() -> None:
    config = HookConfig(
        event="task_completed", command="/bin/true", env={"SLACK_TOKEN": "xoxb-very-secret"}
    )

    dumped = config.model_dump_json()

    assert "xoxb-very-secret" not in dumped
    assert json.loads(dumped)["env"] == {"SLACK_TOKEN": "**********"}
    assert "xoxb-very-secret" not in repr(config)
    assert config.env["SLACK_TOKEN"].get_secret_value() == "xoxb-very-secret"


def test_the_callback_is_never_serialized() -> None:
    config = HookConfig(event="session_start", callback=callback)

    assert "callback" not in config.model_dump()
    assert "callback" not in json.loads(config.model_dump_json())


def test_a_json_dump_of_a_command_config_loads_back_equal() -> None:
    config = HookConfig(
        event="user_prompt_submit",
        command=["./hooks/audit.sh"],
        timeout=5,
        fail_closed=True,
        env_passthrough=["SLACK_TOKEN"],
        priority=3,
        once=True,
        tag="audit",
        cwd="/tmp",
        max_output_bytes=1024,
    )

    loaded = HookConfig.model_validate_json(config.model_dump_json())

    assert loaded == config


# -- register_config -------------------------------------------------------------------------------


def bound(manager: HookManager, hook_id: str) -> float | None:
    """The engine's own limit on a hook (not shown in catalogs)."""
    return manager._timeout_of(manager._by_id[hook_id])


def test_a_command_hook_gets_five_seconds_plus_a_five_second_backstop() -> None:
    manager = HookManager()

    hook_id = manager.register_config(HookConfig(event="task_completed", command="/bin/true"))

    assert manager.describe("task_completed")[0].timeout == 5  # the catalog shows the default
    assert bound(manager, hook_id) == 10


def test_a_command_hooks_own_timeout_gets_the_five_second_backstop() -> None:
    manager = HookManager()

    hook_id = manager.register_config(
        HookConfig(event="task_completed", command="/bin/true", timeout=2)
    )

    assert manager.describe("task_completed")[0].timeout == 2  # the catalog shows it as declared
    assert bound(manager, hook_id) == 7


def test_a_callback_hook_gets_thirty_seconds_by_default() -> None:
    manager = HookManager()

    manager.register_config(HookConfig(event="session_start", callback=callback))

    assert manager.describe("session_start")[0].timeout == 30


def test_a_callback_hooks_own_timeout_is_used() -> None:
    manager = HookManager(default_timeout=30)

    manager.register_config(HookConfig(event="session_start", callback=callback, timeout=2.5))

    assert manager.describe("session_start")[0].timeout == 2.5


def test_register_config_carries_priority_once_tag_and_fail_closed() -> None:
    manager = HookManager()
    config = HookConfig(
        event="user_prompt_submit",
        callback=callback,
        priority=7,
        once=True,
        tag="policy",
        fail_closed=True,
    )

    hook_id = manager.register_config(config)

    (info,) = manager.describe("user_prompt_submit")
    assert info.hook_id == hook_id
    assert (info.priority, info.once, info.tag, info.fail_closed) == (7, True, "policy", True)
    assert info.source == "config"


async def test_a_registered_command_config_runs_the_program_and_applies_its_answer(
    make_script: Any,
) -> None:
    script = make_script(
        """
        import json, sys
        event = json.load(sys.stdin)
        prompt = event["data"]["prompt"]
        print(json.dumps({"data": {"prompt": prompt + " (audited)"}}))
        """
    )
    manager = HookManager()
    manager.register_config(HookConfig(event="user_prompt_submit", command=[script]))

    result = await manager.dispatch("user_prompt_submit", {"prompt": "hi"}, process_id="p")

    assert result.errors == []
    assert result.data == {"prompt": "hi (audited)"}


async def test_a_fail_closed_command_config_that_exits_non_zero_blocks() -> None:
    manager = HookManager()
    manager.register_config(
        HookConfig(
            event="user_prompt_submit",
            command=[sys.executable, "-c", "import sys; sys.exit(3)"],
            fail_closed=True,
        )
    )

    result = await manager.dispatch("user_prompt_submit", {"prompt": "hi"})

    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed)")
    assert "exited 3" in result.reason


async def test_a_command_configs_env_passthrough_and_env_reach_the_program(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_PASSED", "through")
    monkeypatch.setenv("TETHER_TEST_REF", "referenced")
    script = make_script(
        """
        import json, os
        print(json.dumps({"data": {k: os.environ.get(k) for k in
              ("TETHER_TEST_PASSED", "TETHER_TEST_EXTRA")}}))
        """
    )
    manager = HookManager()
    manager.register_config(
        HookConfig(
            event="task_completed",
            command=[script],
            env_passthrough=["TETHER_TEST_PASSED"],
            env={"TETHER_TEST_EXTRA": "${TETHER_TEST_REF}"},
        )
    )

    result = await manager.dispatch("task_completed")

    assert result.data == {"TETHER_TEST_PASSED": "through", "TETHER_TEST_EXTRA": "referenced"}
