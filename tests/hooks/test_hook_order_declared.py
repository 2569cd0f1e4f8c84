"""Ordering of hooks declared together (a process's ``hooks``): register_configs checks the
declaration as a whole, so a name may be declared later in the list, and a problem names the
hook and field at fault (``hooks[i].after``)."""

from __future__ import annotations

import pytest

from tether import HookConfig, HookContext, HookEvent, HookManager
from tether.hooks._order import DeclarationError

EV = HookEvent.TASK_CREATED


def declared(ran: list[str], name: str, **options: object) -> HookConfig:
    async def hook(ctx: HookContext) -> None:
        ran.append(name)

    return HookConfig(event=EV.value, callback=hook, name=name, **options)


async def test_a_declared_hook_may_name_one_declared_after_it() -> None:
    manager, ran = HookManager(), []
    manager.register_configs(
        [declared(ran, "x", after=["y"]), declared(ran, "y"), declared(ran, "w", before=["y"])]
    )
    await manager.dispatch(EV, {})
    assert ran == ["w", "y", "x"]
    assert {i.name: i.order for i in manager.describe(EV)} == {"w": 0, "y": 1, "x": 2}


async def test_a_declared_hook_may_name_a_hook_of_a_shared_manager_linked_first() -> None:
    shared, manager, ran = HookManager(), HookManager(), []
    shared.register_configs([declared(ran, "audit")])
    manager.share(shared)
    manager.register_configs([declared(ran, "report", after=["audit"], priority=10)])
    await manager.dispatch(EV, {})
    assert ran == ["audit", "report"]
    assert [(i.name, i.source) for i in manager.describe(EV)] == [
        ("audit", "shared"),
        ("report", "config"),
    ]


def test_a_cycle_is_blamed_on_the_hook_that_closes_it_and_nothing_is_kept() -> None:
    manager, ran = HookManager(), []
    with pytest.raises(DeclarationError) as caught:
        manager.register_configs(
            [declared(ran, "x", after=["y"]), declared(ran, "z"), declared(ran, "y", after=["x"])]
        )
    (problem,) = caught.value.problems
    assert problem.path() == "hooks[2].after"
    assert "cycle: 'x' -> 'y' -> 'x'" in problem.message
    assert str(caught.value).startswith("hooks[2].after: hook 'y': ")
    assert len(manager) == 0


def test_a_cycle_closed_by_both_fields_of_one_hook_points_at_the_hook() -> None:
    manager, ran = HookManager(), []
    with pytest.raises(
        DeclarationError, match=r"^hooks\[2\]: hook 'c': .*'a' -> 'b' -> 'c' -> 'a'"
    ):
        manager.register_configs(
            [
                declared(ran, "a"),
                declared(ran, "b", after=["a"]),
                declared(ran, "c", after=["b"], before=["a"]),
            ]
        )


def test_an_unknown_name_is_named_with_its_hook_and_field_and_nothing_is_kept() -> None:
    manager, ran = HookManager(), []
    manager.register_configs([declared(ran, "kept")])
    with pytest.raises(
        DeclarationError,
        match=r"^hooks\[1\]\.before: hook 'b': before names 'nope', .*there: 'a', 'b', 'kept'",
    ):
        manager.register_configs([declared(ran, "a"), declared(ran, "b", before=["nope"])])
    assert [i.name for i in manager.describe()] == ["kept"]


def test_a_hook_of_a_shared_manager_cannot_name_a_hook_of_a_manager_sharing_it() -> None:
    """A name is looked up in the chain of the manager the hook is registered in; the error
    says so instead of "declare it first" alone."""
    shared, manager, ran = HookManager(), HookManager(), []
    manager.share(shared)
    manager.register_configs([declared(ran, "gate")])
    with pytest.raises(ValueError, match=r"before names 'gate'.*not those of a manager that"):
        shared.register_config(declared(ran, "late", before=["gate"]))
    assert len(shared) == 0
