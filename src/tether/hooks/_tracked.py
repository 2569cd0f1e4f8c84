"""The data of a recorded dispatch: containers that note their own writes.

A recorded dispatch hands hooks a copy of its data built from these classes. Each write notes
itself in the dispatch's marks list, so the recorder can tell which hook changed the data
without checking anything per hook. All the containers of one dispatch share a cell holding
that list; the dispatch empties the cell when it ends, so what is written afterwards (by the
caller, by a task a hook left running) is not put on any hook.

Notes: ``("w", before, after)`` for a write to the top level (with the prompt before and after
it, so the dispatch need not read the prompt up front), ``("n",)`` for a write inside a nested
dict or list. Copies and pickles are plain dicts and lists.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

from ._copy import _IMMUTABLE_SET

__all__ = ["Cell", "_Tracked", "_TrackedDict", "_TrackedList", "track"]

#: The marks list of the dispatch a tracked container belongs to (None: detached).
Cell = list[Any]

_ABSENT: Final = object()
_NESTED: Final = ("n",)


def _same(old: Any, new: Any) -> bool:
    """Whether writing ``new`` over ``old`` leaves the data as it was (same type, equal)."""
    if old is new:
        return True
    try:
        return type(old) is type(new) and bool(old == new)
    except Exception:
        return False


class _Tracked(dict[str, Any]):
    """The top level of a recorded dispatch's data."""

    __slots__ = ("_cell",)
    _cell: Cell
    _tether_plain = dict  # what a copy is (see _copy)

    def _wrote(self, before: Any) -> None:
        """Note a write; ``before`` is the prompt as it was before it."""
        marks = self._cell[0]
        if marks is not None:
            marks.append(("w", before, dict.get(self, "prompt")))

    def __setitem__(self, key: str, value: Any) -> None:
        old = dict.get(self, key, _ABSENT)
        if old is not _ABSENT and _same(old, value):  # writing back what was there: no change
            dict.__setitem__(self, key, value)
            return
        before = dict.get(self, "prompt")
        dict.__setitem__(self, key, value)
        self._wrote(before)

    def __delitem__(self, key: str) -> None:
        before = dict.get(self, "prompt")
        dict.__delitem__(self, key)
        self._wrote(before)

    def update(self, *args: Any, **kwargs: Any) -> None:
        before = dict.get(self, "prompt")
        dict.update(self, *args, **kwargs)
        self._wrote(before)

    def pop(self, *args: Any) -> Any:
        present = dict.__contains__(self, args[0]) if args else False
        before = dict.get(self, "prompt")
        value = dict.pop(self, *args)
        if present:
            self._wrote(before)
        return value

    def popitem(self) -> tuple[str, Any]:
        before = dict.get(self, "prompt")
        item = dict.popitem(self)
        self._wrote(before)
        return item

    def setdefault(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        before = dict.get(self, "prompt")
        dict.__setitem__(self, key, default)
        self._wrote(before)
        return default

    def clear(self) -> None:
        if self:
            before = dict.get(self, "prompt")
            dict.clear(self)
            self._wrote(before)

    def __ior__(self, other: Any) -> _Tracked:  # type: ignore[override,misc]
        before = dict.get(self, "prompt")
        dict.update(self, other)
        self._wrote(before)
        return self

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Copies and pickles are plain dicts: they are not the dispatch's data.
        return (dict, (dict(self),))


class _TrackedDict(_Tracked):
    """A dict inside a recorded dispatch's data."""

    __slots__ = ()

    def _wrote(self, before: Any = None) -> None:
        marks = self._cell[0]
        if marks is not None:
            marks.append(_NESTED)


class _TrackedList(list[Any]):
    """A list inside a recorded dispatch's data (every mutating method notes a write)."""

    __slots__ = ("_cell",)
    _cell: Cell
    _tether_plain = list

    def _wrote(self) -> None:
        marks = self._cell[0]
        if marks is not None:
            marks.append(_NESTED)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


def _noting(name: str) -> Callable[..., Any]:
    base = getattr(list, name)

    def method(self: _TrackedList, *args: Any, **kwargs: Any) -> Any:
        result = base(self, *args, **kwargs)
        self._wrote()
        return result

    method.__name__ = name
    return method


for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "clear",
    "sort",
    "reverse",
):
    setattr(_TrackedList, _name, _noting(_name))


def _track_value(value: Any, cell: Cell) -> Any:
    cls = type(value)
    if cls is dict or cls is _TrackedDict or cls is _Tracked:
        out = _TrackedDict(value)
        out._cell = cell
        for key, item in value.items():
            if type(item) not in _IMMUTABLE_SET:
                dict.__setitem__(out, key, _track_value(item, cell))
        return out
    if cls is list or cls is _TrackedList:
        items = _TrackedList(
            item if type(item) in _IMMUTABLE_SET else _track_value(item, cell) for item in value
        )
        items._cell = cell
        return items
    if cls is tuple:
        return tuple(_track_value(item, cell) for item in value)
    if cls in _IMMUTABLE_SET:
        return value
    return copy.deepcopy(value)


def track(data: dict[str, Any], cell: Cell) -> _Tracked:
    """A deep copy of ``data`` whose dicts and lists note their writes in ``cell[0]``."""
    out = _Tracked(data)
    out._cell = cell
    for value in data.values():  # the common payload holds only immutable values: one pass
        if type(value) not in _IMMUTABLE_SET:
            break
    else:
        return out
    for key, value in data.items():
        if type(value) not in _IMMUTABLE_SET:
            dict.__setitem__(out, key, _track_value(value, cell))
    return out
