"""The observer a process and its agent loop report to (telemetry implements it).

The layers below the API never import ``tether.telemetry``: they are handed an object of this
shape (``AgentProcess.observer``) and call it around each task, run, model call and tool call.
With none set, nothing is called and nothing is imported.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..hooks import HookManager, HookRun

__all__ = ["Note", "Observer"]


@dataclass(slots=True)
class Note:
    """What the observed code learns while a span is open, read by the observer at its end.

    ``outcome``: a task's (success, retrying, failed, blocked, dead_lettered), a model call's
    or a tool call's (ok, error, timed_out, refused, denied); ``error`` its redacted text;
    ``usage``: a model reply's token counts (``input``, ``output``, ``cached``); ``cost``: what
    the call cost by the process's pricing (None: not priced); ``traceparent``: the W3C
    context the observer gives a task once it is accepted (its retries join that trace).
    """

    outcome: str = "ok"
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    traceparent: str | None = None


class Observer(Protocol):
    """Receives what one runtime's processes do. Every method is called in the task doing it,
    so a span opened by one is the parent of what is done inside it."""

    def accepted(
        self,
        process: str,
        event_id: str,
        trigger_id: str,
        trigger_type: str,
        traceparent: str | None,
    ) -> AbstractContextManager[Note]:
        """Around ``inject``'s task_created dispatch; may set ``note.traceparent``."""
        ...

    def task(
        self,
        process: str,
        event_id: str,
        trigger_id: str,
        trigger_type: str,
        attempt: int,
        traceparent: str | None,
    ) -> AbstractContextManager[Note]:
        """Around one attempt of a task (its hooks, its run); the process sets the outcome."""
        ...

    def run(self, process: str, event_id: str) -> AbstractContextManager[Note]:
        """Around one agent run (model turns and tool calls)."""
        ...

    def model_call(self, process: str, model: str) -> AbstractContextManager[Note]:
        """Around one model call; ``note.usage`` holds the reply's token counts."""
        ...

    def tool_call(self, process: str, tool: str, call_id: str) -> AbstractContextManager[Note]:
        """Around one tool call, from its arguments' check to its result."""
        ...

    def hook_runs(self, process: str, hooks: HookManager, runs: list[HookRun]) -> None:
        """The runs of one dispatch, as they are recorded (``hooks``: the process's chain)."""
        ...

    def dead_lettered(self, process: str, reason: str) -> None:
        """An event of ``process`` was dead-lettered (``reason``: one of a fixed set)."""
        ...
