"""One agent run: prompt -> model <-> tools -> answer, with approval and budget gates.

The loop knows nothing of queues or processes: it is handed a model, tools, a context, the
gates and an ``emit`` function that dispatches lifecycle hooks on its behalf.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._redact import Redactor
from ..approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from ..hooks import DispatchResult
from ..hooks._bounded import Expired, LoopProbe, within
from ..models import ModelReply
from ._budget import BudgetTracker
from ._context import AgentContext
from ._observer import Note, Observer
from ._steps import CallStep, RunSteps, unknown_outcome
from ._tool_hooks import permission_denied, permission_request, post_tool_use, pre_tool_use
from ._tools import Tool, ToolArgumentsError, as_tool

if TYPE_CHECKING:
    from ..models import Model, ToolCall

__all__ = ["AgentLoop", "RunError", "RunResult"]

logger = logging.getLogger("tether.agent")

#: A tool call that held the event loop this long (seconds) is logged and noted on its call.
TOOL_HOLD_WARN = 0.1

#: Dispatches an event for the loop: ``emit(event, data, **options)``, the options (such as
#: ``context_factory``) passed on to HookManager.dispatch.
Emit = Callable[..., Awaitable[DispatchResult]]


class RunError(Exception):
    """A run could not finish (turn limit, model failure); the process may retry it."""


@dataclass(slots=True)
class RunResult:
    """What a finished run produced."""

    reply: str
    turns: int
    tool_calls: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    denials: int = 0


def _assistant_message(content: str | None, calls: list[ToolCall]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return msg


def _result_text(value: Any) -> str:
    if value is None:
        return "ok"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class AgentLoop:
    """Runs prompts through a model and its tools."""

    def __init__(
        self,
        *,
        model: Model,
        instructions: str,
        context: AgentContext,
        mission: str | None = None,
        emit: Emit,
        tools: list[Tool] | None = None,
        approval: ApprovalPolicy | None = None,
        budget: BudgetTracker | None = None,
        redactor: Redactor | None = None,
        process_id: str = "",
        max_turns: int = 10,
        tool_timeout: float = 120.0,
        observer: Observer | None = None,
    ) -> None:
        self.model = model
        self.instructions = instructions
        self.mission = mission
        self.context = context
        self.emit = emit
        self.tools: dict[str, Tool] = {t.name: t for t in (tools or [])}
        self.approval = approval
        self.budget = budget
        self.redactor = redactor if redactor is not None else Redactor()
        self.process_id = process_id
        self.max_turns = max_turns
        self.tool_timeout = tool_timeout
        #: Tools already logged for holding the event loop (once each).
        self._held_logged: set[str] = set()
        #: Told of each model call and tool call (telemetry); None: nothing is called.
        self.observer = observer

    def add_tool(self, fn: Tool | Callable[..., Awaitable[Any]]) -> Tool:
        t = as_tool(fn)
        self.tools[t.name] = t
        return t

    def remove_tool(self, name: str) -> bool:
        return self.tools.pop(name, None) is not None

    def system_message(self) -> dict[str, Any]:
        """The instructions, then the mission (a standing goal) and the saved state, if any."""
        text = self.instructions
        if self.mission:
            mission = f"Your standing mission: {self.mission}"
            text = f"{text}\n\n{mission}" if text else mission
        if self.context.state:
            notes = json.dumps(self.context.state, default=str, ensure_ascii=False)
            text = f"{text}\n\nYour saved state: {notes}" if text else f"Your saved state: {notes}"
        return {"role": "system", "content": text}

    async def run(
        self,
        prompt: str,
        *,
        event_id: str | None = None,
        extra_tools: list[Tool] | None = None,
        model: Model | None = None,
        transcript: list[dict[str, Any]] | None = None,
        steps: RunSteps | None = None,
    ) -> RunResult:
        """One run: returns the answer, raises RunError when it cannot finish.

        ``model`` overrides the loop's model for this run; ``transcript`` (a list the caller
        owns) receives every message of the run as it happens, even when the run fails.
        ``steps`` journals the run's steps and holds those a recovery found: their answers
        and outcomes are replayed, not asked or run again, and their hooks do not fire.
        """
        steps = steps if steps is not None else RunSteps()
        model = model if model is not None else self.model
        tools = dict(self.tools)
        for t in extra_tools or ():
            tools[t.name] = t
        specs = [t.spec() for t in tools.values()] or None
        user = {"role": "user", "content": prompt}
        messages = transcript if transcript is not None else []
        messages += [self.system_message(), *self.context.conversation.recent(), user]
        calls_made = 0
        denials = 0
        for turn in range(1, self.max_turns + 1):
            reply = steps.answer(turn) or await self._ask(model, messages, specs)
            steps.answered(turn, reply)
            if not reply.tool_calls:
                answer = reply.content or ""
                messages.append({"role": "assistant", "content": answer})
                await self.context.conversation.extend(
                    [user, {"role": "assistant", "content": answer}]
                )
                return RunResult(answer, turn, calls_made, messages, denials)
            messages.append(_assistant_message(reply.content, reply.tool_calls))
            for index, call in enumerate(reply.tool_calls):
                done = steps.outcome(turn, index)
                if done is None:
                    with steps.calling(turn, index, call, event_id) as step:
                        done = await self._observed_call(call, tools, calls_made, event_id, step)
                    steps.finished(turn, index, *done)
                text, counted, denied = done
                calls_made += counted
                denials += denied
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        raise RunError(f"run reached its turn limit (max_turns={self.max_turns}) without an answer")

    async def converse(
        self,
        transcript: list[dict[str, Any]],
        text: str,
        *,
        timeout: float,
        model: Model | None = None,
    ) -> str:
        """One extra turn after a run, tools disabled, never added to the conversation.

        ``model`` is the one that ran the task, when it was not the loop's own.
        The model is asked in a task of its own, so the deadline really bounds the turn: on
        expiry the call is cancelled and abandoned (a model that swallows the cancellation and
        answers later has its reply discarded) and TimeoutError is raised at the deadline, never
        a cancellation of the caller's task (which a hook's engine would take for its own).
        """
        messages = [*transcript, {"role": "user", "content": text}]
        call = asyncio.ensure_future((model or self.model).complete(messages, None))  # no tools
        try:
            done, _ = await asyncio.wait((call,), timeout=timeout)
        except BaseException:
            call.cancel()  # the caller is cancelled: the turn goes with it
            _abandon(call)
            raise
        if not done:
            call.cancel()
            _abandon(call)
            raise TimeoutError(f"converse timed out after {timeout:g}s")
        reply = call.result()
        return reply.content or ""

    async def _ask(
        self, model: Model, messages: list[dict[str, Any]], specs: list[dict[str, Any]] | None
    ) -> ModelReply:
        """The model's answer of one turn; RunError when it fails or answers no ModelReply."""
        try:
            reply = await self._complete(model, messages, specs)
        except Exception as exc:
            raise RunError(f"model error: {exc}") from exc
        if not isinstance(reply, ModelReply):  # a model object of the caller's, misbehaving
            raise RunError(
                f"model {getattr(model, 'name', model)!s} answered a "
                f"{type(reply).__name__}, not a ModelReply"
            )
        return reply

    async def _complete(
        self, model: Model, messages: list[dict[str, Any]], specs: list[dict[str, Any]] | None
    ) -> ModelReply:
        observer = self.observer
        if observer is None:
            return await model.complete(messages, specs)
        with observer.model_call(self.process_id, str(getattr(model, "name", model))) as note:
            try:
                reply = await model.complete(messages, specs)
            except Exception as exc:
                note.outcome, note.error = "error", self.redactor.text(f"{exc}")
                raise
            if isinstance(reply, ModelReply):
                note.usage = _usage(reply)
            return reply

    async def _observed_call(
        self,
        call: ToolCall,
        tools: dict[str, Tool],
        calls_made: int,
        event_id: str | None,
        step: CallStep,
    ) -> tuple[str, int, int]:
        observer = self.observer
        if observer is None:
            return await self._call_tool(call, tools, calls_made, event_id, step)
        with observer.tool_call(self.process_id, call.name, call.id) as note:
            return await self._call_tool(call, tools, calls_made, event_id, step, note)

    async def _call_tool(
        self,
        call: ToolCall,
        tools: dict[str, Tool],
        calls_made: int,
        event_id: str | None,
        step: CallStep,
        note: Note | None = None,
    ) -> tuple[str, int, int]:
        """Run one tool call; return (text for the model, calls counted, denials).

        Order: parse the arguments, pre_tool_use (may refuse or rewrite), budget, approval,
        the call, post_tool_use (may replace the result). A call refused before it runs is
        no call for post_tool_use. ``note`` (observed calls) gets the outcome: ok, error,
        timed_out or refused.
        """
        note = note if note is not None else Note()
        t = tools.get(call.name)
        if t is None:
            names = ", ".join(sorted(tools)) or "none"
            note.outcome, note.error = "error", "unknown tool"
            return f"error: unknown tool {call.name!r}; available tools: {names}", 0, 0
        try:
            args = t.parse_arguments(call.arguments)
        except ToolArgumentsError as exc:
            note.outcome, note.error = "error", "invalid arguments"
            return f"error: invalid arguments for {call.name}: {exc}", 0, 0
        shown = self.redactor.declared.value
        key = step.info.idempotency_key
        pre = await pre_tool_use(self.emit, shown, t, args, call.id, event_id, key)
        if pre.refusal is not None:
            reason = self.redactor.declared.text(pre.refusal)  # a hook's words: no secrets
            await permission_denied(
                self.emit,
                "hook",
                call.name,
                reason,
                pre.decided_by,
                call_id=call.id,
                event_id=event_id,
            )
            note.outcome, note.error = "refused", self.redactor.text(reason)
            return f"refused: {reason}", 0, 1
        args = pre.arguments
        if self.budget is not None:
            denial = self.budget.check_tool_call(calls_made)
            if denial is not None:
                await permission_denied(
                    self.emit,
                    "budget",
                    call.name,
                    denial.reason,
                    "budget",
                    limit_name=denial.limit_name,
                    limit_value=denial.limit_value,
                    current_value=denial.current_value,
                )
                note.outcome, note.error = "refused", denial.reason
                return f"refused: {denial.reason}", 0, 1
        approval = self.approval
        if pre.require_approval or (approval is not None and approval.needs_approval(call.name)):
            refusal = await self._approve(call.name, args, event_id)
            if refusal is not None:
                note.outcome, note.error = "refused", self.redactor.text(refusal)
                return f"refused: {refusal}", 1, 1
        if step.info.resumed:  # cut off by a crash: its outcome is unknown
            refusal = await unknown_outcome(
                self.emit, self.approval, t, self.redactor.value(args), step.info, self.process_id
            )
            if refusal is not None:
                note.outcome, note.error = "refused", "outcome unknown after a crash"
                return refusal, 1, 1
        await step.starting(idempotent=t.idempotent)
        started = time.perf_counter()
        text, error = await self._run_tool(t, args, note)
        if error is not None:
            timed_out = error.startswith(f"tool {t.name} timed out")
            note.outcome = "timed_out" if timed_out else "error"
            note.error = self.redactor.text(error)
        duration_ms = (time.perf_counter() - started) * 1e3
        text = await post_tool_use(
            self.emit, shown, t, args, call.id, event_id, text, error, duration_ms, key
        )
        if pre.additional_context is not None:
            text = f"{text}\n\n{pre.additional_context}"
        return text, 1, 0

    async def _run_tool(self, t: Tool, args: dict[str, Any], note: Note) -> tuple[str, str | None]:
        """Call the tool under its timeout; return (text for the model, error text or None).
        A tool that held the event loop (a blocking call in an async tool stalls every
        process) is logged, once per tool, and the hold recorded on the call's note."""
        probe = LoopProbe()
        started = time.perf_counter()
        try:
            value = await within(t.fn(**args), self.tool_timeout)
        except Expired as exc:
            if exc.held:
                self._held_loop(t.name, exc.held, note)
            error = f"tool {t.name} timed out after {self.tool_timeout:g}s"
            return f"error: {error}", error
        except Exception as exc:
            return self._tool_error(t.name, exc)
        finally:
            held = probe.held(started)
        if held >= TOOL_HOLD_WARN:
            self._held_loop(t.name, held, note)
        return _result_text(value), None

    def _held_loop(self, name: str, held: float, note: Note) -> None:
        note.attributes["tether.tool.loop_held_s"] = round(held, 3)
        if name in self._held_logged:
            return
        self._held_logged.add(name)
        logger.warning(
            "tool %s blocked the event loop for %.3gs (logged once per tool): a blocking call "
            "in an async tool stalls every process; use await or asyncio.to_thread",
            name,
            held,
        )

    def _tool_error(self, name: str, exc: Exception) -> tuple[str, str]:
        """What the model reads of an error a tool raised (declared secrets redacted), and
        the error text alone."""
        logger.info("tool %s raised %s", name, self.redactor.text(repr(exc)))
        # (Learned values are redacted for records, not here.)
        error = f"{type(exc).__name__}: {self.redactor.declared.text(str(exc))}"
        return f"error: {error}", error

    async def _approve(
        self, tool_name: str, args: dict[str, Any], event_id: str | None
    ) -> str | None:
        """Ask hooks, then the handler; return the refusal reason or None when approved.

        With no approval policy (a pre_tool_use hook asked for approval) there is no handler:
        the call is denied, the safe answer to "ask" when nobody can be asked.
        """
        policy = self.approval if self.approval is not None else ApprovalPolicy()
        redacted = self.redactor.value(args)
        request = ApprovalRequest(tool_name, redacted, self.process_id, event_id=event_id)
        gate = await permission_request(self.emit, tool_name, redacted, request.request_id)
        if gate.blocked:
            reason = gate.reason or "refused by a permission_request hook"
            await permission_denied(
                self.emit, "approval", tool_name, reason, "hook", request_id=request.request_id
            )
            return reason
        handler = policy.handler
        decision: ApprovalDecision
        if handler is None:
            decision = ApprovalDecision(False, None, "no approval handler configured", "policy")
        else:
            started = time.monotonic()
            try:
                decision = await within(handler(request), policy.timeout)
                if not isinstance(decision, ApprovalDecision):
                    raise TypeError(f"handler returned {type(decision).__name__}, not a decision")
            except Expired:
                waited = time.monotonic() - started
                decision = ApprovalDecision(
                    False, None, f"approval handler timed out after {waited:.1f}s", "timeout"
                )
            except Exception as exc:
                decision = ApprovalDecision(
                    False, None, f"approval handler failed: {exc!r}", "error"
                )
        if decision.approved:
            return None
        reason = decision.reason or "denied by the reviewer"
        await permission_denied(
            self.emit,
            "approval",
            tool_name,
            reason,
            decision.decided_by,
            request_id=request.request_id,
        )
        return reason


def _usage(reply: ModelReply) -> dict[str, int]:
    """The reply's token counts (``input``, ``output``) from an OpenAI-style ``usage``."""
    usage = reply.raw.get("usage") if isinstance(reply.raw, dict) else None
    if not isinstance(usage, dict):
        return {}
    out: dict[str, int] = {}
    for key, name in (("prompt_tokens", "input"), ("completion_tokens", "output")):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[name] = value
    return out


#: Converse turns abandoned at their deadline and not yet ended (a strong reference each, so
#: that a pending one is not collected while it runs).
_ABANDONED: set[asyncio.Future[Any]] = set()


def _abandon(call: asyncio.Future[Any]) -> None:
    """Forget an abandoned turn once it ends; its late reply or error is discarded unread
    (not logged: it may quote the conversation)."""
    if call.done():
        if not call.cancelled():
            call.exception()
        return
    _ABANDONED.add(call)

    def ended(done: asyncio.Future[Any]) -> None:
        _ABANDONED.discard(done)
        if not done.cancelled():
            done.exception()

    call.add_done_callback(ended)
