"""Ordering between named hooks: ``before`` and ``after`` constraints on top of priority.

A chain's base order is priority (highest first), then own, inherited and shared hooks, then
registration order. Constraints (``before=["audit"]``: run ahead of every hook named "audit";
``after=["redact"]``: run behind every hook named "redact") are applied by a stable topological
sort whose tie-break is that base order, so a chain without constraints keeps it exactly and a
constraint moves only the hook that declares it (put ahead of another, it runs right before
it; put behind, right after it). A cycle is an error naming it.

Hooks declared together (a process's ``hooks``, a manifest's) are checked as a whole by
:func:`declaration_problems`: a name may be that of a hook declared later in the list, and a
cycle is blamed on the hook whose constraints close it, counting in declared order.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

from ..errors import TetherError

__all__ = [
    "DeclarationError",
    "Declared",
    "Misplaced",
    "OrderError",
    "check_names",
    "declaration_problems",
    "ordered",
]


class Named(Protocol):
    """What ordering reads of a hook (a registered one, or one declared as data)."""

    @property
    def name(self) -> str: ...
    @property
    def before(self) -> Sequence[str]: ...
    @property
    def after(self) -> Sequence[str]: ...


H = TypeVar("H", bound=Named)


@dataclass(frozen=True, slots=True)
class Declared:
    """A hook as ordering sees it, for a check of data not (yet) registered."""

    name: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


class OrderError(TetherError, ValueError):
    """Hooks' before/after constraints contradict each other (a cycle)."""


class Misplaced(NamedTuple):
    """One problem of hooks declared together: the hook's position in the declaration, the
    field at fault ("before", "after", or "" when both make the cycle) and what is wrong."""

    position: int
    field: str
    message: str

    def path(self, where: str = "hooks") -> str:
        """``hooks[2].after``: where the problem is, ``where`` naming the list."""
        return f"{where}[{self.position}]" + (f".{self.field}" if self.field else "")


class DeclarationError(TetherError, ValueError):
    """Hooks declared together name, in before/after, a hook their chain lacks, or make a
    cycle; ``problems`` says which hook and field each (``hooks[i].after``)."""

    def __init__(self, problems: Sequence[Misplaced], where: str = "hooks") -> None:
        self.problems = list(problems)
        self.where = where
        super().__init__("; ".join(f"{p.path(where)}: {p.message}" for p in self.problems))


