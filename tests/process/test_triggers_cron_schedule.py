"""Cron runners over time: late firings, time zones and DST changes, a clock that jumps."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from _process_support import eventually
from tether import CronTrigger, load_manifest, manifest_to_process_config
from tether.process._triggers import CronRunner


class Clock:
    """A wall clock that reads ``start`` when first read (after each ``set``), then advances
    in real time: a slow start of the runner cannot carry it past a time it is set before."""

    def __init__(self, start: datetime) -> None:
        self.set(start)

    def set(self, when: datetime) -> None:
        self.origin: float | None = None
        self.start = when

    def __call__(self) -> datetime:
        if self.origin is None:
            self.origin = time.monotonic()
        return self.start + timedelta(seconds=time.monotonic() - self.origin)


def just_before(when: datetime) -> datetime:
    return when - timedelta(milliseconds=20)


Fired = list[dict[str, Any]]


@contextlib.asynccontextmanager
async def firing(name: str, expression: str, clock: Clock) -> AsyncIterator[Fired]:
    """A CronRunner ``name`` of ``expression`` on ``clock``, started for the block and stopped
    after it; yields what it fired, as it fires."""
    fired: Fired = []
    runner = CronRunner(name, CronTrigger(cron_expression=expression), clock=clock, recheck=0.05)
    runner.start(recording(fired))
    try:
        yield fired
    finally:
        await runner.stop()


def recording(fired: Fired, then: Any = None) -> Any:
    async def fire(trigger_id: str, trigger_type: str, payload: dict[str, Any]) -> None:
        fired.append(payload)
        if then is not None:
            then(len(fired))

    return fire


async def test_times_missed_during_a_slow_firing_fire_once_for_the_latest_with_the_count() -> None:
    """Regression: a firing whose hooks held the runner five minutes made it fire the four
    times it missed one after the other, at once."""
    clock = Clock(just_before(datetime(2030, 1, 1, 12, 0, tzinfo=UTC)))
    fired: Fired = []

    def slow_first(count: int) -> None:  # the first firing's hooks take five minutes
        if count == 1:
            clock.set(datetime(2030, 1, 1, 12, 5, 0, 10_000, tzinfo=UTC))

    runner = CronRunner(
        "every-minute", CronTrigger(cron_expression="* * * * *"), clock=clock, recheck=0.05
    )
    runner.start(recording(fired, slow_first))
    try:
        await eventually(lambda: len(fired) >= 2, what="the late firing")
        await asyncio.sleep(0.1)
    finally:
        await runner.stop()
    assert fired == [
        {"scheduled_at": "2030-01-01T12:00:00+00:00"},
        {"scheduled_at": "2030-01-01T12:05:00+00:00", "missed": 4},
    ]


async def test_a_runner_follows_a_clock_that_jumps_while_it_waits() -> None:
    """Regression: the runner slept the whole wait in one go, so a clock that jumped (a host
    that slept, a clock set) kept a due firing waiting for the rest of the old wait."""
    clock = Clock(datetime(2030, 1, 1, 8, 0, tzinfo=UTC))
    async with firing("daily", "0 9 * * *", clock) as fired:
        await asyncio.sleep(0.1)  # the runner waits for 09:00, an hour away
        clock.set(just_before(datetime(2030, 1, 1, 9, 0, tzinfo=UTC)))
        await eventually(lambda: fired, timeout=5, what="the firing at 09:00")
    assert fired == [{"scheduled_at": "2030-01-01T09:00:00+00:00"}]


async def test_a_schedule_is_read_in_its_time_zone() -> None:
    # 09:00 in Berlin in winter is 08:00 UTC.
    clock = Clock(just_before(datetime(2030, 1, 15, 8, 0, tzinfo=UTC)))
    async with firing("standup", "CRON_TZ=Europe/Berlin 0 9 * * *", clock) as fired:
        await eventually(lambda: fired, what="the firing at 09:00 in Berlin")
    assert fired == [{"scheduled_at": "2030-01-15T09:00:00+01:00"}]


async def test_a_fixed_hour_repeated_by_the_fall_back_change_fires_once() -> None:
    """Berlin's clocks go back from 03:00 to 02:00 on 2030-10-27: 02:30 happens twice."""
    first = datetime(2030, 10, 27, 0, 30, tzinfo=UTC)  # 02:30 CEST
    clock = Clock(just_before(first))
    async with firing("nightly", "CRON_TZ=Europe/Berlin 30 2 * * *", clock) as fired:
        await eventually(lambda: fired, what="the first 02:30")
        clock.set(just_before(first + timedelta(hours=1)))  # 02:30 CET, the same local time
        await asyncio.sleep(0.3)
        clock.set(just_before(datetime(2030, 10, 28, 1, 30, tzinfo=UTC)))  # the next night
        await eventually(lambda: len(fired) >= 2, what="the next night's 02:30")
    assert fired == [
        {"scheduled_at": "2030-10-27T02:30:00+02:00"},
        {"scheduled_at": "2030-10-28T02:30:00+01:00"},
    ]


