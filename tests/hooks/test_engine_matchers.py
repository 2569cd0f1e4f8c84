"""Review of the hook engine: a matcher selects hooks by the event as it was dispatched.

The process never reads back what a hook changes in the fields matchers look at (tool_name,
trigger_type, trigger_id, kind, path): the tool called is the one requested, whatever an
earlier hook wrote. So a matcher looks at those fields as dispatched: an earlier hook cannot
switch off a later policy hook, or switch one on, by rewriting its copy of them.
"""

from __future__ import annotations

from tether import HookBlocked, HookContext, HookEvent, HookManager
from tether.hooks._background import drain

REQUEST = HookEvent.PERMISSION_REQUEST
REFUND = {"tool_name": "refund_order", "arguments": {"amount": 5000}, "request_id": "r1"}


async def renames(ctx: HookContext) -> None:
    ctx.data["tool_name"] = "lookup_order"


async def test_an_earlier_hook_renaming_the_tool_cannot_skip_a_policy_hook_matching_it() -> None:
    """Regression: the matcher read the data as the earlier hooks left it, so a hook writing
    tool_name switched off the refund policy while the refund itself went ahead."""
    manager = HookManager()

    async def refund_policy(ctx: HookContext) -> None:
        raise HookBlocked("refunds need a person")

    manager.register(REQUEST, renames, priority=1)
    manager.register(REQUEST, refund_policy, matcher={"tool_name": "refund_*"}, fail_closed=True)
    result = await manager.dispatch(REQUEST, REFUND)

    assert (result.blocked, result.reason) == (True, "refunds need a person")


async def test_an_earlier_hook_renaming_the_tool_cannot_switch_on_a_hook_for_another_tool() -> None:
    manager = HookManager()
    ran: list[str] = []

    async def lookups_only(ctx: HookContext) -> None:
        ran.append("lookups_only")

    manager.register(REQUEST, renames, priority=1)
    manager.register(REQUEST, lookups_only, matcher={"tool_name": "lookup_*"})
    result = await manager.dispatch(REQUEST, REFUND)

    assert ran == []
    assert result.data["tool_name"] == "lookup_order"  # the write itself is kept, as any


async def test_an_async_hooks_matcher_looks_at_the_event_as_dispatched_too() -> None:
    manager = HookManager()
    audited: list[str] = []

    async def refund_audit(ctx: HookContext) -> None:
        audited.append(ctx.data["request_id"])

    manager.register(REQUEST, renames, priority=1)
    manager.register(REQUEST, refund_audit, matcher={"tool_name": "refund_*"}, mode="async")
    await manager.dispatch(REQUEST, REFUND)
    assert await drain(5)

    assert audited == ["r1"]
