"""A fast deep copy for JSON-like payloads, so no hook can reach back into the caller's data.

Each dict is copied in one C call before its values are looked at, and the loop runs over that
copy: a thread still writing to the data (one a timed-out hook left running) can make the copy
miss its latest write, never fail with "dictionary changed size during iteration".
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["copy_payload"]

_IMMUTABLE = (str, int, float, bool, type(None), bytes)


def _copy_value(value: Any) -> Any:
    cls = type(value)
    if cls in _IMMUTABLE_SET:
        return value
    if cls is dict:  # a C copy, then only the values that are containers themselves
        out = value.copy()
        for key, item in out.items():
            if type(item) not in _IMMUTABLE_SET:
                out[key] = _copy_value(item)
        return out
    if cls is list:
        return [item if type(item) in _IMMUTABLE_SET else _copy_value(item) for item in value]
    if cls is tuple:
        return tuple(_copy_value(v) for v in value)
    # A recorded dispatch's containers copy plain, as fast as plain ones: dict.copy of one is a
    # plain dict (the result of every recorded dispatch with nested data is copied so).
    plain = getattr(cls, "_tether_plain", None)
    if plain is dict:
        out = dict.copy(value)
        for key, item in out.items():
            if type(item) not in _IMMUTABLE_SET:
                out[key] = _copy_value(item)
        return out
    if plain is list:
        return [item if type(item) in _IMMUTABLE_SET else _copy_value(item) for item in value]
    return copy.deepcopy(value)


_IMMUTABLE_SET = frozenset(_IMMUTABLE)


def copy_payload(data: dict[str, Any]) -> dict[str, Any]:
    """Return a deep copy of a payload dict as plain dicts and lists (plain containers copied
    fast, the rest deep-copied)."""
    out = data.copy()  # dict.copy: a plain dict, even from a recorded dispatch's data
    for value in out.values():  # the common payload holds only immutable values: one pass
        if type(value) not in _IMMUTABLE_SET:
            break
    else:
        return out
    for key, value in out.items():
        if type(value) not in _IMMUTABLE_SET:
            out[key] = _copy_value(value)
    return out
