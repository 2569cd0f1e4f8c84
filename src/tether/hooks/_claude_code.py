"""Claude Code hook compatibility: run a Claude Code hook program unchanged.

A command hook declared with ``protocol="claude-code"`` gets Claude Code's input on stdin
(``session_id``, ``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``, ...) mapped from
tether's event data, and its answer is read by Claude Code's rules:

* exit 0: stdout may be a JSON object (``continue``/``stopReason``, ``decision``/``reason``,
  ``hookSpecificOutput`` with ``permissionDecision`` allow|deny|ask,
  ``permissionDecisionReason``, ``updatedInput``, ``additionalContext``,
  ``updatedMCPToolOutput``); other text is context for ``user_prompt_submit`` and ignored
  elsewhere;
* exit 2: a block, stderr its reason;
* any other exit: a non-blocking error (the hook's error; ``fail_closed`` still applies).

What each answer does to tether (a block of a ``post_tool_use``, whose call already ran, is
feedback added to the result the model reads; ``ask`` sends the call to the approval gate)
is written down in docs/tool-hooks.md. :func:`claude_code_hooks` reads the ``hooks`` block of
a Claude Code settings file or a plugin's ``hooks/hooks.json``.
"""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar, Final

from ._context import HookContext
from ._errors import CommandHookError, HookBlocked
from ._events import HookEvent
from ._shell import STDERR_IN_MESSAGE, ShellHook

if TYPE_CHECKING:
    from ._command import CommandHookConfig

__all__ = ["CLAUDE_EVENTS", "TETHER_TO_CLAUDE", "ClaudeCodeHook", "claude_input"]

logger = logging.getLogger("tether.hooks")

#: Claude Code's event names and the tether event each one is run on.
CLAUDE_EVENTS: Final[dict[str, HookEvent]] = {
    "PreToolUse": HookEvent.PRE_TOOL_USE,
    "PostToolUse": HookEvent.POST_TOOL_USE,
    "PostToolUseFailure": HookEvent.POST_TOOL_USE,
    "PermissionRequest": HookEvent.PERMISSION_REQUEST,
    "PermissionDenied": HookEvent.PERMISSION_DENIED,
    "UserPromptSubmit": HookEvent.USER_PROMPT_SUBMIT,
    "SessionStart": HookEvent.SESSION_START,
    "SessionEnd": HookEvent.SESSION_END,
    "SubagentStart": HookEvent.SUBAGENT_START,
    "SubagentStop": HookEvent.SUBAGENT_STOP,
    "PreCompact": HookEvent.PRE_COMPACT,
    "PostCompact": HookEvent.POST_COMPACT,
    "Stop": HookEvent.TASK_COMPLETED,
    "TaskCompleted": HookEvent.TASK_COMPLETED,
    "TaskCreated": HookEvent.TASK_CREATED,
    "ConfigChange": HookEvent.CONFIG_CHANGE,
    "FileChanged": HookEvent.FILE_CHANGED,
}

#: The ``hook_event_name`` a program sees for each tether event (post_tool_use: PostToolUse,
#: or PostToolUseFailure for a call that failed).
TETHER_TO_CLAUDE: Final[dict[HookEvent, str]] = {
    HookEvent.PRE_TOOL_USE: "PreToolUse",
    HookEvent.POST_TOOL_USE: "PostToolUse",
    HookEvent.PERMISSION_REQUEST: "PermissionRequest",
    HookEvent.PERMISSION_DENIED: "PermissionDenied",
    HookEvent.USER_PROMPT_SUBMIT: "UserPromptSubmit",
    HookEvent.SESSION_START: "SessionStart",
    HookEvent.SESSION_END: "SessionEnd",
    HookEvent.SUBAGENT_START: "SubagentStart",
    HookEvent.SUBAGENT_STOP: "SubagentStop",
    HookEvent.PRE_COMPACT: "PreCompact",
    HookEvent.POST_COMPACT: "PostCompact",
    HookEvent.TASK_COMPLETED: "TaskCompleted",
    HookEvent.TASK_CREATED: "TaskCreated",
    HookEvent.CONFIG_CHANGE: "ConfigChange",
    HookEvent.FILE_CHANGED: "FileChanged",
}

#: Claude Code's default timeout of a command hook, in seconds.
CLAUDE_DEFAULT_TIMEOUT: Final = 60.0
#: The block reason of a program that exited 2 with nothing on stderr.
EXIT_2_NO_REASON: Final = "blocked by a Claude Code hook (exit 2, nothing on stderr)"
#: Data keys the agent loop reads back from pre_tool_use (see agent._tool_hooks).
_REQUIRE_APPROVAL: Final = "require_approval"
_ADDITIONAL_CONTEXT: Final = "additional_context"


