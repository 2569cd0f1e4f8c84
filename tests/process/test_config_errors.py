"""A ProcessConfig built in code refuses bad input naming the field and the value, except a
value that may be a secret: that of a secret-bearing field, of an unknown field, or a mapping or
list (which may hold one)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tether import ProcessConfig

CANARY = "sk-config-canary-7f3a"


def refused(**fields: object) -> str:
    with pytest.raises(ValidationError) as caught:
        ProcessConfig(**fields)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_bad_plain_value_is_named_with_its_field() -> None:
    text = refused(max_turns=-1)
    assert "max_turns" in text
    assert "input_value=-1" in text
    assert "greater than or equal to 1" in text


def test_a_bad_text_value_is_named_too() -> None:
    text = refused(max_queue_size="lots")
    assert "max_queue_size" in text
    assert "'lots'" in text


def test_a_hook_entry_refused_as_a_whole_does_not_show_its_env() -> None:
    text = refused(hooks=[{"event": "task_created", "env": {"TOKEN": CANARY}}])
    assert "hooks.0" in text
    assert "set exactly one of 'command', 'callback', 'url' or 'prompt'" in text
    assert CANARY not in text


def test_a_secret_of_the_wrong_type_or_under_an_unknown_field_is_not_shown() -> None:
    assert "12345678" not in refused(secrets={"K": 12345678})
    text = refused(secret={"K": CANARY})
    assert "secret" in text
    assert CANARY not in text


def test_a_config_made_from_a_mapping_refuses_the_same_way() -> None:
    with pytest.raises(ValidationError) as caught:
        ProcessConfig.model_validate({"max_turns": 0, "secrets": {"K": 99999999}})
    text = str(caught.value)
    assert "input_value=0" in text
    assert "99999999" not in text
