"""Manifest problems: where and what (ManifestIssue, ManifestError), and how a pydantic
validation error of a manifest model becomes problems with manifest paths, lines and messages
that name the field, say what it takes and never echo a secret."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from types import UnionType
from typing import Any, Final, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ._manifest_yaml import Loc, line_of, path_of
from .errors import TetherError

__all__ = [
    "MAX_ISSUE_CHARS",
    "ManifestError",
    "ManifestIssue",
    "issues_of",
    "secretish",
]


# -- problems ----------------------------------------------------------------------------------


class ManifestIssue(NamedTuple):
    """One problem in a manifest: where (a path like ``triggers[1].cron`` and a line) and what."""

    path: str
    line: int | None
    message: str

    def format(self, source: str | None = None) -> str:
        where = source or "<manifest>"
        if self.line is not None:
            where += f":{self.line}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ManifestError(TetherError, ValueError):
    """A manifest cannot be used; ``errors`` holds every problem found, in file order."""

    def __init__(self, errors: list[ManifestIssue], source: str | None = None) -> None:
        clipped = [e._replace(message=_clip(e.message)) for e in errors]
        self.errors = sorted(clipped, key=lambda e: (e.line or 0, e.path))
        self.source = source
        super().__init__("\n".join(e.format(source) for e in self.errors))


#: The longest message of one problem: what it quotes of the file (a value, a key) is cut so
#: that an error never shows more of a file than a line's worth, however long the value.
MAX_ISSUE_CHARS: Final = 1000


def _clip(message: str) -> str:
    """``message`` cut to at most MAX_ISSUE_CHARS characters."""
    if len(message) <= MAX_ISSUE_CHARS:
        return message
    return message[: MAX_ISSUE_CHARS - 3] + "..."


#: Top-level keys whose lists are tagged unions (an item's errors carry its tag in their path).
_TAGGED_LISTS: Final = frozenset({"triggers"})


# -- from pydantic errors ---------------------------------------------------------------


def issues_of(
    exc: ValidationError, root: type[BaseModel], lines: Mapping[Loc, int]
) -> Iterator[tuple[Loc, ManifestIssue, Mapping[str, Any] | None]]:
    """Each problem with its location and its pydantic error (None for several merged).

    A value that fits no member of a union (``command: str | list[str]``) is one problem at
    the field's path naming every allowed type, unless it got into a member (a list with a
    wrong item): then only that member's problems count, at their own paths.
    """
    unions: dict[Loc, list[tuple[Loc, Any]]] = {}
    for err in exc.errors(include_url=False):
        loc, union_at = _without_members(root, _clean_loc(tuple(err["loc"]), err["type"]))
        if union_at is None:
            yield loc, ManifestIssue(path_of(loc), line_of(lines, loc), _message(err, root)), err
        else:
            unions.setdefault(union_at, []).append((loc, err))
    for union_at, found in unions.items():
        deeper = [(loc, err) for loc, err in found if len(loc) > len(union_at)]
        for loc, err in deeper:
            yield loc, ManifestIssue(path_of(loc), line_of(lines, loc), _message(err, root)), err
        if not deeper:
            message = _merged([err for _, err in found], root)
            yield (
                union_at,
                ManifestIssue(path_of(union_at), line_of(lines, union_at), message),
                None,
            )


def _without_members(root: type[BaseModel], loc: Loc) -> tuple[Loc, Loc | None]:
    """``loc`` without the member labels pydantic puts in it for a union (``str``,
    ``list[str]``), and where the union is (None if no label was dropped)."""
    tp: Any = root
    out: list[str | int] = []
    union_at: Loc | None = None
    for part in loc:
        members = _plain_union(tp)
        chosen = next((m for m in members if _label(m) == part), None)
        if chosen is not None:
            union_at, tp = tuple(out), chosen
            continue
        out.append(part)
        tp = _step(_non_null(tp), part) if tp is not None else None
    return tuple(out), union_at


def _plain_union(tp: Any) -> list[Any]:
    """The members of a union of plain types (no models), None left out; else []."""
    while _is_annotated(tp):
        tp = get_args(tp)[0]
    if get_origin(tp) not in (Union, UnionType):
        return []
    members = [a for a in get_args(tp) if a is not type(None)]
    if len(members) < 2 or _models_in(tp):
        return []
    return members


def _non_null(tp: Any) -> Any:
    """``X`` for ``X | None``; anything else as it is."""
    while _is_annotated(tp):
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, UnionType):
        members = [a for a in get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return members[0]
    return tp


def _label(member: Any) -> str:
    """How pydantic names a union member in an error location: ``str``, ``list[str]``."""
    return member.__name__ if isinstance(member, type) else str(member)


def _merged(errors: list[Any], root: type[BaseModel]) -> str:
    """One message for a value that fits none of a union's members."""
    texts = [_message({**err, "type": "merged"}, root) for err in errors]
    lead = "Input should be "
    if all(text.startswith(lead) for text in texts):
        text = lead + " or ".join(t[len(lead) :] for t in texts)
    else:
        text = "; or ".join(texts)
    if any(_shows_input(err) for err in errors):
        text += f" (got {_describe(errors[0].get('input'))})"
    return text


