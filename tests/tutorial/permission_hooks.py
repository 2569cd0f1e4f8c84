"""Step 5: gate tool approvals with permission_request, audit refusals with a shared manager."""
import asyncio
import logging
import os

os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8781/v1"
os.environ["OPENAI_API_KEY"] = "not-a-real-key"
logging.basicConfig(level=logging.CRITICAL)

from tether.testing import FakeLLM
from tether.approval import ApprovalDecision, ApprovalPolicy
from tether import (
    AgentRuntime, ContextConfig, HookBlocked, HookConfig, HookContext, HookEvent,
    HookManager, ProcessConfig, TriggerEvent,
)

asked: list[str] = []


async def reviewer(request) -> ApprovalDecision:  # stands in for Slack, a queue, a UI
    asked.append(f"{request.tool_name}({request.arguments})")
    return ApprovalDecision(approved=True, reviewer_id="alice")


async def no_refund_limits(ctx: HookContext) -> None:
    if ctx.data["arguments"].get("key") == "refund_limit":
        raise HookBlocked("refund limits are set by finance, not by the agent")


# One manager for every process in the runtime.
shared = HookManager()


@shared.on(HookEvent.PERMISSION_DENIED)
async def audit_denials(ctx: HookContext) -> None:
    d = ctx.data
    print(f"denied in {ctx.process_id}: kind={d['kind']} tool={d['tool_name']} "
          f"decided_by={d['decided_by']} reason={d['reason']!r}")


config = ProcessConfig(
    model="openai:gpt-5-mini",
    instructions="You triage support tickets and record decisions with update_state.",
    context=ContextConfig(state_tool=True),
    approval=ApprovalPolicy(tools=["update_state"], handler=reviewer),
    hooks=[HookConfig(event="permission_request", callback=no_refund_limits, fail_closed=True)],
)


async def main() -> None:
    llm = FakeLLM()
    llm.tool_calls = [
        ("update_state", {"key": "priority", "value": "high"}),
        ("update_state", {"key": "refund_limit", "value": 5000}),
    ]
    await llm.start()
    runtime = AgentRuntime(hooks=shared)
    process = await runtime.add_process("triage", config)
    await runtime.start_all()
    for text in ("Checkout fails for all EU customers", "Customer wants a 5000 EUR refund"):
        event_id = await process.inject(TriggerEvent(trigger_id="helpdesk",
                                                     trigger_type="webhook",
                                                     payload={"ticket": text}))
        await process.outcome(event_id, timeout=30)
    print("reviewer was asked:", asked)
    print("state:", process.context.state_snapshot())
    await runtime.stop_all()
    await llm.stop()


asyncio.run(main())
