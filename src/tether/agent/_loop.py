"""One agent run: prompt -> model <-> tools -> answer, with approval and budget gates.

The agent loop knows nothing of queues or processes: it is handed a model, tools, a context, the
gates and a function (its ``emit`` argument) that dispatches hook events on its behalf.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._redact import Redactor
from ..approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from ..errors import TetherError
from ..hooks import Expired, HookEvent, LoopProbe, within
from ..models import ModelReply
from ._budget import BudgetTracker
from ._context import AgentContext
from ._model_hooks import ModelRequest, PreModelCall, post_model_call, pre_model_call
from ._observer import Note, Observer
from ._steps import CallStep, RunSteps, unknown_outcome
from ._tool_hooks import (
    Dispatch,
    InvalidArgumentsRewrite,
    check_arguments,
    permission_denied,
    permission_request,
    post_tool_use,
    pre_tool_use,
)
from ._tools import Tool, ToolArgumentsError, as_tool
from ._transcript import TranscriptFile
from ._usage import Tokens, Usage, UsageMeter, model_identity, tokens_of

if TYPE_CHECKING:
    from ..models import Model, ToolCall

__all__ = ["AgentLoop", "RunBlocked", "RunError", "RunRefused", "RunResult"]

logger = logging.getLogger("tether.agent")

#: A tool call that held the event loop this long (seconds) is logged and noted on its call.
TOOL_HOLD_WARN = 0.1

#: The type of AgentLoop's ``emit`` argument, under its old name (see Dispatch).
Emit = Dispatch


class RunError(TetherError):
    """A run could not finish (turn limit, model failure); the process may retry it."""


class RunBlocked(RunError):
    """A model-call hook blocked the run (its reason is the message); it is not retried."""


class RunRefused(RunError):
    """A budget refused the run's next model call (the reason is the message); not retried."""


@dataclass(slots=True)
class RunResult:
    """What a finished run produced."""

    reply: str
    turns: int
    tool_calls: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    denials: int = 0
    usage: Usage = field(default_factory=Usage)
    #: Times an agent_stop hook sent the run back to the model.
    continuations: int = 0
    #: Why a tool hook ended the run before the model answered (the operator's to read).
    stopped: str | None = None


