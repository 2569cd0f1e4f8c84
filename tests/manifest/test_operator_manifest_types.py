"""Operator review of manifests and deploys: a value of the wrong type where a field takes one
of several types is one problem at the field's own path."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from _manifest_support import problems

# -- a field of several types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("5", "5: hooks[0].command: Input should be a valid string or a valid list (got 5)"),
        ("{a: 1}", "5: hooks[0].command: Input should be a valid string or a valid list "
         "(got a mapping)"),
        ("null", "5: hooks[0].command: Input should be a valid string or a valid list "
         "(got None)"),
        ("[x, 5]", "5: hooks[0].command[1]: Input should be a valid string (got 5)"),
    ],
)  # fmt: skip
def test_a_wrong_command_is_one_problem_at_its_path(
    tmp_path: Path, value: str, expected: str
) -> None:
    """Regression: ``command: 5`` was two problems at paths that are no keys:
    ``hooks[0].command.list[str]`` and ``hooks[0].command.str``."""
    found = problems(
        tmp_path,
        f"name: a\nmodel: scripted\nhooks:\n  - event: task_completed\n    command: {value}\n",
    )
    assert found == [expected]


def test_a_wrong_matcher_pattern_is_one_problem_at_its_path(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        name: a
        hooks:
          - event: task_completed
            command: [notify]
            matcher: {trigger_type: 5}
        """,
    )
    assert found == [
        "5: hooks[0].matcher.trigger_type: Input should be a valid string or a valid list (got 5)"
    ]


async def test_over_the_api_a_wrong_command_is_one_detail_at_its_path(
    client: httpx.AsyncClient,
) -> None:
    hook = {"event": "task_completed", "command": 5}
    r = await client.post(
        "/processes", json={"name": "a", "config": {"model": "scripted", "hooks": [hook]}}
    )
    assert r.status_code == 422
    assert r.json()["error"]["details"] == [
        {
            "path": "config.hooks[0].command",
            # JSON bodies are validated as JSON (strictly by type), whose word is "array".
            "message": "Input should be a valid string or a valid array (got 5)",
        }
    ]


# -- a flag where a number goes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [("max_turns", "true"), ("concurrency", "yes"), ("stop_timeout", "on"), ("max_retries", "no")],
)
def test_a_flag_where_a_number_goes_is_refused_naming_the_value(
    tmp_path: Path, key: str, value: str
) -> None:
    """Regression: YAML reads true, yes and on as flags, and a flag was taken as the number 1
    (``max_turns: true`` ran one turn; ``max_retries: no`` meant 0)."""
    found = problems(tmp_path, f"name: a\nmodel: scripted\n{key}: {value}\n")
    assert len(found) == 1
    assert found[0].startswith(f"3: {key}: expected a number, got a flag (")


async def test_over_the_api_a_flag_where_a_number_goes_answers_422(
    client: httpx.AsyncClient,
) -> None:
    r = await client.post(
        "/processes", json={"name": "a", "config": {"model": "scripted", "max_turns": True}}
    )
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith("config.max_turns: expected a number")


def test_a_flag_as_a_webhook_port_is_refused(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "name: a\ntriggers:\n  - {type: webhook, webhook_path: /a, webhook_port: on}\n",
    )
    assert len(found) == 1


def test_every_number_field_of_a_spec_refuses_a_flag() -> None:
    from tether.manifest import _NUMBERS, ProcessSpec

    numbers = {name for name, f in ProcessSpec.model_fields.items() if f.annotation in (int, float)}
    assert numbers == set(_NUMBERS)
