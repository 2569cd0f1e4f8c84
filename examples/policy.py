"""The Python side of the triage agent: a tool, its approval handler, and a policy hook.

A manifest holds what can be written down as data; functions are registered in code:

* ``issue_refund`` is a tool the agent may call. The manifest lists it under ``approval:``,
  so every call is reviewed before it runs.
* ``refund_limit`` is a ``permission_request`` hook: it runs before the reviewer is asked and
  refuses refunds above a limit outright (``HookBlocked``). It is registered fail_closed, so a
  bug in it refuses the refund instead of letting it through.
* ``reviewer`` is the approval handler: here it approves what the policy let through; in
  production it would ask a person (a chat message, a queue, a UI).
"""

from __future__ import annotations

from tether import (
    ApprovalDecision,
    ApprovalRequest,
    HookBlocked,
    HookContext,
    HookEvent,
    HookManager,
)

REFUND_LIMIT_EUR = 100

refunds_issued: list[tuple[str, float]] = []
reviews: list[str] = []


async def issue_refund(order: str, amount: float) -> str:
    """Refund ``amount`` EUR on ``order``."""
    refunds_issued.append((order, amount))
    return f"refunded {amount:g} EUR on order {order}"


async def refund_limit(ctx: HookContext) -> None:
    """permission_request: refunds above the limit need a person in finance, not the agent."""
    amount = ctx.data["arguments"].get("amount", 0)
    if isinstance(amount, int | float) and amount > REFUND_LIMIT_EUR:
        raise HookBlocked(
            f"refunds above {REFUND_LIMIT_EUR} EUR need a human in finance "
            f"(asked for {amount:g} EUR)"
        )


async def reviewer(request: ApprovalRequest) -> ApprovalDecision:
    """The approval handler: stands in for a person who approves within policy."""
    reviews.append(f"{request.tool_name}({request.arguments})")
    return ApprovalDecision(approved=True, reviewer_id="alice")


def register(hooks: HookManager) -> None:
    """Register the policy hook on ``hooks`` (a process's own manager)."""
    hooks.register(
        HookEvent.PERMISSION_REQUEST,
        refund_limit,
        fail_closed=True,
        matcher={"tool_name": "issue_refund"},
        name="policy.refund_limit",
    )