@dataclass(slots=True)
class _Call:
    """One model call as post_model_call reports it: the reply (None: it failed), who
    answered (``model`` or ``hook``), its tokens and cost, and its error."""

    reply: ModelReply | None
    source: str
    tokens: Tokens = field(default_factory=Tokens)
    cost: float | None = 0.0
    failed: Exception | None = None
    error: str | None = None


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
        emit: Dispatch,
        tools: list[Tool] | None = None,
        approval: ApprovalPolicy | None = None,
        budget: BudgetTracker | None = None,
        redactor: Redactor | None = None,
        process_id: str = "",
        max_turns: int = 10,
        max_continuations: int = 3,
        tool_timeout: float = 120.0,
        observer: Observer | None = None,
        meter: UsageMeter | None = None,
        listens: Callable[[HookEvent], bool] | None = None,
    ) -> None:
        self.model = model
        self.instructions = instructions
        self.mission = mission
        self.context = context
        #: Dispatches the hook events of a run (handed over as ``emit``).
        self.dispatch = emit
        self.tools: dict[str, Tool] = {t.name: t for t in (tools or [])}
        self.approval = approval
        self.budget = budget
        self.redactor = redactor if redactor is not None else Redactor()
        self.process_id = process_id
        self.max_turns = max_turns
        self.max_continuations = max_continuations
        self.tool_timeout = tool_timeout
        #: Tools already logged for holding the event loop (once each; replaced as a whole).
        self._held_logged: tuple[str, ...] = ()
        #: Told of each model call and tool call (telemetry); None: nothing is called.
        self.observer = observer
        #: The process's price table and running totals of model calls.
        self.meter = meter if meter is not None else UsageMeter()
        #: Whether an event would reach a hook: the model-call events are not dispatched when
        #: none would (their data copies the whole request). None: always dispatched.
        self.listens = listens
        #: Context the session_start hooks gave the model, after the instructions.
        self.session_context: str | None = None
        #: Where every message of every run is appended, Claude Code's way (None: nowhere).
        self.transcript_file: TranscriptFile | None = None

    def add_tool(self, fn: Tool | Callable[..., Awaitable[Any]]) -> Tool:
        t = as_tool(fn)
        self.tools[t.name] = t
        return t

    def remove_tool(self, name: str) -> bool:
        return self.tools.pop(name, None) is not None

    def system_message(self) -> dict[str, Any]:
        """The instructions, then the mission (a standing goal) and the saved state, if any."""
        text = self.instructions
        if self.session_context:
            text = f"{text}\n\n{self.session_context}" if text else self.session_context
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
        usage: Usage | None = None,
        steps: RunSteps | None = None,
    ) -> RunResult:
        """One run: returns the answer, raises RunError when it cannot finish (RunBlocked
        when a model-call hook blocked it, RunRefused when a budget refused a model call).

        ``model`` overrides the agent loop's model for this run; ``transcript`` and ``usage`` (the
        caller's) receive every message of the run and its model calls' running totals as
        they happen, even when the run fails. ``steps`` journals the run's steps and holds
        those a recovery found: their answers and outcomes are replayed, not asked or run
        again, and their hooks do not run. Before the run ends with an answer, agent_stop
        is dispatched: a block sends its reason to the model as the next user message and the run
        goes on, with one more turn allowed for it, at most ``max_continuations`` times.
        """
        usage = usage if usage is not None else Usage()
        steps = steps if steps is not None else RunSteps()
        model = model if model is not None else self.model
        tools = dict(self.tools)
        for t in extra_tools or ():
            tools[t.name] = t
        specs = [t.spec() for t in tools.values()] or None
        user = {"role": "user", "content": prompt}
        messages = transcript if transcript is not None else []
        messages += [self.system_message(), *self.context.conversation.recent()]
        file = self.transcript_file

        def keep(message: dict[str, Any]) -> None:
            messages.append(message)
            if file is not None:
                file.write(message)

        keep(user)
        calls_made = denials = continuations = turn = 0
        limit = self.max_turns
        while turn < limit:
            turn += 1
            reply = steps.answer(turn) or await self._model_turn(
                model, messages, specs, turn, event_id, usage
            )
            steps.answered(turn, reply)
            if not reply.tool_calls:
                answer = reply.content or ""
                keep({"role": "assistant", "content": answer})
                stop = {"answer": answer, "turns": turn, "continuations": continuations}
                reason = await self._keep_going(stop, usage, event_id)
                if reason is not None:
                    continuations += 1
                    limit += 1  # the turn that answers the hook's message
                    keep({"role": "user", "content": reason})
                    continue
                await self.context.conversation.extend(
                    [user, {"role": "assistant", "content": answer}]
                )
                return RunResult(answer, turn, calls_made, messages, denials, usage, continuations)
            keep(_assistant_message(reply.content, reply.tool_calls))
            stops: list[str] = []
            for index, call in enumerate(reply.tool_calls):
                if stops:  # a hook ended the run: no further call (each still answered)
                    keep({"role": "tool", "tool_call_id": call.id, "content": "not run: stopped"})
                    continue
                done = steps.outcome(turn, index)
                if done is None:
                    with steps.calling(turn, index, call, event_id) as step:
                        done = await self._observed_call(
                            call, tools, calls_made, event_id, usage, stops, step
                        )
                    steps.finished(turn, index, *done)
                text, counted, denied = done
                calls_made += counted
                denials += denied
                keep({"role": "tool", "tool_call_id": call.id, "content": text})
            if stops:  # and no further turn
                return RunResult(
                    "", turn, calls_made, messages, denials, usage, continuations, stops[0]
                )
        raise RunError(f"run reached its turn limit (max_turns={self.max_turns}) without an answer")

    async def _keep_going(
        self, stop: dict[str, Any], usage: Usage, event_id: str | None
    ) -> str | None:
        """Dispatch agent_stop before a run ends with its answer; return the reason a hook blocked
        it with (the model's next message), or None when the run ends. A block past
        ``max_continuations`` is recorded (the hook's run is) and ignored, with a warning."""
        result = await self.dispatch(
            HookEvent.AGENT_STOP, {**stop, "usage": usage.to_dict(), "event_id": event_id}
        )
        if not result.blocked:
            return None
        if stop["continuations"] >= self.max_continuations:
            logger.warning(
                "process %s: agent_stop blocked by %s past max_continuations=%d; ignored, the "
                "run ends",
                self.process_id,
                result.blocked_by,
                self.max_continuations,
            )
            return None
        # A hook's words: no declared secrets reach the model through them.
        return self.redactor.declared.text(result.reason or "Keep going.")

    async def converse(
        self,
        transcript: list[dict[str, Any]],
        text: str,
        *,
        timeout: float,
        model: Model | None = None,
    ) -> str:
        """One extra turn after a run, tools disabled, never added to the conversation.

        ``model`` is the one that ran the task, when it was not the agent loop's own.
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

    async def _model_turn(
        self,
        model: Model,
        messages: list[dict[str, Any]],
        specs: list[dict[str, Any]] | None,
        turn: int,
        event_id: str | None,
        usage: Usage,
    ) -> ModelReply:
        """One model call with its gates: the budget, pre_model_call (may refuse, rewrite
        the request or answer instead of the model), the call, post_model_call (may refuse
        or rewrite the answer). Raises RunError (RunBlocked, RunRefused) when it cannot go on.
        """
        await self._check_budget(usage, event_id)
        provider, name = model_identity(model)
        request = ModelRequest(provider, name, messages, specs)
        pre = await self._pre_model_call(model, request, turn, event_id, usage)
        started = time.perf_counter()
        if pre.answer is not None:
            call = _Call(pre.answer, "hook")
        else:
            call = await self._call_model(model, pre.request, name, usage)
        took = (time.perf_counter() - started) * 1e3
        reply = await self._post_model_call(call, pre.request, turn, event_id, usage, took)
        if call.failed is not None:
            raise RunError(f"model error: {call.failed}") from call.failed
        assert reply is not None
        return reply

    async def _pre_model_call(
        self,
        model: Model,
        request: ModelRequest,
        turn: int,
        event_id: str | None,
        usage: Usage,
    ) -> PreModelCall:
        """pre_model_call's decision; RunBlocked when a hook refused the call."""
        meter, provider, name = self.meter, request.provider, request.model
        pre = await pre_model_call(
            self.dispatch,
            self.redactor.declared.value,
            request,
            turn=turn,
            event_id=event_id,
            usage_so_far=usage.to_dict(),
            known=lambda other: other == name or meter.price_of(provider, other) is not None,
            allowed=lambda: (
                f"{name!r} (the run's model) or one the pricing names "
                f"({', '.join(sorted(meter.pricing)) or 'none'})"
            ),
            takes_params=takes_params(model),
            listens=self.listens,
        )
        if pre.blocked is not None:
            raise RunBlocked(self.redactor.declared.text(pre.blocked))
        return pre

    async def _post_model_call(
        self,
        call: _Call,
        request: ModelRequest,
        turn: int,
        event_id: str | None,
        usage: Usage,
        duration_ms: float,
    ) -> ModelReply | None:
        """The reply the agent loop reads, as post_model_call left it; RunBlocked when a hook
        refused it (a failed call's error stands, whatever its hooks answer)."""
        post = await post_model_call(
            self.dispatch,
            self.redactor.declared.value,
            call.reply,
            listens=self.listens,
            data=lambda: {
                "model": request.model,
                "provider": request.provider,
                "source": call.source,
                "usage": call.tokens.to_dict(),
                "cost": call.cost,
                "duration_ms": round(duration_ms, 3),
                "error": call.error,
                "turn": turn,
                "event_id": event_id,
                "run_usage": usage.to_dict(),
                "process_usage": self.meter.to_dict(),
            },
        )
        if post.blocked is not None and call.failed is None:
            raise RunBlocked(self.redactor.declared.text(post.blocked))
        return post.reply

    async def _check_budget(self, usage: Usage, event_id: str | None) -> None:
        """RunRefused (after permission_denied, kind budget) when a budget refuses the next
        model call."""
        block = self.budget.check_model_call(usage, self.meter) if self.budget else None
        if block is None:
            return
        await permission_denied(
            self.dispatch,
            "budget",
            None,
            block.reason,
            "budget",
            limit_name=block.limit_name,
            limit_value=block.limit_value,
            current_value=block.current_value,
            event_id=event_id,
        )
        raise RunRefused(block.reason)

    async def _call_model(
        self, model: Model, request: ModelRequest, name: str, usage: Usage
    ) -> _Call:
        """Make the call; count what it used in the run's and the process's totals."""
        try:
            reply = await self._complete(model, request, name)
        except Exception as exc:
            call = _Call(None, "model", cost=None, failed=exc)
            call.error = self.redactor.declared.text(f"{type(exc).__name__}: {exc}")
            return call
        tokens = tokens_of(reply)
        cost = self.meter.cost(request.provider, request.model, tokens)
        usage.add(tokens, cost)
        self.meter.add(tokens, cost)
        return _Call(reply, "model", tokens, cost)

    async def _complete(self, model: Model, request: ModelRequest, name: str) -> ModelReply:
        """The model's answer to ``request``; raises what the model raises, or TypeError when
        it answers something other than a ModelReply."""
        params = request.params
        if request.model != name:
            params = {**params, "model": request.model}
        call = (
            model.complete(request.messages, request.tools, params=params)  # type: ignore[call-arg]
            if params
            else model.complete(request.messages, request.tools)
        )
        observer = self.observer
        if observer is None:
            reply = await call
        else:
            label = str(getattr(model, "name", model))  # as the configuration names it
            if request.model != name:
                label = f"{request.provider}:{request.model}"
            with observer.model_call(self.process_id, label) as note:
                try:
                    reply = await call
                except Exception as exc:
                    note.outcome, note.error = "error", self.redactor.text(f"{exc}")
                    raise
                if isinstance(reply, ModelReply):
                    tokens = tokens_of(reply)
                    note.usage = {"input": tokens.input, "output": tokens.output}
                    if tokens.cached:
                        note.usage["cached"] = tokens.cached
                    note.cost = self.meter.cost(request.provider, request.model, tokens)
        if not isinstance(reply, ModelReply):  # a model object of the caller's, misbehaving
            raise TypeError(
                f"model {getattr(model, 'name', model)!s} answered a "
                f"{type(reply).__name__}, not a ModelReply"
            )
        return reply

    async def _observed_call(
        self,
        call: ToolCall,
        tools: dict[str, Tool],
        calls_made: int,
        event_id: str | None,
        usage: Usage,
        stops: list[str],
        step: CallStep,
    ) -> tuple[str, int, int]:
        observer = self.observer
        if observer is None:
            return await self._call_tool(call, tools, calls_made, event_id, usage, stops, step)
        with observer.tool_call(self.process_id, call.name, call.id) as note:
            return await self._call_tool(
                call, tools, calls_made, event_id, usage, stops, step, note
            )

    async def _call_tool(
        self,
        call: ToolCall,
        tools: dict[str, Tool],
        calls_made: int,
        event_id: str | None,
        usage: Usage,
        stops: list[str],
        step: CallStep,
        note: Note | None = None,
    ) -> tuple[str, int, int]:
        """Run one tool call; return (text for the model, calls counted, denials); a tool
        hook's request to end the run is appended to ``stops``.

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
        pre = await pre_tool_use(self.dispatch, shown, t, args, call.id, event_id, key)
        if pre.stop_run is not None:
            stops.append(self.redactor.declared.text(pre.stop_run))
        if pre.blocked is not None:
            reason = self.redactor.declared.text(pre.blocked)  # a hook's words: no secrets
            await permission_denied(
                self.dispatch,
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
            block = self.budget.check_tool_call(calls_made)
            if block is not None:
                await permission_denied(
                    self.dispatch,
                    "budget",
                    call.name,
                    block.reason,
                    "budget",
                    limit_name=block.limit_name,
                    limit_value=block.limit_value,
                    current_value=block.current_value,
                )
                note.outcome, note.error = "refused", block.reason
                return f"refused: {block.reason}", 0, 1
        approval = self.approval
        if pre.require_approval or (approval is not None and approval.needs_approval(call.name)):
            refusal, args = await self._approve(t, args, event_id, pre.approval_reason)
            if refusal is not None:
                note.outcome, note.error = "refused", self.redactor.text(refusal)
                return f"refused: {refusal}", 1, 1
        if step.info.resumed:  # cut off by a crash: its outcome is unknown
            refusal = await unknown_outcome(
                self.dispatch,
                self.approval,
                t,
                self.redactor.value(args),
                step.info,
                self.process_id,
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
        totals = {"run_usage": usage.to_dict(), "process_usage": self.meter.to_dict()}
        text, stop = await post_tool_use(
            self.dispatch, shown, t, args, call.id, event_id, text, error, duration_ms, totals, key
        )
        if stop is not None:
            stops.append(self.redactor.declared.text(stop))
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
                self._held_event_loop(t.name, exc.held, note)
            error = f"tool {t.name} timed out after {self.tool_timeout:g}s"
            return f"error: {error}", error
        except Exception as exc:
            return self._tool_error(t.name, exc)
        finally:
            held = probe.held(started)
        if held >= TOOL_HOLD_WARN:
            self._held_event_loop(t.name, held, note)
        return _result_text(value), None

    def _held_event_loop(self, name: str, held: float, note: Note) -> None:
        note.attributes["tether.tool.loop_held_s"] = round(held, 3)
        if name in self._held_logged:
            return
        self._held_logged += (name,)
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
        self, tool: Tool, args: dict[str, Any], event_id: str | None, reason: str | None
    ) -> tuple[str | None, dict[str, Any]]:
        """Ask hooks, then the handler; return the refusal reason (None when approved) and
        the arguments the call runs with. ``reason`` is why a hook asked (the handler's
        ``ApprovalRequest.reason``).

        A permission_request hook may approve (``approved: True``: the handler is not asked),
        with the arguments to run with (``updated_arguments``, validated against the tool's
        schema); any other change of its data is not read back. With no approval
        policy (a pre_tool_use hook asked for approval) there is no handler: the call is
        denied, the safe answer to "ask" when nobody can be asked.
        """
        tool_name = tool.name
        policy = self.approval if self.approval is not None else ApprovalPolicy()
        redacted = self.redactor.value(args)
        request = ApprovalRequest(
            tool_name, redacted, self.process_id, event_id=event_id, reason=reason
        )
        gate = await permission_request(self.dispatch, tool_name, redacted, request.request_id)
        if gate.blocked:
            refusal = gate.reason or "refused by a permission_request hook"
            await permission_denied(
                self.dispatch, "approval", tool_name, refusal, "hook", request_id=request.request_id
            )
            return refusal, args
        if gate.data.get("approved") is True:  # a hook approved, maybe with new arguments
            rewritten = gate.data.get("updated_arguments")
            if rewritten is not None:
                try:
                    args = check_arguments(tool, rewritten)
                except InvalidArgumentsRewrite as exc:
                    logger.warning("permission_request of %s: %s", tool_name, exc)
            return None, args
        return await self._decide(policy, request, tool_name), args

    async def _decide(
        self, policy: ApprovalPolicy, request: ApprovalRequest, tool_name: str
    ) -> str | None:
        """The approval handler's decision on ``request``: the refusal reason, or None."""
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
            self.dispatch,
            "approval",
            tool_name,
            reason,
            decision.decided_by,
            request_id=request.request_id,
        )
        return reason


#: Whether a model class's complete() takes ``params`` (read once per class).
_TAKES_PARAMS: dict[type, bool] = {}


def takes_params(model: Any) -> bool:
    """Whether ``model.complete`` takes a ``params`` keyword (extra request fields)."""
    cls = type(model)
    found = _TAKES_PARAMS.get(cls)
    if found is None:
        try:
            parameters = inspect.signature(model.complete).parameters.values()
        except (TypeError, ValueError):
            parameters = ()  # type: ignore[assignment]
        found = any(
            p.name == "params" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
        )
        _TAKES_PARAMS[cls] = found
    return found


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
