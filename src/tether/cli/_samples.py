"""A sample ``ctx.data`` for each lifecycle event (for ``tether hooks test``), from the event
table."""

from __future__ import annotations

import copy
from typing import Any, Final

from ..hooks import EVENTS

__all__ = ["SAMPLES", "sample_data"]

SAMPLES: Final[dict[str, dict[str, Any]]] = {
    event.value: spec.sample for event, spec in EVENTS.items()
}


def sample_data(event: str) -> dict[str, Any]:
    """A fresh copy of the sample data of ``event`` (a HookEvent value)."""
    return copy.deepcopy(SAMPLES[event])