def _event_name(ctx: HookContext, declared: str | None) -> str:
    if declared is not None:
        return declared
    if ctx.event is HookEvent.POST_TOOL_USE and ctx.data.get("error") is not None:
        return "PostToolUseFailure"
    return TETHER_TO_CLAUDE[ctx.event]


def _tool_response(result: Any) -> Any:
    """A tool's result as Claude Code hands it over: the JSON value it holds, or the text."""
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def claude_input(ctx: HookContext, hook_event_name: str, cwd: str) -> dict[str, Any]:
    """The stdin of a Claude Code hook program for this dispatch.

    Beside Claude Code's own fields, ``tether`` holds the event and its data as tether
    dispatched them, for a program written for both.
    """
    data = ctx.data
    ev = ctx.event
    out: dict[str, Any] = {
        "session_id": str(ctx.metadata.get("process_id") or ctx.process_id),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": hook_event_name,
    }
    if ev in (HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE):
        out["tool_name"] = data.get("tool_name")
        out["tool_input"] = data.get("arguments")
        out["tool_use_id"] = data.get("call_id")
        if ev is HookEvent.POST_TOOL_USE:
            if hook_event_name == "PostToolUseFailure":
                out["error"] = data.get("error")
                out["is_interrupt"] = False
            else:
                out["tool_response"] = _tool_response(data.get("result"))
    elif ev in (HookEvent.PERMISSION_REQUEST, HookEvent.PERMISSION_DENIED):
        out["tool_name"] = data.get("tool_name")
        out["tool_input"] = data.get("arguments", {})
        if ev is HookEvent.PERMISSION_DENIED:
            out["reason"] = data.get("reason")
    elif ev is HookEvent.USER_PROMPT_SUBMIT:
        out["prompt"] = data.get("prompt")
    elif ev is HookEvent.SESSION_START:
        out["source"] = "resume" if data.get("restart") or data.get("recovered") else "startup"
    elif ev is HookEvent.SESSION_END:
        out["reason"] = "other"
    elif ev in (HookEvent.SUBAGENT_START, HookEvent.SUBAGENT_STOP):
        out["agent_id"] = data.get("process_name")
        out["agent_type"] = "process"
        if ev is HookEvent.SUBAGENT_STOP:
            out["stop_hook_active"] = False
    elif ev in (HookEvent.PRE_COMPACT, HookEvent.POST_COMPACT):
        out["trigger"] = "auto"
        out["custom_instructions"] = ""
    elif ev is HookEvent.TASK_COMPLETED:
        out["stop_hook_active"] = False
        out["task_id"] = data.get("event_id")
    elif ev is HookEvent.TASK_CREATED:
        out["task_id"] = data.get("event_id")
    elif ev is HookEvent.FILE_CHANGED:
        out["file_path"] = data.get("path")
    out["tether"] = {"event": ev.value, "data": data}
    return out


class ClaudeCodeHook(ShellHook):
    """A command hook speaking Claude Code's hook protocol (see the module docstring)."""

    protocol: ClassVar[str] = "claude-code"

    def __init__(
        self,
        command: Any,
        *,
        claude_event: str | None = None,
        plugin_root: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(command, **options)
        #: The Claude Code event the hook was declared for, when loaded from a settings file.
        self.claude_event = claude_event
        #: The plugin's folder (CLAUDE_PLUGIN_ROOT), for a hook a plugin's hooks.json declares.
        self.plugin_root = plugin_root

    @classmethod
    def from_config(cls, config: CommandHookConfig) -> ClaudeCodeHook:
        """The ClaudeCodeHook a HookConfig with ``protocol="claude-code"`` describes."""
        return cls(
            config.command,
            claude_event=config.claude_event,
            plugin_root=config._plugin_root,
            timeout=config.timeout if config.timeout is not None else CLAUDE_DEFAULT_TIMEOUT,
            cwd=config.cwd,
            env=config.env,
            env_passthrough=config.env_passthrough,
            max_output_bytes=config.max_output_bytes,
        )

    def build_env(self, ctx: HookContext) -> dict[str, str]:
        env = super().build_env(ctx)
        env.setdefault("CLAUDE_PROJECT_DIR", self.project_dir())
        if self.plugin_root is not None:
            env.setdefault("CLAUDE_PLUGIN_ROOT", self.plugin_root)
        return env

    def project_dir(self) -> str:
        """The project directory the program is told of (``CLAUDE_PROJECT_DIR``, its input's
        ``cwd``): the hook's ``cwd`` made absolute, else the current directory."""
        return os.path.abspath(self.cwd) if self.cwd is not None else os.getcwd()

    def applies(self, ctx: HookContext) -> bool:
        """False for a call a PostToolUse (or PostToolUseFailure) hook is not for: a loaded
        PostToolUse hook runs after calls that succeeded only, as in Claude Code."""
        if ctx.event is not HookEvent.POST_TOOL_USE or self.claude_event is None:
            return True
        failed = ctx.data.get("error") is not None
        return failed == (self.claude_event == "PostToolUseFailure")

    async def callback(self, ctx: HookContext) -> None:
        """Run the program with Claude Code's input; apply its answer by Claude Code's rules."""
        if not self.applies(ctx):
            return
        name = _event_name(ctx, self.claude_event)
        stdin = json.dumps(claude_input(ctx, name, self.project_dir()), default=str)
        done = await self.spawn(ctx, stdin)
        shown = self.display_name
        stderr = done.stderr.decode(self.encoding, errors="replace").strip()
        if done.returncode == 2:
            _refuse(ctx, stderr[:STDERR_IN_MESSAGE] or EXIT_2_NO_REASON)
            return
        if done.returncode != 0:
            said = f": {stderr[:STDERR_IN_MESSAGE]}" if stderr else " (nothing on stderr)"
            raise CommandHookError(f"hook command {shown!r} exited {done.returncode}{said}")
        raw = done.stdout.decode(self.encoding, errors="replace")
        if not raw.strip():
            return
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):  # plain text: context where Claude Code adds it
            if ctx.event is HookEvent.USER_PROMPT_SUBMIT:
                _add_context(ctx, raw.strip())
            return
        apply_answer(ctx, answer)


