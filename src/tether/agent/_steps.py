"""The steps of one run, as a journal keeps them so that a recovery resumes the run.

A run's steps, each named as the journal stores it:

``model:<turn>``         the model's answer of that turn, when it asked for tools (its text and
                         calls); a final answer ends the run and is not journaled apart
``tool:<turn>:<index>``  a tool call: ``started`` (landed before the tool runs), then ``done``
                         with what the model read of it (refusals and errors included)

A recovery hands the run what was journaled (``RunSteps.found``): an answer found is not asked
again, a call found ``done`` is replayed (its text goes to the model, no hook fires), and a call
found ``started`` had an unknown outcome when the host went away: it runs again only if its
tool is ``idempotent``, or a reviewer approves (see ``unknown_outcome``).

Every call has an idempotency key, the same on every attempt of the run and after a recovery
(derived from the process, the event, the turn and the call's place in it): a tool reads it
with ``current_tool_call()``, hooks see it in ``pre_tool_use`` / ``post_tool_use``, MCP servers
in the call's ``_meta``.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest
from ..hooks import Expired, within
from ..models import ModelReply, ToolCall
from ._tool_hooks import permission_denied, permission_request

if TYPE_CHECKING:
    from ._tools import Tool

__all__ = [
    "UNKNOWN_OUTCOME",
    "RunSteps",
    "ToolCallInfo",
    "current_tool_call",
    "unknown_outcome",
]

#: The ``reason`` of the permission_request fired for a call in flight at a crash.
UNKNOWN_OUTCOME: Final = "outcome unknown after a crash"

#: Writes a step: (step, state, data), not waited for.
Record = Callable[[str, str, dict[str, Any]], None]
#: Writes a step and waits until it landed: (step, state, data).
Land = Callable[[str, str, dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """The tool call running in this task: ``tether.current_tool_call()``. A tool (or a
    hook of the call, in its task) reads ``idempotency_key`` here."""

    #: The same on every attempt of this call, before and after a recovery: hand it to an
    #: external system (a payment, an email, a ticket) so it can deduplicate.
    idempotency_key: str
    tool_name: str
    #: The model's id of the call (a new model answer may give another).
    call_id: str
    event_id: str | None
    #: True when this attempt runs after a crash cut an earlier one off, its outcome unknown.
    resumed: bool = False


_CURRENT_CALL: ContextVar[ToolCallInfo | None] = ContextVar("tether_tool_call", default=None)


def current_tool_call() -> ToolCallInfo | None:
    """The tool call being run in this task (its idempotency key among the rest); None
    outside a tool call."""
    return _CURRENT_CALL.get()


class RunSteps:
    """The journaled steps of one run, and where its new steps are written.

    ``scope`` names the run for its idempotency keys (process and event); ``found`` holds the
    steps a journal kept ({step: (state, data)}); ``record`` writes a step (not waited for),
    ``land`` writes one and waits for it. Without them (no journal) nothing is written and
    nothing resumes, but the keys are the same.
    """

    __slots__ = ("_land", "_record", "_scope", "found", "written")

    def __init__(
        self,
        scope: str | None = None,
        found: dict[str, tuple[str, dict[str, Any]]] | None = None,
        *,
        record: Record | None = None,
        land: Land | None = None,
    ) -> None:
        self._scope = scope  # (None: made at the first key, a run's own)
        self.found = found if found is not None else {}
        self._record = record
        self._land = land
        #: Whether this run wrote a step (its steps are forgotten when it ends).
        self.written = False

    @property
    def scope(self) -> str:
        """What the run's idempotency keys are derived from (process and event)."""
        if self._scope is None:
            self._scope = uuid.uuid4().hex
        return self._scope

    def key(self, turn: int, index: int) -> str:
        """The idempotency key of call ``index`` of ``turn``."""
        text = f"{self.scope}\x00{turn}\x00{index}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def answer(self, turn: int) -> ModelReply | None:
        """The journaled answer of ``turn``, if one was received before a crash."""
        if not self.found:
            return None
        found = self.found.get(f"model:{turn}")
        if found is None:
            return None
        data = found[1]
        calls = [ToolCall(c["id"], c["name"], c["arguments"]) for c in data["tool_calls"]]
        return ModelReply(data["content"], calls)

    def answered(self, turn: int, reply: ModelReply) -> None:
        """Keep the answer of ``turn`` (one asking for tools) for the journal: it is written
        with its first call's ``started`` mark (lost before that, it is asked again, which
        runs nothing twice)."""
        if self._record is None or not reply.tool_calls:
            return
        step = f"model:{turn}"
        if step in self.found:
            return
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        self.found[step] = ("done", {"content": reply.content, "tool_calls": calls})

    def outcome(self, turn: int, index: int) -> tuple[str, int, int] | None:
        """(text, calls counted, denials) of a call finished before a crash, else None."""
        found = self.found.get(f"tool:{turn}:{index}")
        if found is None or found[0] != "done":
            return None
        data = found[1]
        return data["text"], data["counted"], data["denied"]

    def cut_off(self, turn: int, index: int) -> bool:
        """Whether the call had started, and not finished, when the host went away."""
        found = self.found.get(f"tool:{turn}:{index}")
        return found is not None and found[0] == "started"

    def finished(self, turn: int, index: int, text: str, counted: int, denied: int) -> None:
        """Journal what the model reads of the call."""
        if self._record is not None:
            data = {"text": text, "counted": counted, "denied": denied}
            self._put(f"tool:{turn}:{index}", "done", data)

    def _put(self, step: str, state: str, data: dict[str, Any]) -> None:
        # Kept here too: a run of the same event again in this process (a crash's restart
        # cut it off) resumes from what it did, journal writes pending or not.
        assert self._record is not None
        self.written = True
        self.found[step] = (state, data)
        self._record(step, state, data)

    @contextmanager
    def calling(
        self, turn: int, index: int, call: ToolCall, event_id: str | None
    ) -> Iterator[CallStep]:
        """The step of the call, made current (``current_tool_call()``) while it runs."""
        info = ToolCallInfo(
            self.key(turn, index), call.name, call.id, event_id, self.cut_off(turn, index)
        )
        token = _CURRENT_CALL.set(info)
        try:
            yield CallStep(info, f"tool:{turn}:{index}", self)
        finally:
            _CURRENT_CALL.reset(token)

    async def _started(self, step: str, name: str, *, wait: bool) -> None:
        if self._land is None:
            return
        data = {"tool_name": name}
        if wait:
            self.written = True
            self.found[step] = ("started", data)
            await self._land(step, "started", data)
        else:
            self._put(step, "started", data)

    def last_step(self) -> str | None:
        """The last finished step found ("turn 2, tool call 1", "turn 3 answer"), if any."""
        done = [step for step, (state, _) in self.found.items() if state == "done"]
        return describe_step(done[-1]) if done else None


