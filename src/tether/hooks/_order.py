"""Ordering between named hooks: ``before`` and ``after`` constraints on top of priority.

A chain's base order is priority (highest first), then own, inherited and shared hooks, then
registration order. Constraints (``before=["audit"]``: run ahead of every hook named "audit";
``after=["redact"]``: run behind every hook named "redact") are applied by a stable topological
sort whose tie-break is that base order, so a chain without constraints keeps it exactly and a
constraint moves only the hook that declares it (put ahead of another, it runs right before
it; put behind, right after it). A cycle is an error naming it.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._hook import _Hook

__all__ = ["OrderError", "check_names", "ordered"]


class OrderError(ValueError):
    """Hooks' before/after constraints contradict each other (a cycle)."""


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


def ordered(hooks: Sequence[_Hook]) -> tuple[_Hook, ...]:
    """``hooks`` (in base order) with their before/after constraints applied; a name no hook
    of ``hooks`` has constrains nothing. Raises OrderError naming a cycle."""
    if not any(h.before or h.after for h in hooks):
        return tuple(hooks)
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


def _cycle(hooks: Sequence[_Hook], later: list[set[int]], placed: set[int]) -> str:
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