def _refuse(ctx: HookContext, reason: str) -> None:
    """A block: of the action, or, after a call that already ran, feedback to the model."""
    if ctx.event is HookEvent.POST_TOOL_USE:
        _add_context(ctx, reason)
        return
    raise HookBlocked(reason)


def _add_context(ctx: HookContext, text: str) -> None:
    """Text for the model: after the prompt, after the tool's result, or (pre_tool_use) for
    the loop to add after the result; elsewhere there is no model to read it."""
    if not text:
        return
    key = {
        HookEvent.USER_PROMPT_SUBMIT: "prompt",
        HookEvent.POST_TOOL_USE: "result",
        HookEvent.PRE_TOOL_USE: _ADDITIONAL_CONTEXT,
    }.get(ctx.event)
    if key is None:
        logger.debug("context of a Claude Code hook for %s ignored", ctx.event.value)
        return
    before = ctx.data.get(key)
    ctx.set(key, f"{before}\n\n{text}" if isinstance(before, str) and before else text)


def apply_answer(ctx: HookContext, answer: dict[str, Any]) -> None:
    """Apply a Claude Code hook's JSON answer (exit 0) to the dispatch."""
    specific = answer.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        specific = {}
    if answer.get("continue") is False:
        _refuse(ctx, str(answer.get("stopReason") or "stopped by a Claude Code hook"))
        return
    if ctx.event is HookEvent.PRE_TOOL_USE:
        _pre_tool_use(ctx, answer, specific)
    elif ctx.event is HookEvent.PERMISSION_REQUEST:
        decision = specific.get("decision")
        if isinstance(decision, dict) and decision.get("behavior") == "deny":
            raise HookBlocked(str(decision.get("message") or "denied by a Claude Code hook"))
    if answer.get("decision") == "block":
        _refuse(ctx, str(answer.get("reason") or "blocked by a Claude Code hook"))
    if ctx.event is HookEvent.POST_TOOL_USE and "updatedMCPToolOutput" in specific:
        output = specific["updatedMCPToolOutput"]
        ctx.set("result", output if isinstance(output, str) else json.dumps(output, default=str))
    extra = specific.get("additionalContext")
    if isinstance(extra, str):
        _add_context(ctx, extra)


def _pre_tool_use(ctx: HookContext, answer: dict[str, Any], specific: dict[str, Any]) -> None:
    decision = specific.get("permissionDecision")
    reason = specific.get("permissionDecisionReason") or answer.get("reason")
    legacy = answer.get("decision")  # Claude Code's older "approve" / "block"
    if decision is None and legacy in ("approve", "block"):
        decision = "allow" if legacy == "approve" else "deny"
    if decision == "deny":
        raise HookBlocked(str(reason or "denied by a Claude Code hook"))
    if decision == "ask":
        ctx.set(_REQUIRE_APPROVAL, True)
    elif decision not in (None, "allow"):
        raise CommandHookError(
            f"permissionDecision {decision!r} is not one of 'allow', 'deny' or 'ask'"
        )
    updated = specific.get("updatedInput")
    if updated is not None:
        ctx.set("arguments", updated)  # checked against the tool's schema (ToolCallContext)