@dataclass(frozen=True, slots=True)
class CallStep:
    """One tool call's step of a run: what the tool may read of it (``info``), and the
    journal write that must land before it runs."""

    info: ToolCallInfo
    step: str
    steps: RunSteps

    async def starting(self, *, idempotent: bool = False) -> None:
        """Journal that the call runs now (its outcome is unknown until it finished),
        waiting until that landed: a crash from here on never runs it again unasked. For an
        ``idempotent`` tool the mark is not waited for (run again after a crash, it does no
        harm)."""
        await self.steps._started(self.step, self.info.tool_name, wait=not idempotent)


def describe_step(step: str) -> str:
    """A step's name as a reader says it: ``model:2`` is "turn 2 answer", ``tool:2:0``
    "turn 2 tool call 1"."""
    parts = step.split(":")
    if parts[0] == "model":
        return f"turn {parts[1]} answer"
    return f"turn {parts[1]} tool call {int(parts[2]) + 1}"


async def unknown_outcome(
    emit: Callable[..., Awaitable[Any]],
    approval: ApprovalPolicy | None,
    tool: Tool,
    shown: dict[str, Any],
    info: ToolCallInfo,
    process_id: str,
) -> str | None:
    """Decide a call whose earlier attempt was cut off by a crash: None runs it again, else
    the error the model reads.

    An ``idempotent`` tool runs again. Otherwise ``permission_request`` fires with ``reason``
    ``UNKNOWN_OUTCOME`` (a hook may refuse), then the approval handler decides; with none, the
    call fails: the previous attempt may have taken effect. ``shown`` is the arguments as
    reviewers see them (secrets redacted).
    """
    if tool.idempotent:
        return None
    request = ApprovalRequest(
        tool.name, shown, process_id, event_id=info.event_id, reason=UNKNOWN_OUTCOME
    )
    gate = await permission_request(
        emit,
        tool.name,
        shown,
        request.request_id,
        reason=UNKNOWN_OUTCOME,
        idempotency_key=info.idempotency_key,
    )
    decision: ApprovalDecision
    handler = approval.handler if approval is not None else None
    if gate.blocked:
        decision = ApprovalDecision(False, None, gate.reason or "refused by a hook", "hook")
    elif handler is None:
        decision = ApprovalDecision(False, None, "no approval handler configured", "policy")
    else:
        assert approval is not None
        try:
            decision = await within(handler(request), approval.timeout)
        except Expired:
            decision = ApprovalDecision(False, None, "approval handler timed out", "timeout")
        except Exception as exc:
            decision = ApprovalDecision(False, None, f"approval handler failed: {exc!r}", "error")
    if decision.approved:
        return None
    reason = decision.reason or "denied by the reviewer"
    await permission_denied(
        emit, "approval", tool.name, reason, decision.decided_by, request_id=request.request_id
    )
    return (
        f"error: the call of {tool.name} was cut off by a crash of the host and its outcome is "
        f"unknown: the previous attempt may have taken effect, so it was not run again "
        f"({reason}); idempotency key {info.idempotency_key}"
    )
