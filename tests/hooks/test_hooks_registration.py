"""Registering, listing and removing hooks on a HookManager."""

from __future__ import annotations

import inspect
import re

import pytest

from tether import HookContext, HookEvent, HookManager

EV = HookEvent.SESSION_START
ALL_VALUES = sorted(e.value for e in HookEvent)


async def noop(ctx: HookContext) -> None:
    return None


def test_register_returns_a_hook_id_that_registered_lists() -> None:
    manager = HookManager()

    hook_id = manager.register(EV, noop)

    assert isinstance(hook_id, str)
    assert manager.registered(EV) == [hook_id]
    assert hook_id in manager
    assert len(manager) == 1


def test_each_registration_gets_its_own_id() -> None:
    manager = HookManager()

    first = manager.register(EV, noop)
    second = manager.register(EV, noop)

    assert first != second
    assert manager.registered(EV) == [first, second]


def test_an_event_value_string_is_accepted_like_the_member() -> None:
    manager = HookManager()

    hook_id = manager.register("session_start", noop)

    assert manager.registered(EV) == [hook_id]
    assert manager.registered("session_start") == [hook_id]


async def test_the_on_decorator_registers_and_returns_the_function_unchanged() -> None:
    manager = HookManager()

    @manager.on(EV)
    async def started(ctx: HookContext) -> str:
        return "ran"

    assert inspect.iscoroutinefunction(started)
    assert await started(HookContext(EV)) == "ran"
    assert len(manager.registered(EV)) == 1


def test_an_unknown_event_raises_value_error_listing_the_valid_values() -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="session_strat") as info:
        manager.register("session_strat", noop)

    message = str(info.value)
    for value in ALL_VALUES:
        assert value in message


def test_the_on_decorator_rejects_an_unknown_event_too() -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="valid events are"):
        manager.on("sesion_start")(noop)


def test_a_sync_function_raises_type_error_at_registration() -> None:
    manager = HookManager()

    def sync_hook(ctx: HookContext) -> None:
        return None

    with pytest.raises(TypeError, match="sync_hook"):
        manager.register(EV, sync_hook)
    assert manager.registered(EV) == []


def test_a_sync_callable_object_raises_type_error_at_registration() -> None:
    class SyncHook:
        def __call__(self, ctx: HookContext) -> None:
            return None

    with pytest.raises(TypeError, match="async"):
        HookManager().register(EV, SyncHook())


def test_a_non_callable_raises_type_error() -> None:
    with pytest.raises(TypeError, match="callable"):
        HookManager().register(EV, "not a function")  # type: ignore[arg-type]


async def test_a_callable_object_with_an_async_call_is_accepted_and_runs() -> None:
    class Counter:
        def __init__(self) -> None:
            self.calls = 0

        async def __call__(self, ctx: HookContext) -> None:
            self.calls += 1

    counter = Counter()
    manager = HookManager()
    manager.register(EV, counter)

    result = await manager.dispatch(EV)

    assert result.fired == 1
    assert counter.calls == 1


