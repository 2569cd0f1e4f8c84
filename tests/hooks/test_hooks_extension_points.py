"""Extension points: named call sites whose handlers' results the caller collects."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _cancellation_support import sleep_until_cancelled

from tether import HookErrorInfo, HookManager

NAME = "ticket.classify"


async def test_call_returns_every_handlers_result_in_priority_order() -> None:
    manager = HookManager()

    async def low(text: str) -> str:
        return f"low:{text}"

    def high(text: str) -> str:
        return f"high:{text}"

    async def middle(text: str) -> str:
        await asyncio.sleep(0)
        return f"middle:{text}"

    manager.register(NAME, low, priority=-1)
    manager.register(NAME, high, priority=5)
    manager.register(NAME, middle)

    assert await manager.call(NAME, text="t") == ["high:t", "middle:t", "low:t"]


async def test_call_with_no_handlers_returns_an_empty_list() -> None:
    assert await HookManager().call("nobody.listens", x=1) == []


async def test_a_failed_handlers_slot_is_none_and_listeners_are_told() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)
    boom = ValueError("bad ticket")

    def first(**kwargs: Any) -> str:
        return "a"

    def broken(**kwargs: Any) -> str:
        raise boom

    def last(**kwargs: Any) -> str:
        return "c"

    manager.register(NAME, first, priority=3)
    broken_id = manager.register(NAME, broken, priority=2)
    manager.register(NAME, last, priority=1)

    assert await manager.call(NAME, ticket=1) == ["a", None, "c"]
    assert [(i.event, i.hook_id, i.error) for i in infos] == [(NAME, broken_id, boom)]


async def test_firstresult_returns_the_first_non_none_result_and_stops() -> None:
    manager = HookManager()
    ran: list[str] = []

    def none(**kwargs: Any) -> None:
        ran.append("none")

    async def found(**kwargs: Any) -> str:
        ran.append("found")
        return "billing"

    def never(**kwargs: Any) -> str:
        ran.append("never")
        return "other"

    manager.register(NAME, none, priority=3)
    manager.register(NAME, found, priority=2)
    manager.register(NAME, never, priority=1)

    assert await manager.call(NAME, firstresult=True) == "billing"
    assert ran == ["none", "found"]


async def test_firstresult_without_a_non_none_result_returns_none() -> None:
    manager = HookManager()

    def none(**kwargs: Any) -> None:
        return None

    manager.register(NAME, none)

    assert await manager.call(NAME, firstresult=True) is None
    assert await HookManager().call(NAME, firstresult=True) is None


async def test_a_slow_async_handler_is_bounded_by_the_default_timeout() -> None:
    manager = HookManager(default_timeout=0.05)
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)

    async def slow(**kwargs: Any) -> str:
        await asyncio.sleep(10)
        return "late"

    manager.register(NAME, slow)

    assert await manager.call(NAME) == [None]
    assert [type(i.error).__name__ for i in infos] == ["HookTimeoutError"]


async def test_call_of_a_lifecycle_event_name_raises_value_error() -> None:
    with pytest.raises(ValueError, match="dispatch"):
        await HookManager().call("session_start")


async def test_call_later_fires_after_the_delay() -> None:
    manager = HookManager()
    fired = asyncio.Event()
    seen: list[int] = []

    async def handler(n: int) -> None:
        seen.append(n)
        fired.set()

    manager.register(NAME, handler)

    assert manager.call_later(0.1, NAME, n=7) is None  # type: ignore[func-returns-value]
    assert seen == []
    await asyncio.sleep(0)
    assert seen == []

    await asyncio.wait_for(fired.wait(), timeout=5)
    assert seen == [7]


@pytest.mark.parametrize("delay", [-0.001, -1])
async def test_call_later_with_a_negative_delay_raises_value_error(delay: float) -> None:
    with pytest.raises(ValueError, match="delay"):
        HookManager().call_later(delay, NAME)


async def test_call_later_of_a_lifecycle_event_raises_value_error() -> None:
    with pytest.raises(ValueError, match="dispatch"):
        HookManager().call_later(0, "task_created")


async def test_a_handler_can_reschedule_itself_with_call_later() -> None:
    manager = HookManager()
    ticks: list[int] = []
    done = asyncio.Event()

    def tick(n: int) -> None:
        ticks.append(n)
        if n < 3:
            manager.call_later(0, NAME, n=n + 1)
        else:
            done.set()

    manager.register(NAME, tick)
    manager.call_later(0, NAME, n=1)

    await asyncio.wait_for(done.wait(), timeout=5)
    assert ticks == [1, 2, 3]


async def test_aclose_cancels_a_deferred_call_that_has_not_fired() -> None:
    manager = HookManager()
    seen: list[str] = []

    def handler() -> None:
        seen.append("fired")

    manager.register(NAME, handler)
    manager.call_later(0.05, NAME)

    await manager.aclose()
    await asyncio.sleep(0.1)

    assert seen == []


async def test_aclose_cancels_a_deferred_call_that_is_running() -> None:
    manager = HookManager()
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def handler() -> None:
        await sleep_until_cancelled(started, cancelled)

    manager.register(NAME, handler)
    manager.call_later(0, NAME)
    await asyncio.wait_for(started.wait(), timeout=5)

    await manager.aclose()

    assert cancelled == [True]


def test_an_extension_point_name_must_be_dotted() -> None:
    manager = HookManager()

    def handler() -> None:
        return None

    with pytest.raises(ValueError, match="valid events are"):
        manager.register("classify", handler)


async def test_a_disabled_handler_is_skipped() -> None:
    manager = HookManager()

    def handler() -> str:
        return "ran"

    hook_id = manager.register(NAME, handler)
    manager.set_enabled(hook_id, False)

    assert await manager.call(NAME) == []


async def test_a_handlers_own_cancelled_error_leaves_a_none_slot() -> None:
    manager = HookManager()
    infos: list[HookErrorInfo] = []
    manager.on_error(infos.append)

    async def waits_on_a_cancelled_future() -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.cancel)
        return await future

    def after() -> str:
        return "after"

    manager.register(NAME, waits_on_a_cancelled_future, priority=1)
    manager.register(NAME, after)

    assert await manager.call(NAME) == [None, "after"]
    assert [type(i.error) for i in infos] == [asyncio.CancelledError]


@pytest.mark.parametrize("name", ["user_prompt.submit", "session.start", "Task.Created"])
def test_a_dotted_name_that_spells_an_event_is_refused_not_taken_as_an_extension_point(
    name: str,
) -> None:
    """Regression: "user_prompt.submit" registered as an extension point, so a policy hook
    meant for user_prompt_submit never ran."""
    manager = HookManager()

    async def policy(ctx: object) -> None:
        return None

    with pytest.raises(ValueError, match="did you mean") as caught:
        manager.register(name, policy, fail_closed=True)
    assert "user_prompt_submit" in str(caught.value)  # the valid events are listed
    assert len(manager) == 0


def test_fail_closed_on_an_extension_point_is_refused() -> None:
    manager = HookManager()
    with pytest.raises(ValueError, match="fail_closed applies to lifecycle events"):
        manager.register("ticket.classify", lambda text: None, fail_closed=True)
