"""Chained managers: own hooks, then inherited managers (transitively), then a shared manager."""

from __future__ import annotations

import asyncio

import pytest

from tether import HookBlocked, HookContext, HookErrorInfo, HookEvent, HookManager

EV = HookEvent.USER_PROMPT_SUBMIT


def recorder(manager: HookManager, name: str, order: list[str], priority: int = 0) -> str:
    async def hook(ctx: HookContext) -> None:
        order.append(f"{name}@{ctx.process_id}")

    return manager.register(EV, hook, priority=priority)


async def test_own_hooks_run_before_inherited_hooks_before_shared_hooks() -> None:
    order: list[str] = []
    parent, child, shared = HookManager(), HookManager(), HookManager()
    recorder(shared, "shared", order, priority=100)
    recorder(parent, "parent", order, priority=50)
    recorder(child, "child", order)
    child.inherit(parent)
    child.share(shared)

    await child.dispatch(EV, process_id="child-proc")

    assert order == ["child@child-proc", "parent@child-proc", "shared@child-proc"]


async def test_inheritance_is_transitive() -> None:
    order: list[str] = []
    grandparent, parent, child = HookManager(), HookManager(), HookManager()
    recorder(grandparent, "grandparent", order)
    recorder(parent, "parent", order)
    recorder(child, "child", order)
    parent.inherit(grandparent)
    child.inherit(parent)

    await child.dispatch(EV, process_id="c")

    assert order == ["child@c", "parent@c", "grandparent@c"]


async def test_ctx_process_id_names_the_dispatcher_not_the_hooks_owner() -> None:
    seen: list[str] = []
    parent, child = HookManager(), HookManager()

    @parent.on(EV)
    async def governs(ctx: HookContext) -> None:
        seen.append(ctx.process_id)

    child.inherit(parent)

    await parent.dispatch(EV, process_id="parent")
    await child.dispatch(EV, process_id="child")

    assert seen == ["parent", "child"]


async def test_a_shared_manager_runs_for_every_manager_that_shares_it() -> None:
    order: list[str] = []
    shared = HookManager()
    recorder(shared, "shared", order)
    a, b = HookManager(), HookManager()
    a.share(shared)
    b.share(shared)

    await a.dispatch(EV, process_id="a")
    await b.dispatch(EV, process_id="b")

    assert order == ["shared@a", "shared@b"]


async def test_a_hook_added_to_a_parent_later_runs_for_the_child() -> None:
    order: list[str] = []
    parent, child = HookManager(), HookManager()
    child.inherit(parent)
    await child.dispatch(EV, process_id="c")

    recorder(parent, "parent", order)
    await child.dispatch(EV, process_id="c")

    assert order == ["parent@c"]


async def test_an_inherited_block_stops_the_shared_hooks() -> None:
    order: list[str] = []
    parent, child, shared = HookManager(), HookManager(), HookManager()

    @parent.on(EV)
    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("parent policy")

    recorder(shared, "shared", order)
    child.inherit(parent)
    child.share(shared)

    result = await child.dispatch(EV, process_id="c")

    assert result.blocked
    assert result.reason == "parent policy"
    assert order == []


async def test_share_none_unsets_the_shared_manager() -> None:
    order: list[str] = []
    shared, own = HookManager(), HookManager()
    recorder(shared, "shared", order)
    own.share(shared)
    assert own.shared is shared

    own.share(None)
    await own.dispatch(EV, process_id="p")

    assert own.shared is None
    assert order == []


async def test_a_manager_inherited_twice_runs_its_hooks_once() -> None:
    order: list[str] = []
    base, left, right, child = HookManager(), HookManager(), HookManager(), HookManager()
    recorder(base, "base", order)
    left.inherit(base)
    right.inherit(base)
    child.inherit(left)
    child.inherit(right)
    child.inherit(left)

    await child.dispatch(EV, process_id="c")

    assert order == ["base@c"]
    assert child.inherited == (left, right)


async def test_a_shared_manager_that_is_also_inherited_runs_once() -> None:
    order: list[str] = []
    shared, child = HookManager(), HookManager()
    recorder(shared, "shared", order)
    child.inherit(shared)
    child.share(shared)

    await child.dispatch(EV, process_id="c")

    assert order == ["shared@c"]


def test_a_manager_cannot_inherit_itself_or_its_descendant() -> None:
    parent, child = HookManager(), HookManager()
    child.inherit(parent)

    with pytest.raises(ValueError, match="inherit itself"):
        parent.inherit(parent)
    with pytest.raises(ValueError, match="inherit itself"):
        parent.inherit(child)


def test_a_manager_cannot_share_itself() -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="share itself"):
        manager.share(manager)


def test_registered_lists_only_the_managers_own_hooks() -> None:
    parent, child = HookManager(), HookManager()
    recorder(parent, "parent", [])
    own = recorder(child, "child", [])
    child.inherit(parent)

    assert child.registered(EV) == [own]


def test_describe_lists_the_resolved_chain_with_each_hooks_source() -> None:
    parent, child, shared = HookManager(), HookManager(), HookManager()
    p = recorder(parent, "parent", [])
    s = recorder(shared, "shared", [])
    c = recorder(child, "child", [])
    child.inherit(parent)
    child.share(shared)

    infos = child.describe(EV)

    assert [(i.hook_id, i.source, i.order) for i in infos] == [
        (c, "code", 0),
        (p, "inherited", 1),
        (s, "shared", 2),
    ]


async def test_an_inherited_hooks_error_reaches_its_owners_listeners_too() -> None:
    parent, child = HookManager(), HookManager()
    parent_seen: list[HookErrorInfo] = []
    child_seen: list[HookErrorInfo] = []
    parent.on_error(parent_seen.append)
    child.on_error(child_seen.append)

    @parent.on(EV)
    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("boom")

    child.inherit(parent)

    await child.dispatch(EV, process_id="c")

    assert [i.process_id for i in child_seen] == ["c"]
    assert [i.process_id for i in parent_seen] == ["c"]


async def test_the_inherited_managers_default_timeout_bounds_its_own_hooks() -> None:
    parent, child = HookManager(default_timeout=0.05), HookManager()

    @parent.on(EV)
    async def slow(ctx: HookContext) -> None:
        await asyncio.sleep(10)

    child.inherit(parent)

    result = await child.dispatch(EV, process_id="c")

    assert len(result.errors) == 1
