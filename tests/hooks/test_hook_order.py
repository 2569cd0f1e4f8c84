"""Ordering between named hooks: ``before``/``after`` on any hook, across own, inherited and
shared managers, by a stable topological sort whose tie-break is the priority order."""

from __future__ import annotations

import pydantic
import pytest

from tether import HookConfig, HookContext, HookEvent, HookManager

EV = HookEvent.TASK_CREATED


def recorder(ran: list[str], name: str):  # type: ignore[no-untyped-def]
    async def hook(ctx: HookContext) -> None:
        ran.append(name)

    return hook


def add(manager: HookManager, name: str, ran: list[str], **options: object) -> str:
    return manager.register(EV, recorder(ran, name), name=name, **options)  # type: ignore[arg-type]


async def test_before_and_after_move_only_the_hooks_they_must() -> None:
    manager, ran = HookManager(), []
    add(manager, "a", ran, priority=30)
    add(manager, "b", ran, priority=20)
    add(manager, "c", ran, priority=10)
    add(manager, "first", ran, priority=-5, before=["a"])
    add(manager, "after-a", ran, priority=-10, after=["a"], before=["c"])
    await manager.dispatch(EV, {})
    assert ran == ["first", "a", "b", "after-a", "c"]
    assert [i.name for i in sorted(manager.describe(EV), key=lambda i: i.order)] == ran


async def test_without_constraints_the_priority_order_is_kept() -> None:
    manager, ran = HookManager(), []
    for i, priority in enumerate([0, 5, 5, -1]):
        add(manager, f"h{i}", ran, priority=priority)
    await manager.dispatch(EV, {})
    assert ran == ["h1", "h2", "h0", "h3"]


async def test_an_own_hook_can_run_after_a_shared_one_and_before_an_inherited_one() -> None:
    shared, parent, own, ran = HookManager(), HookManager(), HookManager(), []
    add(shared, "audit", ran)
    add(parent, "policy", ran)
    own.inherit(parent)
    own.share(shared)
    add(own, "redact", ran, before=["policy"])
    add(own, "report", ran, after=["audit"])
    await own.dispatch(EV, {})
    assert ran == ["redact", "policy", "audit", "report"]
    sources = {i.name: i.source for i in own.describe(EV)}
    assert sources == {"redact": "code", "policy": "inherited", "audit": "shared", "report": "code"}


def test_an_unknown_name_is_an_error_where_the_hook_is_declared() -> None:
    manager, ran = HookManager(), []
    add(manager, "a", ran)
    with pytest.raises(ValueError, match=r"hook 'b': after names 'nope'.*hooks there: 'a'"):
        add(manager, "b", ran, after=["nope"])
    assert [i.name for i in manager.describe()] == ["a"]


def test_a_cycle_is_an_error_naming_it_and_the_hook_is_not_kept() -> None:
    manager, ran = HookManager(), []
    add(manager, "a", ran)
    add(manager, "b", ran, after=["a"])
    with pytest.raises(ValueError, match=r"cycle: 'a' -> 'b' -> 'c' -> 'a'"):
        add(manager, "c", ran, after=["b"], before=["a"])
    assert [i.name for i in manager.describe()] == ["a", "b"]


async def test_a_constraint_naming_a_removed_hook_constrains_nothing() -> None:
    manager, ran = HookManager(), []
    gone = add(manager, "x", ran)
    add(manager, "a", ran, priority=-1, before=["x"])
    add(manager, "b", ran, priority=-2)
    assert await manager.remove(gone)
    await manager.dispatch(EV, {})
    assert ran == ["a", "b"]


def test_a_link_that_makes_a_cycle_is_refused_and_undone() -> None:
    shared, own, ran = HookManager(), HookManager(), []
    add(own, "q", ran)
    add(own, "p", ran, before=["q"])
    add(shared, "p", ran)
    add(shared, "q", ran, before=["p"])  # once linked: own p -> shared q -> own p
    with pytest.raises(ValueError, match=r"cannot share .*cycle: 'p' -> 'q' -> 'p'"):
        own.share(shared)
    assert own.shared is None


async def test_a_hook_config_declares_its_order_and_the_catalog_shows_it() -> None:
    manager, ran = HookManager(), []
    add(manager, "audit", ran, priority=100)
    manager.register_config(
        HookConfig(
            event="task_created", callback=recorder(ran, "gate"), name="gate", before=["audit"]
        )
    )
    await manager.dispatch(EV, {})
    assert ran == ["gate", "audit"]
    assert {i.name: i.order for i in manager.describe(EV)} == {"gate": 0, "audit": 1}


def test_bad_order_values_are_refused_naming_the_field() -> None:
    manager, ran = HookManager(), []
    with pytest.raises(TypeError, match="before must be a list of hook names"):
        add(manager, "a", ran, before="b")
    with pytest.raises(ValueError, match="after must hold hook names"):
        add(manager, "a", ran, after=[""])
    with pytest.raises(pydantic.ValidationError, match="before must hold hook names"):
        HookConfig(event="task_created", command=["true"], before=["  "])
