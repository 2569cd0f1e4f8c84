"""The debrief plugin's settings: a bad value names where it came from, checked when the
plugin is made (the issue's rule that validation errors name the field, value and allowed
values)."""

from __future__ import annotations

import pytest

from tether.plugins.debrief import DebriefPlugin


def test_a_bad_environment_setting_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "never")

    with pytest.raises(ValueError, match="TETHER_DEBRIEF_ON") as caught:
        DebriefPlugin()

    assert str(caught.value) == (
        "debrief 'on' must be 'failed' or 'all', got 'never' (from TETHER_DEBRIEF_ON)"
    )


def test_a_bad_argument_is_named_as_the_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")

    with pytest.raises(ValueError, match="must be 'failed' or 'all'") as caught:
        DebriefPlugin(on="sometimes")  # type: ignore[arg-type]

    assert str(caught.value) == "debrief 'on' must be 'failed' or 'all', got 'sometimes'"


def test_an_empty_on_is_an_error_not_a_fall_back_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")

    with pytest.raises(ValueError, match="got ''"):
        DebriefPlugin(on="")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("on", "env", "chosen"), [(None, None, "failed"), ("all", "failed", "all")]
)
def test_on_defaults_to_failed_and_an_argument_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, on: str | None, env: str | None, chosen: str
) -> None:
    if env is None:
        monkeypatch.delenv("TETHER_DEBRIEF_ON", raising=False)
    else:
        monkeypatch.setenv("TETHER_DEBRIEF_ON", env)

    assert DebriefPlugin(on=on).on == chosen  # type: ignore[arg-type]
