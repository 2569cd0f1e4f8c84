"""Durable approvals: the requests a process's runs wait on, answered by the approval handler
in code or by an operator (``answer``: the API, ``tether approvals``), whichever comes first.

A request is known by its tool call's idempotency key (the same after a crash) and journaled
with what it asks (arguments redacted) while it waits: ``status()["awaiting_approval"]`` lists
it, before a restart and after one (the next process over the journal loads it). An operator's
answer to a request whose run is not waiting (the run has not reached the call again since a
restart) is journaled with it, and the run takes it when it gets there. The policy's timeout
still ends the wait (the loop bounds the whole request); a request decided, or whose wait
ended, is forgotten.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent import current_tool_call
from ..approval import ApprovalDecision, ApprovalPolicy, ApprovalRequest

if TYPE_CHECKING:
    from ..store import StepJournal
    from ._journaling import JournalWrites

__all__ = ["ApprovalDesk"]


@dataclass(slots=True)
class _Request:
    key: str
    #: What it asks: request_id, tool_name, arguments (redacted), event_id, reason, asked_at.
    shown: dict[str, Any]
    decision: ApprovalDecision | None = None
    waiter: asyncio.Future[ApprovalDecision] | None = None


class ApprovalDesk:
    """The approvals of one process (see the module docstring); ``store`` None: in memory."""

    def __init__(self, store: StepJournal | None, writes: JournalWrites) -> None:
        self._store = store
        self._writes = writes
        self._requests: dict[str, _Request] = {}

    def load(self) -> None:
        """Take the approvals journaled by the process before (first start over the file)."""
        if self._store is None:
            return
        for key, shown, decided in self._store.approvals():
            decision = None if decided is None else ApprovalDecision(**decided)
            self._requests.setdefault(key, _Request(key, shown, decision))

    def pending(self) -> list[dict[str, Any]]:
        """What each request not answered yet asks, oldest first."""
        return [dict(r.shown) for r in self._requests.values() if r.decision is None]

    def policy(self, policy: ApprovalPolicy | None) -> ApprovalPolicy | None:
        """``policy`` with its handler raced against operators' answers (unchanged when it
        has no handler and does not wait for an operator)."""
        if policy is None or (policy.handler is None and not policy.operator):
            return policy
        return policy.model_copy(update={"handler": self._decider(policy.handler)})

    def answer(
        self, request_id: str, approved: bool, reason: str | None, reviewer: str | None
    ) -> dict[str, Any] | None:
        """An operator's answer to ``request_id``; what it asked, or None when no request
        of that id waits for an answer."""
        found = next(
            (
                r
                for r in self._requests.values()
                if r.shown["request_id"] == request_id and r.decision is None
            ),
            None,
        )
        if found is None or (found.waiter is not None and found.waiter.done()):
            return None
        decision = ApprovalDecision(approved, reviewer, reason, reviewer or "operator")
        if found.waiter is not None:
            found.waiter.set_result(decision)
        else:  # its run is not waiting (yet): it takes the answer when it gets there
            found.decision = decision
            self._journal(found)
        return dict(found.shown)

    def _decider(self, handler: Any) -> Any:
        async def decide(request: ApprovalRequest) -> ApprovalDecision:
            info = current_tool_call()
            key = info.idempotency_key if info is not None else request.request_id
            found = self._requests.get(key)
            if found is not None and not _same_call(found.shown, request):
                found = None  # the model asked another call there after a restart
            if found is None:
                found = self._requests[key] = _Request(key, _shown(request))
                self._journal(found)
            try:
                if found.decision is not None:  # answered while its run was not waiting
                    return found.decision
                found.waiter = asyncio.get_running_loop().create_future()
                return await self._first(handler, request, found.waiter)
            finally:
                found.waiter = None
                self._requests.pop(key, None)
                if self._store is not None:
                    self._writes.write(key, self._store.forget_approval, key)

        return decide

    @staticmethod
    async def _first(
        handler: Any, request: ApprovalRequest, answered: asyncio.Future[ApprovalDecision]
    ) -> ApprovalDecision:
        """The handler's decision or an operator's, whichever comes first."""
        if handler is None:
            return await answered
        asking = asyncio.ensure_future(handler(request))
        asking.add_done_callback(_retrieved)
        try:
            done, _ = await asyncio.wait({asking, answered}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not asking.done():
                asking.cancel()  # an operator answered first, or the wait ended
        decision: ApprovalDecision = answered.result() if answered in done else asking.result()
        return decision

    def _journal(self, request: _Request) -> None:
        if self._store is None:
            return
        decision = request.decision
        decided = (
            None
            if decision is None
            else {
                "approved": decision.approved,
                "reviewer_id": decision.reviewer_id,
                "reason": decision.reason,
                "decided_by": decision.decided_by,
            }
        )
        self._writes.write(
            request.key, self._store.save_approval, request.key, request.shown, decided
        )


def _retrieved(task: asyncio.Future[Any]) -> None:
    """Read the outcome of a handler's task (its error is the loop's to report, or moot)."""
    if not task.cancelled():
        task.exception()


def _same_call(shown: dict[str, Any], request: ApprovalRequest) -> bool:
    return bool(shown["tool_name"] == request.tool_name and shown["arguments"] == request.arguments)


def _shown(request: ApprovalRequest) -> dict[str, Any]:
    return {
        "request_id": request.request_id,
        "tool_name": request.tool_name,
        "arguments": request.arguments,
        "event_id": request.event_id,
        "reason": request.reason,
        "asked_at": time.time(),
    }
