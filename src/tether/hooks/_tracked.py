"""The data of a recorded dispatch: containers that note their own writes.

A recorded dispatch hands hooks a copy of its data built from these classes. Each write notes
itself in the dispatch's marks list, so the recorder can tell which hook changed the data
without checking anything per hook.

Notes: ``("w", before, after)`` for a write to the top level (with the prompt before and after
it, so the dispatch need not read the prompt up front), ``("n",)`` for a write inside a nested
dict or list. A hook's writes make one note: a write merges into the note the list ends with,
so marks stay bounded however often a hook writes. The dispatch ends each hook's notes with a
time mark, so what is written after its last hook (by the caller, by a task a hook left
running) merges into a trailing note the recorder ignores, and is put on no hook.
Copies and pickles are plain dicts and lists.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

from ._copy import _IMMUTABLE_SET

__all__ = ["_Tracked", "_TrackedDict", "_TrackedList", "mute", "register_yaml", "track"]

_ABSENT: Final = object()
_NESTED: Final = ("n",)


def _note_nested(marks: list[Any]) -> None:
    """Note a write inside a nested value, unless the last note already says the data changed."""
    if marks:
        last = marks[-1]
        if type(last) is tuple and (last[0] == "w" or last[0] == "n"):
            return
    marks.append(_NESTED)


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

    __slots__ = ("_marks",)
    _marks: list[Any]
    _tether_plain = dict  # what a copy is (see _copy)

    def _wrote(self, before: Any) -> None:
        """Note a write; ``before`` is the prompt as it was before it."""
        marks = self._marks
        after = dict.get(self, "prompt")
        if marks:
            last = marks[-1]
            if type(last) is tuple:
                if last[0] == "w":  # the same hook wrote before: keep its first "before"
                    marks[-1] = ("w", last[1], after)
                    return
                if last[0] == "n":
                    marks[-1] = ("w", before, after)
                    return
        marks.append(("w", before, after))

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
        _note_nested(self._marks)


class _TrackedList(list[Any]):
    """A list inside a recorded dispatch's data (every mutating method notes a write)."""

    __slots__ = ("_marks",)
    _marks: list[Any]
    _tether_plain = list

    def _wrote(self) -> None:
        _note_nested(self._marks)

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


def _track_value(value: Any, marks: list[Any]) -> Any:
    cls = type(value)
    if cls is dict or cls is _TrackedDict or cls is _Tracked:
        out = _TrackedDict(value)
        out._marks = marks
        for key, item in dict.items(out):  # over the copy: see _copy
            if type(item) not in _IMMUTABLE_SET:
                dict.__setitem__(out, key, _track_value(item, marks))
        return out
    if cls is list or cls is _TrackedList:
        items = _TrackedList(
            item if type(item) in _IMMUTABLE_SET else _track_value(item, marks) for item in value
        )
        items._marks = marks
        return items
    if cls is tuple:
        return tuple(_track_value(item, marks) for item in value)
    if cls in _IMMUTABLE_SET:
        return value
    return copy.deepcopy(value)


def track(data: dict[str, Any], marks: list[Any]) -> _Tracked:
    """A deep copy of ``data`` whose dicts and lists note their writes in ``marks``."""
    out = _Tracked(data)
    out._marks = marks
    for value in dict.values(out):  # the common payload holds only immutable values: one pass
        if type(value) not in _IMMUTABLE_SET:
            break
    else:
        return out
    for key, value in dict.items(out):  # over the copy: see _copy
        if type(value) not in _IMMUTABLE_SET:
            dict.__setitem__(out, key, _track_value(value, marks))
    return out


def mute(data: Any) -> None:
    """Make the tracked containers in ``data`` note their writes into a list of their own,
    not their dispatch's marks: ``data`` was cut off from the dispatch (see _recording)."""
    scratch: list[Any] = []
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, _Tracked | _TrackedList):
            value._marks = scratch
            stack.extend(value.values() if isinstance(value, dict) else value)
        elif type(value) is tuple:
            stack.extend(value)


_yaml_done: list[bool] = []


def register_yaml() -> None:
    """Let PyYAML dump tracked data as the plain mappings and sequences it is.

    Its safe dumper knows only exact dicts and lists, so without this a hook calling
    ``yaml.safe_dump(ctx.data)`` would fail only when history is on. Done once, by the
    first HistoryRecorder (PyYAML is a dependency of tether, loaded for manifests).
    """
    if _yaml_done:
        return
    _yaml_done.append(True)
    import yaml

    dumpers = [yaml.SafeDumper, yaml.Dumper]
    for name in ("CSafeDumper", "CDumper"):  # the libyaml ones, where PyYAML was built with it
        if hasattr(yaml, name):
            dumpers.append(getattr(yaml, name))
    for dumper in dumpers:
        for cls in (_Tracked, _TrackedDict):
            dumper.add_representer(cls, yaml.representer.SafeRepresenter.represent_dict)
        dumper.add_representer(_TrackedList, yaml.representer.SafeRepresenter.represent_list)
