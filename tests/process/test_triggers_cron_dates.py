"""Cron expressions the trigger would never fire on, or fire every second on, are refused."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from pydantic import ValidationError

from tether import CronTrigger, FileWatchTrigger, WebhookTrigger
from tether.process._triggers import CronRunner


@pytest.mark.parametrize("expression", ["* * * * * *", "0 0 * * * * 2030", "@reboot"])
def test_only_five_fields_or_a_schedule_nickname_are_taken(expression: str) -> None:
    with pytest.raises(ValidationError, match="expected five fields"):
        CronTrigger(cron_expression=expression)


@pytest.mark.parametrize("expression", ["@hourly", "@daily", "0 0 29 2 *", " */5 * * * * "])
def test_a_nickname_a_leap_day_and_surrounding_spaces_are_taken(expression: str) -> None:
    assert CronTrigger(cron_expression=expression).cron_expression == expression


@pytest.mark.parametrize("expression", ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"])
def test_an_expression_no_date_matches_is_refused(expression: str) -> None:
    with pytest.raises(ValidationError, match="never fires: no date matches it"):
        CronTrigger(cron_expression=expression)


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (WebhookTrigger, {"webhook_path": "/a", "webhook_port": True}),
        (FileWatchTrigger, {"watch_path": ".", "debounce_ms": False}),
    ],
)
def test_a_flag_is_not_a_number(cls: Any, fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=r"expected a number, got a flag \((true|false)\)"):
        cls(**fields)


async def test_a_runner_whose_schedule_has_no_date_stops_with_an_error_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Only a config built without validation can carry one (CronTrigger refuses it).
    config = CronTrigger.model_construct(cron_expression="0 0 31 2 *", payload={})
    fired: list[str] = []

    async def fire(trigger_id: str, trigger_type: str, payload: dict[str, Any]) -> None:
        fired.append(trigger_id)

    runner = CronRunner("cron-1", config)
    with caplog.at_level(logging.ERROR, logger="tether.process"):
        await asyncio.wait_for(runner._run(fire), 5)
    assert fired == []
    assert "cron trigger cron-1 stops: no next date" in caplog.text


async def test_a_trigger_whose_runner_ended_is_named_in_status_and_over_the_api() -> None:
    """Regression: a trigger that fired no more was said only in a log line; status() (and so
    the control API's process view) now names it with the error."""
    from tether import AgentProcess, ProcessConfig
    from tether.api._views import process_detail
    from tether.models import ScriptedModel

    # Only a config built without validation can carry one (CronTrigger refuses it).
    never = CronTrigger.model_construct(id="never", cron_expression="0 0 31 2 *", payload={})
    every = CronTrigger(id="hourly", cron_expression="@hourly")
    process = AgentProcess("c", ProcessConfig(model=ScriptedModel(), triggers=[never, every]))
    assert process.status()["trigger_errors"] == {}
    async with process:
        for _ in range(250):
            if process.status()["trigger_errors"]:
                break
            await asyncio.sleep(0.02)
        errors = process.status()["trigger_errors"]
        assert process_detail(process)["trigger_errors"] == errors
    assert errors == {"never": "CroniterBadDateError: failed to find next date"}