@pytest.mark.parametrize("hours", ["*", "0-23", "*/1"])
async def test_an_hourly_schedule_fires_in_both_hours_the_fall_back_change_repeats(
    hours: str,
) -> None:
    clock = Clock(just_before(datetime(2030, 10, 27, 0, 0, tzinfo=UTC)))  # 02:00 CEST
    async with firing("hourly", f"TZ=Europe/Berlin 0 {hours} * * *", clock) as fired:
        await eventually(lambda: fired, what="02:00 CEST")
        clock.set(just_before(datetime(2030, 10, 27, 1, 0, tzinfo=UTC)))  # 02:00 CET
        await eventually(lambda: len(fired) >= 2, what="02:00 CET")
    assert fired == [
        {"scheduled_at": "2030-10-27T02:00:00+02:00"},
        {"scheduled_at": "2030-10-27T02:00:00+01:00"},
    ]


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "utc", "", "../../etc/passwd"])
def test_an_unknown_time_zone_is_refused_naming_the_field_and_the_value(zone: str) -> None:
    expression = f"CRON_TZ={zone} 0 9 * * *"
    with pytest.raises(ValidationError) as caught:
        CronTrigger(cron_expression=expression)
    [error] = caught.value.errors()
    assert error["loc"] == ("cron_expression",)
    assert (
        f"cron_expression {expression!r}: time zone {zone!r} is not a known IANA time zone"
        in error["msg"]
    )
    assert "'Europe/Berlin'" in error["msg"]


def test_a_schedule_after_its_time_zone_is_checked_as_any_other() -> None:
    with pytest.raises(ValidationError, match="expected five fields"):
        CronTrigger(cron_expression="CRON_TZ=Europe/Berlin 0 9 * * * *")


def test_a_manifest_cron_trigger_names_its_time_zone(tmp_path: Path) -> None:
    path = tmp_path / "standup.agent"
    path.write_text(
        'version: "1.0"\nname: standup\nmodel: scripted\ntriggers:\n'
        '  - type: cron\n    cron_expression: "CRON_TZ=America/New_York 0 9 * * 1-5"\n'
    )
    [trigger] = manifest_to_process_config(load_manifest(path)).triggers
    assert isinstance(trigger, CronTrigger)
    assert trigger.cron_expression == "CRON_TZ=America/New_York 0 9 * * 1-5"


async def test_each_firing_gets_its_own_copy_of_the_trigger_payload() -> None:
    """Regression: firings shared the nested values of the trigger's payload, so a run that
    changed its event's payload changed the trigger and every later firing."""
    clock = Clock(just_before(datetime(2030, 1, 1, 12, 0, tzinfo=UTC)))
    fired: Fired = []

    def next_minute(count: int) -> None:
        fired[-1]["job"]["hosts"].append("rogue")  # what a run may do to its event's payload
        clock.set(just_before(datetime(2030, 1, 1, 12, count, tzinfo=UTC)))

    trigger = CronTrigger(cron_expression="* * * * *", payload={"job": {"hosts": ["a"]}})
    runner = CronRunner("every-minute", trigger, clock=clock, recheck=0.05)
    runner.start(recording(fired, next_minute))
    try:
        await eventually(lambda: len(fired) >= 2, what="two firings")
    finally:
        await runner.stop()
    assert fired[1]["job"] == {"hosts": ["a", "rogue"]}  # its own change only
    assert trigger.payload == {"job": {"hosts": ["a"]}}