def _clean_loc(loc: Loc, kind: str) -> Loc:
    """Drop the tag pydantic puts into the location of a discriminated union member."""
    if (
        len(loc) > 2
        and loc[0] in _TAGGED_LISTS
        and isinstance(loc[1], int)
        and kind not in ("union_tag_invalid", "union_tag_not_found")
    ):
        return (*loc[:2], *loc[3:])
    return loc


def _message(err: Any, root: type[BaseModel]) -> str:
    kind = err["type"]
    loc = tuple(err["loc"])
    if kind == "extra_forbidden":
        import difflib

        allowed = _allowed_keys(root, loc[:-1])
        tail = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.7)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown key {loc[-1]!r}{hint}{tail}"
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    if kind == "union_tag_invalid":
        tags = err.get("ctx", {}).get("expected_tags", "")
        return f"unknown trigger type {err['input'].get('type')!r}; expected one of {tags}"
    if kind == "union_tag_not_found":
        return "a trigger needs a 'type': one of 'cron', 'webhook', 'file_watch', 'event'"
    message = str(err["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    if _shows_input(err):
        message += f" (got {_describe(err.get('input'))})"
    return message


def _shows_input(err: Any) -> bool:
    """Whether a message of ``err`` may show the value (a wrong type, never a secret)."""
    kind = str(err["type"])
    return (kind.endswith(("_type", "_parsing"))) and not secretish(tuple(err["loc"]))


_SECRETISH = re.compile(r"secret|env|header|token|password|passwd|key|auth", re.IGNORECASE)


def secretish(loc: Sequence[Any] | str) -> bool:
    """Whether a field's location may hold a secret, so an error must not echo its value."""
    text = loc if isinstance(loc, str) else ".".join(str(part) for part in loc)
    return _SECRETISH.search(text) is not None


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_keys(root: type[BaseModel], loc: Loc) -> list[str]:
    """The keys the model at ``loc`` (a raw pydantic location) accepts."""
    tp: Any = root
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return []
    # A union of models (a hook of any kind): the keys of any of them.
    keys = {
        name: None
        for model in _models_in(tp)
        for name, field in model.model_fields.items()
        if not field.exclude and name != "callback"
    }
    return list(keys)


def _models_in(tp: Any) -> list[type[BaseModel]]:
    """The model classes ``tp`` names: itself, or the members of a union (or Optional)."""
    while _is_annotated(tp):
        tp = get_args(tp)[0]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [a for a in get_args(tp) if isinstance(a, type) and issubclass(a, BaseModel)]


def _is_annotated(tp: Any) -> bool:
    return hasattr(tp, "__metadata__")


def _step(tp: Any, part: str | int) -> Any:
    """The type one step down ``tp``: a list item, a dict value, a field or a union member."""
    while _is_annotated(tp):
        tp = get_args(tp)[0]
    origin = get_origin(tp)
    if origin is list and isinstance(part, int):
        return get_args(tp)[0]
    if origin is dict:
        return get_args(tp)[1]
    if isinstance(part, str):
        models = _models_in(tp)
        if len(models) > 1:  # a tagged union: the location names the member by its tag
            for model in models:
                tag = model.model_fields.get("type")
                if tag is not None and tag.default == part:
                    return model
        # A field of the model, or of the first member declaring it (the hook kinds, each
        # validated by its own class: their locations name the field, not the member).
        for model in models:
            if part in model.model_fields:
                return model.model_fields[part].annotation
    return None


# Public through tether.manifest (and ManifestError through tether): tracebacks say so.
ManifestIssue.__module__ = "tether.manifest"
ManifestError.__module__ = "tether.manifest"
