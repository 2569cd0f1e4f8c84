"""The event taxonomy: each lifecycle event's family, blocking, payload and patch schemas, as
JSON-ready records (read from the event table, hooks/_events.py)."""

from __future__ import annotations

import copy
from typing import Any, Final

from ._events import BLOCKABLE_EVENTS, CHANGES, EVENTS, HookEvent
from ._matcher import MATCHER_FIELDS

__all__ = ["CHANGES", "FAMILIES", "TAXONOMY", "describe_events"]

#: event -> (family, what a block does (None: not blockable), payload schema, patch schema),
#: derived from the event table.
TAXONOMY: Final[dict[HookEvent, tuple[str, str | None, dict[str, Any], dict[str, Any]]]] = {
    event: (spec.family, spec.block, spec.payload, spec.patch) for event, spec in EVENTS.items()
}


#: Every event family, in taxonomy order.
FAMILIES: Final = tuple(dict.fromkeys(family for family, *_ in TAXONOMY.values()))


def describe_events(
    blockable: bool | None = None, family: str | None = None
) -> list[dict[str, Any]]:
    """The taxonomy as JSON-ready records (optionally only blockable or non-blockable events,
    only those of one family)."""
    if family is not None and family not in FAMILIES:
        raise ValueError(f"unknown event family {family!r}; families: {', '.join(FAMILIES)}")
    out = []
    # Copies: a caller (an API view) may change what it gets without changing the taxonomy.
    for event, (event_family, block, payload, patch) in copy.deepcopy(TAXONOMY).items():
        is_blockable = event in BLOCKABLE_EVENTS
        if blockable is not None and is_blockable != blockable:
            continue
        if family is not None and event_family != family:
            continue
        out.append(
            {
                "event": event.value,
                "family": event_family,
                "blockable": is_blockable,
                # A sync hook matters where it can refuse the action or change what the
                # process reads back; the others report what happened: async-only.
                "sync_eligible": is_blockable or bool(patch.get("properties")),
                "block_effect": block,
                "matcher_fields": list(MATCHER_FIELDS[event]),
                "payload_schema": payload,
                "patch_schema": patch,
            }
        )
    return out
