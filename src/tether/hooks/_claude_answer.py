"""What a Claude Code hook's answer does to a tether dispatch, by Claude Code's rules.

A JSON object is read on every exit code and decides; with exit 2 and no JSON, stderr is the
block's reason. The keys tether acts on, and where each lands:

* ``permissionDecision`` (PreToolUse) deny -> a block; ask / defer -> the approval gate, with
  ``permissionDecisionReason`` as ``ApprovalRequest.reason``; ``updatedInput`` -> the arguments;
* ``decision.behavior`` (PermissionRequest) allow -> approved without the handler, deny -> a
  block, ``updatedInput`` -> the arguments the tool runs with;
* ``decision: "block"`` -> a block (on Stop: the run goes on, the reason its next message);
* ``additionalContext`` / SessionStart stdout -> the model's context;
* ``updatedMCPToolOutput`` / ``updatedToolOutput`` -> the result the model reads;
* ``continue: false`` -> the run ends (``stopReason`` for the operator, not the model);
* ``systemMessage`` -> shown to the operator.

What is for the operator (``systemMessage``, ``stopReason``) is logged (warning level, the hook
named) and kept on the hook's run (``ctx.notify``: HookRun.notice), which the history, the
CLI's live view and the dashboard's feed show.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from ._context import HookContext
from ._errors import CommandHookError, HookBlocked
from ._events import HookEvent

__all__ = ["add_context", "apply_answer", "block"]

logger = logging.getLogger("tether.hooks")

#: Data keys the agent loop and the process read back (see agent._tool_hooks, the loop).
REQUIRE_APPROVAL: Final = "require_approval"
APPROVAL_REASON: Final = "approval_reason"
ADDITIONAL_CONTEXT: Final = "additional_context"
APPROVED: Final = "approved"
UPDATED_ARGUMENTS: Final = "updated_arguments"
STOP_RUN: Final = "stop_run"

#: Where text for the model goes, per event (the data key the process reads back).
_CONTEXT_KEY: Final = {
    HookEvent.USER_PROMPT_SUBMIT: "prompt",
    HookEvent.POST_TOOL_USE: "result",
    HookEvent.PRE_TOOL_USE: ADDITIONAL_CONTEXT,
    HookEvent.SESSION_START: ADDITIONAL_CONTEXT,
}


def block(ctx: HookContext, reason: str) -> None:
    """A block: of the action, or, after a call that already ran, feedback to the model."""
    if ctx.event is HookEvent.POST_TOOL_USE:
        add_context(ctx, reason)
        return
    raise HookBlocked(reason)


def add_context(ctx: HookContext, text: str) -> None:
    """Text for the model: after the prompt, after the tool's result, for the loop to add
    after the result (pre_tool_use), or to the session's instructions (session_start);
    elsewhere there is no model to read it."""
    key = _CONTEXT_KEY.get(ctx.event)
    if not text:
        return
    if key is None:
        logger.debug("context of a Claude Code hook for %s ignored", ctx.event.value)
        return
    before = ctx.data.get(key)
    ctx.set(key, f"{before}\n\n{text}" if isinstance(before, str) and before else text)


def _reason(answer: dict[str, Any], specific: dict[str, Any]) -> str | None:
    for value in (
        specific.get("permissionDecisionReason"),
        answer.get("reason"),
        answer.get("stopReason"),
    ):
        if isinstance(value, str) and value:
            return value
    return None


def apply_answer(
    ctx: HookContext, answer: dict[str, Any], *, exit_code: int = 0, shown: str = "hook"
) -> None:
    """Apply a Claude Code hook's JSON answer to the dispatch (see the module docstring);
    ``exit_code`` 2 makes it a block whatever it says, with its reason."""
    specific = answer.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        specific = {}
    message = answer.get("systemMessage")
    if isinstance(message, str) and message:
        logger.warning("Claude Code hook %s says: %s", shown, message)
        ctx.notify(message)
    if answer.get("continue") is False:
        _stop(ctx, str(answer.get("stopReason") or "stopped by a Claude Code hook"), shown)
        return
    if exit_code == 2:
        block(ctx, _reason(answer, specific) or "blocked by a Claude Code hook (exit 2)")
        return
    if ctx.event is HookEvent.PRE_TOOL_USE:
        _pre_tool_use(ctx, answer, specific)
    elif ctx.event is HookEvent.PERMISSION_REQUEST:
        _permission_request(ctx, specific)
    if answer.get("decision") == "block":
        block(ctx, str(answer.get("reason") or "blocked by a Claude Code hook"))
    if ctx.event is HookEvent.POST_TOOL_USE:
        for key in ("updatedMCPToolOutput", "updatedToolOutput"):
            if key in specific:
                output = specific[key]
                text = output if isinstance(output, str) else json.dumps(output, default=str)
                ctx.set("result", text)
    extra = specific.get("additionalContext")
    if isinstance(extra, str):
        add_context(ctx, extra)


def _stop(ctx: HookContext, reason: str, shown: str) -> None:
    """``continue: false``: the run ends; the reason is the operator's, not the model's. On
    agent_stop (Stop) the run was ending anyway: nothing to block."""
    logger.warning("Claude Code hook %s stopped the run: %s", shown, reason)
    ctx.notify(f"stopped the run: {reason}")
    if ctx.event is HookEvent.AGENT_STOP:
        return
    ctx.set(STOP_RUN, reason)
    if ctx.event is not HookEvent.POST_TOOL_USE:
        raise HookBlocked(reason)


def _pre_tool_use(ctx: HookContext, answer: dict[str, Any], specific: dict[str, Any]) -> None:
    decision = specific.get("permissionDecision")
    reason = _reason(answer, specific)
    legacy = answer.get("decision")  # Claude Code's older "approve" / "block"
    if decision is None and legacy in ("approve", "block"):
        decision = "allow" if legacy == "approve" else "deny"
    if decision == "deny":
        raise HookBlocked(str(reason or "denied by a Claude Code hook"))
    if decision in ("ask", "defer"):
        ctx.set(REQUIRE_APPROVAL, True)
        if reason:
            ctx.set(APPROVAL_REASON, reason)
    elif decision not in (None, "allow"):
        raise CommandHookError(
            f"permissionDecision {decision!r} is not one of 'allow', 'deny', 'ask' or 'defer'"
        )
    updated = specific.get("updatedInput")
    if updated is not None:
        ctx.set("arguments", updated)  # checked against the tool's schema (ToolCallContext)


def _permission_request(ctx: HookContext, specific: dict[str, Any]) -> None:
    decision = specific.get("decision")
    if not isinstance(decision, dict):
        return
    behavior = decision.get("behavior")
    if behavior == "deny":
        raise HookBlocked(str(decision.get("message") or "denied by a Claude Code hook"))
    if behavior == "allow":
        updated = decision.get("updatedInput")
        if updated is not None:
            if not isinstance(updated, dict):
                raise CommandHookError(f"updatedInput must be an object, got {updated!r}")
            ctx.set(UPDATED_ARGUMENTS, updated)
        ctx.set(APPROVED, True)
    elif behavior is not None:
        raise CommandHookError(f"decision.behavior {behavior!r} is not one of 'allow', 'deny'")
