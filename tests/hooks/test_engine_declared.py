"""Review of the hook engine: a bad timeout (or number) is refused where a hook is declared.

HookConfig (and so a manifest), register() and ShellHook refuse the same values, each with a
message naming the field, the value and what is allowed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest

from tether import HookConfig, HookContext, HookEvent, HookManager, ShellHook

CREATED = HookEvent.TASK_CREATED


async def slow(ctx: HookContext) -> None:
    await asyncio.sleep(30)


@pytest.mark.parametrize("value", [True, False])
def test_a_hook_config_timeout_given_as_a_bool_is_a_validation_error(value: bool) -> None:
    """Regression: ``timeout: yes`` in a manifest was a 1-second timeout (a bool is an int to
    pydantic), while register() and ShellHook refuse a bool timeout."""
    with pytest.raises(pydantic.ValidationError) as info:
        HookConfig(event="task_completed", command=["/bin/true"], timeout=value)
    text = str(info.value)
    assert "timeout" in text
    assert repr(value) in text
    assert "> 0 and at most 3600" in text


@pytest.mark.parametrize("field", ["priority", "max_output_bytes"])
def test_a_hook_config_integer_given_as_a_bool_is_a_validation_error(field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        HookConfig(event="task_completed", command=["/bin/true"], **{field: True})
    assert field in str(info.value)
    assert "True" in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1, -0.5, 3601, float("nan"), float("inf"), "soon"])
def test_a_bad_hook_config_timeout_names_the_field_the_value_and_what_is_allowed(
    timeout: Any,
) -> None:
    for hook in ({"command": ["/bin/true"]}, {"callback": slow}):
        with pytest.raises(pydantic.ValidationError) as info:
            HookConfig(event="task_completed", timeout=timeout, **hook)
        (error,) = info.value.errors()
        assert error["loc"] == ("timeout",)
        text = str(info.value)
        assert repr(timeout) in text or str(timeout) in text


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), True, "5"])
def test_a_bad_timeout_given_to_register_names_the_value_and_what_is_allowed(
    timeout: Any,
) -> None:
    manager = HookManager()
    with pytest.raises((TypeError, ValueError)) as info:
        manager.register(CREATED, slow, timeout=timeout)
    text = str(info.value)
    assert text.startswith("timeout must be ")
    assert "> 0 and at most 3600" in text
    assert repr(timeout) in text


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, "5"])
def test_a_bad_shell_hook_timeout_names_the_value_and_what_is_allowed(timeout: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        ShellHook(["/bin/true"], timeout=timeout)
    text = str(info.value)
    assert text.startswith("timeout must be ")
    assert "> 0 and at most 3600" in text
    assert repr(timeout) in text


def test_a_shell_hook_refuses_a_bool_max_output_bytes() -> None:
    """Regression: ShellHook(max_output_bytes=True) bounded the program's stdout to 1 byte."""
    with pytest.raises(ValueError, match=r"max_output_bytes must be .* got True"):
        ShellHook(["/bin/true"], max_output_bytes=True)
