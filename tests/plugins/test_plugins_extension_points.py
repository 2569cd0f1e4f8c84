"""Extension points, sentence by sentence of issue 6 and reference 003: handlers run in the
caller's task, a call's chain is a snapshot, deferred calls are checked at call time and follow
their handlers' lifetime, and a failed handler is isolated (its slot None, its error logged and
reported)."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import pytest

from tether import HookErrorInfo, HookManager, Plugin, PluginContext, implements
from tether.hooks import register_plugin

NAME = "ticket.classify"


# -- how handlers run ----------------------------------------------------------------------------


async def test_handlers_run_in_the_callers_own_task() -> None:
    manager = HookManager()
    tasks: list[asyncio.Task[Any] | None] = []

    def quick(**kwargs: Any) -> str:
        tasks.append(asyncio.current_task())
        return "quick"

    async def suspending(**kwargs: Any) -> str:
        await asyncio.sleep(0)
        tasks.append(asyncio.current_task())
        return "suspending"

    manager.register(NAME, quick, priority=1)
    manager.register(NAME, suspending)

    assert await manager.call(NAME) == ["quick", "suspending"]
    assert tasks == [asyncio.current_task(), asyncio.current_task()]


async def test_handlers_run_one_after_another_never_overlapping() -> None:
    manager = HookManager()
    events: list[str] = []

    def make(label: str) -> Any:
        async def handler(**kwargs: Any) -> str:
            events.append(f"{label} start")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            events.append(f"{label} end")
            return label

        return handler

    manager.register(NAME, make("a"), priority=2)
    manager.register(NAME, make("b"), priority=1)
    manager.register(NAME, make("c"))

    assert await manager.call(NAME) == ["a", "b", "c"]
    assert events == ["a start", "a end", "b start", "b end", "c start", "c end"]


async def test_priority_orders_handlers_and_never_filters_one_out() -> None:
    manager = HookManager()
    for priority in (-1000, 0, 1000, -5, 5):
        manager.register(NAME, lambda p=priority, **kw: p, priority=priority)

    assert await manager.call(NAME) == [1000, 5, 0, -5, -1000]


async def test_equal_priorities_run_in_registration_order() -> None:
    manager = HookManager()
    for label in ("first", "second", "third"):
        manager.register(NAME, lambda label=label, **kw: label)

    assert await manager.call(NAME) == ["first", "second", "third"]


async def test_arguments_reach_every_handler_as_keywords() -> None:
    manager = HookManager()
    manager.register(NAME, lambda text, lang: f"{lang}:{text}", priority=1)
    manager.register(NAME, lambda **kwargs: sorted(kwargs))

    assert await manager.call(NAME, text="refund", lang="en") == [
        "en:refund",
        ["lang", "text"],
    ]


# -- the snapshot --------------------------------------------------------------------------------


async def test_a_handler_registered_during_a_call_runs_from_the_next_call() -> None:
    manager = HookManager()

    def late(**kwargs: Any) -> str:
        return "late"

    def registers(**kwargs: Any) -> str:
        if len(manager.registered(NAME)) == 1:
            manager.register(NAME, late, priority=-1)
        return "first"

    manager.register(NAME, registers)

    assert await manager.call(NAME) == ["first"]
    assert await manager.call(NAME) == ["first", "late"]


async def test_a_handler_removed_during_a_call_still_runs_in_that_call() -> None:
    manager = HookManager()
    ids: dict[str, str] = {}

    async def removes(**kwargs: Any) -> str:
        await manager.remove(ids["doomed"])
        return "remover"

    ids["remover"] = manager.register(NAME, removes, priority=1)
    ids["doomed"] = manager.register(NAME, lambda **kw: "doomed")

    assert await manager.call(NAME) == ["remover", "doomed"]
    assert await manager.call(NAME) == ["remover"]


async def test_registering_and_removing_between_calls_changes_the_next_call() -> None:
    manager = HookManager()
    manager.register(NAME, lambda **kw: "a", priority=1)
    assert await manager.call(NAME) == ["a"]

    b = manager.register(NAME, lambda **kw: "b", priority=2)
    assert await manager.call(NAME) == ["b", "a"]

    assert await manager.remove(b) is True
    assert await manager.call(NAME) == ["a"]


# -- firstresult ---------------------------------------------------------------------------------


async def test_firstresult_passes_over_a_failed_handler_and_reports_its_error() -> None:
    manager = HookManager()
    errors: list[HookErrorInfo] = []
    manager.on_error(errors.append)
    ran: list[str] = []

    def broken(**kwargs: Any) -> str:
        ran.append("broken")
        raise LookupError("no table")

    def answers(**kwargs: Any) -> str:
        ran.append("answers")
        return "billing"

    def never(**kwargs: Any) -> str:
        ran.append("never")
        return "general"

    manager.register(NAME, broken, priority=3)
    manager.register(NAME, answers, priority=2)
    manager.register(NAME, never, priority=1)

    assert await manager.call(NAME, firstresult=True) == "billing"
    assert ran == ["broken", "answers"]
    [info] = errors
    assert isinstance(info.error, LookupError)
    assert info.event == NAME


async def test_firstresult_takes_a_falsy_result_that_is_not_none() -> None:
    manager = HookManager()
    manager.register(NAME, lambda **kw: None, priority=3)
    manager.register(NAME, lambda **kw: 0, priority=2)
    manager.register(NAME, lambda **kw: "later", priority=1)

    assert await manager.call(NAME, firstresult=True) == 0


async def test_firstresult_with_no_handler_returns_none() -> None:
    assert await HookManager().call(NAME, firstresult=True) is None


# -- error isolation -----------------------------------------------------------------------------


async def test_a_failed_handler_is_logged_with_its_name_and_the_point(
    caplog: pytest.LogCaptureFixture,
) -> None:
    manager = HookManager()

    def broken(**kwargs: Any) -> str:
        raise RuntimeError("classifier offline")

    manager.register(NAME, broken, name="classifier")
    manager.register(NAME, lambda **kw: "general", priority=-1)

    with caplog.at_level(logging.WARNING):
        assert await manager.call(NAME) == [None, "general"]

    [record] = [r for r in caplog.records if "classifier offline" in r.getMessage()]
    assert "classifier" in record.getMessage()
    assert NAME in record.getMessage()
    assert record.exc_info is not None


async def test_every_failed_handler_keeps_its_own_none_slot() -> None:
    manager = HookManager()
    errors: list[HookErrorInfo] = []
    manager.on_error(errors.append)

    def broken(**kwargs: Any) -> str:
        raise ValueError("bad")

    async def broken_async(**kwargs: Any) -> str:
        await asyncio.sleep(0)
        raise KeyError("missing")

    manager.register(NAME, broken, priority=3)
    manager.register(NAME, lambda **kw: "ok", priority=2)
    manager.register(NAME, broken_async, priority=1)

    assert await manager.call(NAME) == [None, "ok", None]
    assert [type(i.error) for i in errors] == [ValueError, KeyError]


# -- deferred calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("delay", [math.inf, math.nan, -math.inf, True, "1", None])
async def test_call_later_refuses_a_delay_that_is_not_a_finite_number_at_call_time(
    delay: Any,
) -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="delay must be a number of seconds >= 0"):
        manager.call_later(delay, NAME)
    await manager.aclose()


async def test_call_later_with_a_zero_delay_is_accepted_and_fires() -> None:
    manager = HookManager()
    fired = asyncio.Event()
    manager.register(NAME, lambda **kw: fired.set())

    assert manager.call_later(0, NAME) is None  # type: ignore[func-returns-value]
    assert not fired.is_set()  # never in the caller's own stack: it is deferred

    await asyncio.wait_for(fired.wait(), timeout=5)
    await manager.aclose()


async def test_call_later_of_a_name_that_is_not_dotted_is_a_value_error_at_call_time() -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="nodots"):
        manager.call_later(0, "nodots")


async def test_a_failing_deferred_call_is_reported_to_the_error_listeners_only() -> None:
    manager = HookManager()
    reported = asyncio.Event()
    errors: list[HookErrorInfo] = []

    def listener(info: HookErrorInfo) -> None:
        errors.append(info)
        reported.set()

    manager.on_error(listener)

    def broken(**kwargs: Any) -> None:
        raise RuntimeError(f"deferred {kwargs['n']}")

    manager.register(NAME, broken)
    manager.call_later(0, NAME, n=1)

    await asyncio.wait_for(reported.wait(), timeout=5)
    assert [str(i.error) for i in errors] == ["deferred 1"]
    await manager.aclose()


async def test_a_deferred_call_runs_the_handlers_registered_when_it_fires() -> None:
    manager = HookManager()
    fired = asyncio.Event()
    seen: list[str] = []

    first = manager.register(NAME, lambda **kw: seen.append("removed before firing"))
    manager.call_later(0.01, NAME)
    await manager.remove(first)
    manager.register(NAME, lambda **kw: (seen.append("registered before firing"), fired.set()))

    await asyncio.wait_for(fired.wait(), timeout=5)
    assert seen == ["registered before firing"]
    await manager.aclose()


class Counter(Plugin):
    name = "counter"

    def __init__(self) -> None:
        self.seen: list[int] = []

    @implements(NAME)
    def count(self, n: int) -> int:
        self.seen.append(n)
        return n


async def test_a_deferred_call_never_reaches_a_plugin_removed_before_it_fires() -> None:
    manager = HookManager()
    counter = Counter()
    register_plugin(manager, counter)
    fired = asyncio.Event()
    manager.register(NAME, lambda n: fired.set(), priority=-1)

    manager.call_later(0.01, NAME, n=1)
    assert manager.remove_owner(counter) == 1

    await asyncio.wait_for(fired.wait(), timeout=5)
    assert counter.seen == []
    await manager.aclose()


# -- owner-bound registrations -------------------------------------------------------------------


async def test_removing_a_plugin_goes_by_identity_not_equality() -> None:
    class Same(Plugin):
        """Every instance compares equal: removal must still go by identity."""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Same)

        __hash__ = Plugin.__hash__

        @implements(NAME)
        def answer(self) -> str:
            return self.name

    class One(Same):
        name = "one"

    class Two(Same):
        name = "two"

    manager = HookManager()
    one, two = One(), Two()
    register_plugin(manager, one)
    register_plugin(manager, two)
    assert one == two

    assert manager.remove_owner(one) == 1
    assert await manager.call(NAME) == ["two"]


async def test_a_plugin_lifecycle_method_and_extension_point_share_one_owner() -> None:
    class Both(Plugin):
        name = "both"

        async def on_task_created(self, ctx: PluginContext) -> None:
            pass

        @implements(NAME)
        def answer(self) -> str:
            return "both"

    manager = HookManager()
    both = Both()
    register_plugin(manager, both)

    assert {i.owner for i in manager.describe()} == {"both"}
    assert manager.remove_owner(both) == 2
    assert len(manager) == 0


# -- names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["classify", ".ticket.classify", "ticket.classify.", "a b.c"])
def test_a_name_that_is_neither_an_event_nor_dotted_says_what_a_point_name_is(name: str) -> None:
    manager = HookManager()

    with pytest.raises(ValueError, match="an extension point name is dotted") as caught:
        manager.register(name, lambda: None)

    message = str(caught.value)
    assert f"unknown hook event {name!r}; valid events are: " in message
    assert "an extension point name is dotted" in message
    assert "'ticket.classify'" in message
    assert len(manager) == 0


async def test_extension_points_and_events_never_share_handlers() -> None:
    manager = HookManager()
    manager.register("task.completed.audit", lambda: "point")

    result = await manager.dispatch("task_completed", {})

    assert result.fired == 0
    assert await manager.call("task.completed.audit") == ["point"]