def check_names(value: Sequence[str] | None, field: str) -> tuple[str, ...]:
    """A before/after list as given in code or config: names of hooks, non-empty strings."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{field} must be a list of hook names, got {value!r}")
    for name in value:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{field} must hold hook names (non-empty strings), got {name!r}")
    return tuple(value)


def ordered(hooks: Sequence[H]) -> tuple[H, ...]:
    """``hooks`` (in base order) with their before/after constraints applied; a name no hook
    of ``hooks`` has constrains nothing. Raises OrderError naming a cycle."""
    if not any(h.before or h.after for h in hooks):
        return tuple(hooks)
    ahead, behind, later = _edges(hooks)
    first = _sort(later, list(range(len(hooks))))
    if len(first) < len(hooks):
        raise OrderError(f"hooks' before/after make a cycle: {_cycle(hooks, later, set(first))}")
    # Only the hook that declares a constraint moves: one put ahead of another takes that
    # one's place in the base order (runs right before it), one put behind another takes
    # its place (runs right after it); the hooks between them keep theirs.
    rank = list(range(len(hooks)))
    for i in reversed(first):
        for j in ahead[i]:
            rank[i] = min(rank[i], rank[j])
    for i in first:
        for j in behind[i]:
            rank[i] = max(rank[i], rank[j])
    return tuple(hooks[i] for i in _sort(later, rank))


def declaration_problems(
    declared: Sequence[tuple[int, Named]],
    others: Sequence[Named],
    event: str,
    *,
    known: Collection[str] | None = (),
) -> list[Misplaced]:
    """The problems of hooks declared together, for one event's chain.

    ``declared`` holds each hook of the declaration on ``event`` with its position in the
    declaration, in declared order; ``others`` the rest of the chain (inherited, shared, or
    registered before). A before/after name must be that of another hook of the chain, or in
    ``known`` (``None``: any name counts, one the chain lacks may come at run time). A cycle
    is blamed on the first hook, in declared order, whose constraints close it; that hook's
    constraints are then left out to look for another.
    """
    hooks = [h for _, h in declared]
    problems: list[Misplaced] = []
    if known is not None:
        counts: dict[str, int] = {}
        for hook in [*others, *hooks]:
            counts[hook.name] = counts.get(hook.name, 0) + 1
        there = ", ".join(sorted(map(repr, counts))) or "none"
        for position, hook in declared:
            for field in ("before", "after"):
                wanted = getattr(hook, field)
                unknown = [
                    n for n in wanted if counts.get(n, 0) - (n == hook.name) <= 0 and n not in known
                ]
                if unknown:
                    problems.append(
                        Misplaced(
                            position,
                            field,
                            f"hook {hook.name!r}: {field} names {', '.join(map(repr, unknown))}, "
                            f"which no hook of {event}'s chain is called; hooks there: {there}",
                        )
                    )
    if not any(h.before or h.after for h in hooks) or _cycle_of(others) is not None:
        return problems  # (a cycle among the others is not this declaration's)
    bare = [Declared(h.name) for h in hooks]
    probe: list[Named] = [*bare]  # the declared hooks, constraints counted up to k
    for k, (position, hook) in enumerate(declared):
        probe[k] = hook
        cycle = _cycle_of([*others, *probe])
        if cycle is None:
            continue
        field = ""
        for only in ("before", "after"):
            probe[k] = Declared(hook.name, **{only: tuple(getattr(hook, only))})
            if _cycle_of([*others, *probe]) is not None:
                field = only
                break
        probe[k] = bare[k]
        problems.append(
            Misplaced(
                position, field, f"hook {hook.name!r}: hooks' before/after make a cycle: {cycle}"
            )
        )
    return sorted(problems, key=lambda p: p.position)


def _edges(hooks: Sequence[Named]) -> tuple[list[set[int]], list[set[int]], list[set[int]]]:
    """For each hook, the hooks it must run ahead of, behind, and all that must run after it."""
    by_name: dict[str, list[int]] = {}
    for i, hook in enumerate(hooks):
        by_name.setdefault(hook.name, []).append(i)
    ahead = [
        {j for n in h.before for j in by_name.get(n, ()) if j != i} for i, h in enumerate(hooks)
    ]
    behind = [
        {j for n in h.after for j in by_name.get(n, ()) if j != i} for i, h in enumerate(hooks)
    ]
    later: list[set[int]] = [set(targets) for targets in ahead]  # i -> what must run after i
    for i, targets in enumerate(behind):
        for j in targets:
            later[j].add(i)
    return ahead, behind, later


def _cycle_of(hooks: Sequence[Named]) -> str | None:
    """One cycle of ``hooks``' constraints, as ``'a' -> 'b' -> 'a'``; None if there is none."""
    if not any(h.before or h.after for h in hooks):
        return None
    _, _, later = _edges(hooks)
    placed = _sort(later, list(range(len(hooks))))
    return None if len(placed) == len(hooks) else _cycle(hooks, later, set(placed))


def _sort(later: list[set[int]], rank: list[int]) -> list[int]:
    """Kahn's topological sort, the lowest (rank, base index) first among the hooks ready;
    the hooks on a cycle are left out."""
    waiting = [0] * len(later)
    for targets in later:
        for j in targets:
            waiting[j] += 1
    ready = [(rank[i], i) for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(i)
        for j in later[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (rank[j], j))
    return out


def _cycle(hooks: Sequence[Named], later: list[set[int]], placed: set[int]) -> str:
    """One cycle among the hooks that could not be placed, as ``'a' -> 'b' -> 'a'`` (each
    must run before the next). Every such hook waits on another such hook: walking back along
    what each waits on must come round."""
    left = [i for i in range(len(hooks)) if i not in placed]
    path = [left[0]]
    seen = {left[0]: 0}
    while True:
        waits_on = min(i for i in left if path[-1] in later[i])
        if waits_on in seen:
            loop = [*path[seen[waits_on] :], waits_on][::-1]
            return " -> ".join(repr(hooks[i].name) for i in loop)
        seen[waits_on] = len(path)
        path.append(waits_on)
