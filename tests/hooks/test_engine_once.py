"""Review of the hook engine: a once hook runs at most once, whatever happens when it does.

The reference: "A once=True hook is removed before it runs, so it runs at most once even when
dispatches overlap." So a once hook that fails, times out or blocks is used up as well, and one
in a shared manager runs once for all the managers sharing it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from tether import HookBlocked, HookContext, HookEvent, HookManager, HookTimeoutError

CREATED = HookEvent.TASK_CREATED
TASK = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


async def fails(ctx: HookContext) -> None:
    raise RuntimeError("broken")


async def times_out(ctx: HookContext) -> None:
    await asyncio.sleep(30)


async def blocks(ctx: HookContext) -> None:
    raise HookBlocked("only the first event is refused")


@pytest.mark.parametrize(
    ("hook", "first"),
    [(fails, RuntimeError), (times_out, HookTimeoutError), (blocks, None)],
)
async def test_a_once_hook_is_used_up_whatever_its_run_ends_with(
    hook: Callable[[HookContext], Awaitable[None]], first: type[BaseException] | None
) -> None:
    manager = HookManager()
    hook_id = manager.register(CREATED, hook, once=True, timeout=0.1)

    one = await manager.dispatch(CREATED, TASK)
    two = await manager.dispatch(CREATED, TASK)

    assert [type(e) for _, e in one.errors] == ([] if first is None else [first])
    assert one.blocked is (first is None)
    assert (two.fired, two.blocked, two.errors) == (0, False, [])
    assert hook_id not in manager


async def test_a_once_hook_of_a_shared_manager_runs_once_for_all_the_managers_sharing_it() -> None:
    shared = HookManager()
    ran: list[str] = []
    gate = asyncio.Event()

    async def first_only(ctx: HookContext) -> None:
        ran.append(ctx.process_id)
        await gate.wait()

    hook_id = shared.register(CREATED, first_only, once=True)
    processes = [HookManager() for _ in range(3)]
    for manager in processes:
        manager.share(shared)

    dispatches = [
        asyncio.create_task(m.dispatch(CREATED, TASK, process_id=f"p{i}"))
        for i, m in enumerate(processes)
    ]
    await asyncio.sleep(0.05)
    gate.set()
    results = await asyncio.gather(*dispatches)

    assert len(ran) == 1
    assert sorted(r.fired for r in results) == [0, 0, 1]
    assert hook_id not in shared
