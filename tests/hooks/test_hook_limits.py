"""A hook's timeout and output limit are checked once (hooks/_limits.py): a hook built in code
(register, ShellHook, HttpHook, a plugin's options) and one declared in data (HookConfig)
refuse the same values, and say what is allowed."""

from __future__ import annotations

import math
from typing import Any

import pydantic
import pytest

from tether.hooks import HookConfig, HookManager, HttpHook, ShellHook, hook_options
from tether.hooks._limits import (
    MAX_OUTPUT_LIMIT,
    MAX_TIMEOUT,
    check_output_limit,
    check_timeout,
)


async def noop(ctx: Any) -> None:
    return None


@pytest.mark.parametrize("timeout", [0, -1, MAX_TIMEOUT + 1, math.nan, math.inf])
def test_a_timeout_out_of_range_is_refused_by_every_way_of_making_a_hook(timeout: float) -> None:
    said = f"timeout must be > 0 and at most 3600 seconds, got {timeout!r}"
    builders = [
        lambda: check_timeout(timeout),
        lambda: ShellHook("true", timeout=timeout),
        lambda: HttpHook("http://127.0.0.1:9/", timeout=timeout),
        lambda: HookManager().register("task_created", noop, timeout=timeout),
        lambda: hook_options(timeout=timeout),
    ]
    for build in builders:
        with pytest.raises(ValueError, match=r"^timeout must be > 0") as refused:
            build()
        assert str(refused.value) == said


@pytest.mark.parametrize("timeout", [True, "5", None])
def test_a_timeout_that_is_not_a_number_is_a_type_error_naming_what_is_allowed(
    timeout: Any,
) -> None:
    if timeout is None:  # None is "no timeout of its own" where a hook may have none
        with pytest.raises(TypeError):
            check_timeout(timeout)
        return
    for build in (lambda: check_timeout(timeout), lambda: ShellHook("true", timeout=timeout)):
        with pytest.raises(TypeError) as refused:
            build()
        assert str(refused.value) == (
            f"timeout must be a number of seconds, > 0 and at most 3600, got {timeout!r}"
        )


def test_a_declared_timeout_given_as_a_bool_says_what_is_allowed() -> None:
    with pytest.raises(pydantic.ValidationError) as refused:
        HookConfig(event="task_created", command="true", timeout=True)
    assert "timeout must be a number of seconds, > 0 and at most 3600, got True" in str(
        refused.value
    )


def test_a_converse_timeout_is_checked_by_the_same_rule_under_its_own_name() -> None:
    from tether.hooks.kinds._plugin import _check_converse_timeout

    with pytest.raises(ValueError, match=r"^converse timeout must be > 0 and at most 3600"):
        _check_converse_timeout(0)
    assert _check_converse_timeout(2) == 2.0


@pytest.mark.parametrize("limit", [0, -1, MAX_OUTPUT_LIMIT + 1, True])
def test_an_output_limit_out_of_range_is_refused_in_code_and_in_data(limit: Any) -> None:
    said = f"max_output_bytes must be between 1 and {MAX_OUTPUT_LIMIT} (10 MiB), got {limit!r}"
    for build in (
        lambda: check_output_limit(limit),
        lambda: ShellHook("true", max_output_bytes=limit),
        lambda: HttpHook("http://127.0.0.1:9/", max_output_bytes=limit),
    ):
        with pytest.raises(ValueError, match=r"^max_output_bytes must be between") as refused:
            build()
        assert str(refused.value) == said
    for key in ("command", "url"):
        value = "true" if key == "command" else "http://127.0.0.1:9/"
        with pytest.raises(pydantic.ValidationError) as declared:
            HookConfig(event="task_created", max_output_bytes=limit, **{key: value})
        assert [e["loc"] for e in declared.value.errors()] == [("max_output_bytes",)]


def test_the_largest_values_allowed_are_accepted() -> None:
    assert check_timeout(MAX_TIMEOUT) == MAX_TIMEOUT
    assert check_output_limit(MAX_OUTPUT_LIMIT) == MAX_OUTPUT_LIMIT
    hook = HookConfig(
        event="task_created", command="true", timeout=3600, max_output_bytes=MAX_OUTPUT_LIMIT
    )
    assert (hook.timeout, hook.max_output_bytes) == (3600, MAX_OUTPUT_LIMIT)
