"""The event table: each event declared once; the other tables are read from it."""

from __future__ import annotations

from tether import BLOCKABLE_EVENTS, HookEvent
from tether.cli._live import _SHOWN
from tether.cli._samples import SAMPLES
from tether.hooks._events import EVENTS, EventSpec
from tether.hooks._matcher import MATCHER_FIELDS
from tether.hooks._taxonomy import TAXONOMY, describe_events


def test_every_event_has_exactly_one_spec_in_enum_order() -> None:
    assert list(EVENTS) == list(HookEvent)
    assert all(isinstance(spec, EventSpec) and spec.event is e for e, spec in EVENTS.items())


def test_the_blockable_events_are_those_whose_spec_says_what_a_block_does() -> None:
    assert {e for e, spec in EVENTS.items() if spec.block is not None} == BLOCKABLE_EVENTS
    assert all(EVENTS[e].blockable for e in BLOCKABLE_EVENTS)


def test_matchers_taxonomy_samples_and_live_columns_come_from_the_table() -> None:
    for event, spec in EVENTS.items():
        assert MATCHER_FIELDS[event] == spec.matchable
        assert TAXONOMY[event] == (spec.family, spec.block, spec.payload, spec.patch)
        assert SAMPLES[event.value] == spec.sample
        assert _SHOWN[event.value] == spec.shown


def test_a_sample_holds_every_required_payload_key_and_matchable_fields_are_payload_keys() -> None:
    for event, spec in EVENTS.items():
        assert set(spec.payload["required"]) <= set(spec.sample), event
        assert set(spec.matchable) <= set(spec.payload["properties"]), event


def test_the_described_events_are_copies_a_caller_may_change() -> None:
    described = describe_events()
    described[0]["payload_schema"]["properties"].clear()
    assert EVENTS[HookEvent.SESSION_START].payload["properties"]