@pytest.mark.parametrize("timeout", [0, -1, 3600.5, 1e9])
def test_a_timeout_outside_zero_to_3600_seconds_is_rejected(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        HookManager().register(EV, noop, timeout=timeout)


@pytest.mark.parametrize("timeout", [0, -5, 3601])
def test_a_default_timeout_outside_zero_to_3600_seconds_is_rejected(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        HookManager(default_timeout=timeout)


def test_a_timeout_of_3600_seconds_is_the_largest_accepted() -> None:
    manager = HookManager(default_timeout=3600)

    manager.register(EV, noop, timeout=3600)

    assert manager.describe(EV)[0].timeout == 3600


def test_a_timeout_that_is_not_a_number_raises_type_error() -> None:
    with pytest.raises(TypeError, match="timeout"):
        HookManager().register(EV, noop, timeout="5")  # type: ignore[arg-type]


def test_a_priority_that_is_not_an_int_raises_type_error() -> None:
    with pytest.raises(TypeError, match="priority"):
        HookManager().register(EV, noop, priority=1.5)  # type: ignore[arg-type]


def test_remove_and_remove_by_tag_are_coroutine_functions() -> None:
    assert inspect.iscoroutinefunction(HookManager.remove)
    assert inspect.iscoroutinefunction(HookManager.remove_by_tag)


async def test_remove_returns_true_once_and_then_false() -> None:
    manager = HookManager()
    hook_id = manager.register(EV, noop)

    assert await manager.remove(hook_id) is True
    assert await manager.remove(hook_id) is False
    assert manager.registered(EV) == []


async def test_remove_of_an_unknown_id_returns_false() -> None:
    assert await HookManager().remove("hook-does-not-exist") is False


async def test_remove_by_tag_removes_every_hook_with_the_tag_and_returns_the_count() -> None:
    manager = HookManager()
    manager.register(EV, noop, tag="ops")
    manager.register(HookEvent.SESSION_END, noop, tag="ops")
    keep = manager.register(EV, noop, tag="audit")

    assert await manager.remove_by_tag("ops") == 2
    assert await manager.remove_by_tag("ops") == 0
    assert manager.registered() == [keep]


def test_registered_without_an_event_lists_every_hook() -> None:
    manager = HookManager()
    a = manager.register(EV, noop)
    b = manager.register(HookEvent.TASK_CREATED, noop)

    assert sorted(manager.registered()) == sorted([a, b])


def test_registered_of_an_event_without_hooks_is_empty() -> None:
    manager = HookManager()
    manager.register(EV, noop)

    assert manager.registered(HookEvent.TASK_COMPLETED) == []


def test_clear_removes_everything() -> None:
    manager = HookManager()
    manager.register(EV, noop)
    manager.register(HookEvent.SESSION_END, noop)

    manager.clear()

    assert manager.registered() == []
    assert len(manager) == 0


def test_clear_of_one_event_keeps_the_others() -> None:
    manager = HookManager()
    manager.register(EV, noop)
    end = manager.register(HookEvent.SESSION_END, noop)

    manager.clear(EV)

    assert manager.registered() == [end]


def test_registered_lists_hooks_in_run_order() -> None:
    manager = HookManager()
    low = manager.register(EV, noop, priority=-5)
    first_tie = manager.register(EV, noop)
    high = manager.register(EV, noop, priority=10)
    second_tie = manager.register(EV, noop)

    assert manager.registered(EV) == [high, first_tie, second_tie, low]


async def test_hooks_run_by_priority_highest_first() -> None:
    manager = HookManager()
    order: list[int] = []

    def make(p: int) -> None:
        async def hook(ctx: HookContext) -> None:
            order.append(p)

        manager.register(EV, hook, priority=p)

    for p in (0, 10, -3, 5):
        make(p)

    await manager.dispatch(EV)

    assert order == [10, 5, 0, -3]


async def test_hooks_of_equal_priority_run_in_registration_order() -> None:
    manager = HookManager()
    order: list[str] = []

    def make(name: str) -> None:
        async def hook(ctx: HookContext) -> None:
            order.append(name)

        manager.register(EV, hook, priority=1)

    for name in ("a", "b", "c", "d"):
        make(name)

    await manager.dispatch(EV)

    assert order == ["a", "b", "c", "d"]


def test_remove_owner_removes_every_hook_of_that_owner_without_awaiting() -> None:
    manager = HookManager()
    owner, other = object(), object()
    manager.register(EV, noop, owner=owner)
    manager.register(HookEvent.TASK_CREATED, noop, owner=owner)
    keep = manager.register(EV, noop, owner=other)

    removed = manager.remove_owner(owner)

    assert removed == 2
    assert manager.registered() == [keep]


async def test_remove_owner_can_be_awaited() -> None:
    manager = HookManager()
    owner = object()
    manager.register(EV, noop, owner=owner)
    manager.register(EV, noop, owner=owner)

    assert await manager.remove_owner(owner) == 2
    assert await manager.remove_owner(owner) == 0
    assert manager.registered() == []


def test_the_manager_repr_names_the_public_class() -> None:
    manager = HookManager(default_timeout=30)
    manager.register(EV, noop)

    assert re.fullmatch(r"HookManager\(hooks=1, default_timeout=30\)", repr(manager))
    assert type(manager).__module__ == "tether"


def test_listens_says_whether_a_dispatch_would_find_own_inherited_or_shared_hooks() -> None:
    from tether import HookEvent, HookManager

    async def noop(ctx: HookContext) -> None:
        return None

    own, parent, shared = HookManager(), HookManager(), HookManager()
    own.inherit(parent)
    own.share(shared)
    assert not own.listens(HookEvent.PRE_MODEL_CALL)
    parent.register(HookEvent.PRE_MODEL_CALL, noop)
    shared.register(HookEvent.POST_MODEL_CALL, noop)
    own.register(HookEvent.TASK_CREATED, noop)
    assert own.listens(HookEvent.PRE_MODEL_CALL)
    assert own.listens("post_model_call")
    assert own.listens(HookEvent.TASK_CREATED)
    assert not own.listens(HookEvent.PRE_TOOL_USE)
    parent.clear(HookEvent.PRE_MODEL_CALL)
    assert not own.listens(HookEvent.PRE_MODEL_CALL)
