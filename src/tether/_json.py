"""JSON as tether reads it from outside (API bodies, CLI options): only what JSON can carry."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["loads_strict"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def loads_strict(text: str | bytes) -> Any:
    """``json.loads``, refusing (ValueError) NaN, Infinity and numbers beyond a float's range
    (1e400), which Python's reader takes but no other JSON reader (nor a hook program) does."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
