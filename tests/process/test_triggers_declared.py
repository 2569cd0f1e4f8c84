"""Trigger fields that could never work are refused when declared, naming field and value."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tether import CronTrigger, EventTrigger, FileWatchTrigger


@pytest.mark.parametrize(
    ("cls", "fields", "field", "message"),
    [
        (FileWatchTrigger, {"watch_path": ""}, "watch_path", "watch_path '' is no path"),
        (FileWatchTrigger, {"watch_path": "  "}, "watch_path", "watch_path '  ' is no path"),
        (FileWatchTrigger, {"watch_path": "in\x00box"}, "watch_path", "is no path"),
        (
            FileWatchTrigger,
            {"watch_path": ".", "patterns": []},
            "patterns",
            "patterns [] would match no file",
        ),
        (
            FileWatchTrigger,
            {"watch_path": ".", "patterns": ["*.txt", ""]},
            "patterns",
            "patterns ['*.txt', ''] would match no file",
        ),
        (EventTrigger, {"event_type": ""}, "event_type", "event_type '' is empty"),
        (EventTrigger, {"event_type": " "}, "event_type", "event_type ' ' is empty"),
        (
            CronTrigger,
            {"cron_expression": "@daily", "id": ""},
            "id",
            "id '' is not allowed",
        ),
        (
            CronTrigger,
            {"cron_expression": "@daily", "id": "nightly "},
            "id",
            "id 'nightly ' is not allowed",
        ),
    ],
)
def test_a_trigger_field_that_could_never_work_is_refused(
    cls: Any, fields: dict[str, Any], field: str, message: str
) -> None:
    """Regression: each of these was taken, and the trigger then waited for a folder named ''
    for ever, matched no file, answered no event, or fired events no one could tell apart."""
    with pytest.raises(ValidationError) as caught:
        cls(**fields)
    [error] = caught.value.errors()
    assert error["loc"] == (field,)
    assert message in error["msg"]
