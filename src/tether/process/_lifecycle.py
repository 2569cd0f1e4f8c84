"""ProcessHooks: every hook point of a process, one typed method each, and the dispatch.

A reader learns here every lifecycle event a process dispatches and what its hooks receive
(the payload of each is the one the event table, ``tether.hooks._events``, declares):

==================  =====================================================================
session_start       restart, recovered                      (start, and each restart)
session_end         reason, invocation_count, process_usage (stop, and a crash)
task_created        event_id, trigger_id, trigger_type      (an event injected)
user_prompt_submit  prompt, event_id, trigger_id, trigger_type  (before a run)
task_completed      event_id, trigger_id, trigger_type, outcome, duration_ms, error,
                    run_usage, process_usage                (each attempt's end)
file_changed        path, event_type, ..., trigger_id, event_id  (a file-watch trigger)
config_change       source, change, and the change's details
subagent_start      process_name, execution_mode, trigger_count  (open mode's spawn)
subagent_stop       process_name, state
pre_compact         buffer_size, max_messages, dropping     (the conversation compacted)
post_compact        buffer_size, dropped
==================  =====================================================================

The agent loop dispatches the events of a run (tool and model calls, permission requests and
denials, agent_stop) through ``dispatch_in_worker``; a permission_denied of the process's own
(a guardrail, the budget) goes through it too (``tether.agent.permission_denied``).

Every dispatch redacts the data of declared secret values, and each hook's context names the
process. A task inside one of its hooks or runs that awaits the process's own start, stop,
restart or rewind would wait on itself: ProcessHooks knows those tasks, and ``guard`` raises
a clear error instead of a deadlock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ..hooks import HookEvent
from ._errors import ProcessStateError

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks import DispatchResult, HookContext, HookManager
    from ._event import TriggerEvent
    from ._state import LiveState

__all__ = ["ProcessHooks", "Watcher"]

logger = logging.getLogger("tether.process")

#: Told of each dispatch before it starts, in the dispatching task: answers what to call with
#: its result once it is over (None when it failed), or None. Live views use it (tether run).
Watcher = Callable[[str, "HookEvent"], "Callable[[DispatchResult | None], None] | None"]
#: A dispatch to await: every typed method hands one back (no coroutine of its own).
Dispatch = Awaitable["DispatchResult"]


class ProcessHooks:
    """The hook points of one process (see the module docstring) and their dispatch.

    ``metadata`` is the HookContext.metadata of every dispatch (the engine gives each hook its
    own copy); ``busy`` the process's map of the workers running an event now; ``live`` the
    process's state, whose ``running_loop`` (while it runs) spares each dispatch the getpid()
    system call asyncio.current_task() makes.
    """

    def __init__(
        self,
        name: str,
        manager: HookManager,
        redactor: Redactor,
        metadata: Mapping[str, str],
        *,
        busy: Mapping[asyncio.Task[None], str],
        live: LiveState,
    ) -> None:
        self.name = name
        #: The process's hook manager (its own hooks, its parent's, the shared).
        self.manager = manager
        self.redactor = redactor
        self._metadata = dict(metadata)
        self._busy = busy
        self._live = live
        #: The tasks dispatching a hook now, outside a worker (see ``guard``): made at the
        #: first such dispatch.
        self._dispatching: set[asyncio.Task[Any]] | None = None
        #: See Watcher (replaced as a whole); empty (the common case), a dispatch costs
        #: nothing more.
        self.watchers: tuple[Watcher, ...] = ()

    # -- the hook points -------------------------------------------------------------------

    def session_start(self, restart: bool, recovered: dict[str, Any] | None) -> Dispatch:
        """The process entered RUNNING (``restart``: again, after a stop or a crash);
        ``recovered`` says what the journal gave back."""
        return self.dispatch(HookEvent.SESSION_START, {"restart": restart, "recovered": recovered})

    def session_end(
        self, reason: str, invocation_count: int, process_usage: dict[str, Any]
    ) -> Dispatch:
        """A stop (``reason`` "stop") or a crash being supervised ("restart" or "stop"): its
        documented keys only (a crash's error is in status()["last_error"])."""
        return self.dispatch(
            HookEvent.SESSION_END,
            {
                "reason": reason,
                "invocation_count": invocation_count,
                "process_usage": process_usage,
            },
        )

    def task_created(self, event: TriggerEvent) -> Dispatch:
        """An event was injected; a block dead-letters it instead of queuing it."""
        return self.dispatch(HookEvent.TASK_CREATED, _trigger(event))

    def user_prompt_submit(self, event: TriggerEvent, prompt: str) -> Dispatch:
        """A worker's run of ``event`` is about to start with ``prompt`` (in a worker)."""
        return self.dispatch_in_worker(
            HookEvent.USER_PROMPT_SUBMIT, {"prompt": prompt, **_trigger(event)}
        )

    def task_completed(
        self,
        event: TriggerEvent,
        outcome: str,
        duration_ms: float,
        error: str | None,
        run_usage: dict[str, Any] | None,
        process_usage: dict[str, Any],
        *,
        worker: bool = False,
    ) -> Dispatch:
        """An attempt of ``event`` ended with ``outcome`` (see Outcomes.complete, its only
        caller); ``run_usage`` is None when no run was made. ``worker``: dispatched from
        inside a worker, which ``busy`` already marks."""
        data = {
            **_trigger(event),
            "outcome": outcome,
            "duration_ms": round(duration_ms, 3),
            "error": error,
            "run_usage": run_usage,
            "process_usage": process_usage,
        }
        dispatch = self.dispatch_in_worker if worker else self.dispatch
        return dispatch(HookEvent.TASK_COMPLETED, data)

    def file_changed(self, event: TriggerEvent) -> Dispatch:
        """A file-watch trigger saw a change (``event``, not injected yet): a block filters
        it out."""
        return self.dispatch(
            HookEvent.FILE_CHANGED,
            {**event.payload, "trigger_id": event.trigger_id, "event_id": event.event_id},
        )

    def config_change(self, source: str, change: str, details: Mapping[str, Any]) -> Dispatch:
        """A configuration change (or rewind) is about to apply; an agent's is refused by a
        block."""
        return self.dispatch(
            HookEvent.CONFIG_CHANGE, {"source": source, "change": change, **details}
        )

    def subagent_start(self, name: str, execution_mode: str, trigger_count: int) -> Dispatch:
        """A run spawns a child process ``name`` (in a worker); a block refuses the spawn."""
        return self.dispatch_in_worker(
            HookEvent.SUBAGENT_START,
            {
                "process_name": name,
                "execution_mode": execution_mode,
                "trigger_count": trigger_count,
            },
        )

    def subagent_stop(self, name: str, state: str) -> Dispatch:
        """The child process ``name`` stopped, in ``state``."""
        return self.dispatch(HookEvent.SUBAGENT_STOP, {"process_name": name, "state": state})

    def compaction(self, phase: str, data: dict[str, Any]) -> Awaitable[Any]:
        """pre_compact (``phase`` "pre") or post_compact of the conversation, with the data
        the conversation buffer documents (in a worker: a run compacts it)."""
        event = HookEvent.PRE_COMPACT if phase == "pre" else HookEvent.POST_COMPACT
        return self.dispatch_in_worker(event, data)

    # -- dispatch --------------------------------------------------------------------------

    def watch(self, watcher: Watcher) -> None:
        self.watchers += (watcher,)

    def unwatch(self, watcher: Watcher) -> None:
        """Forget ``watcher`` (once, if it watches twice; nothing if it does not watch)."""
        watchers = list(self.watchers)
        if watcher in watchers:
            watchers.remove(watcher)
            self.watchers = tuple(watchers)

    def listens(self, event: HookEvent) -> bool:
        """Whether a dispatch of ``event`` would reach a hook or a watcher."""
        return bool(self.watchers) or self.manager.listens(event)

    async def dispatch(self, event: HookEvent, data: dict[str, Any]) -> DispatchResult:
        """Dispatch ``event`` to the resolved chain with secrets redacted, noting the
        dispatching task (see ``guard``)."""
        data = self.redactor.declared.value(data)
        loop = self._live.running_loop
        task = asyncio.current_task() if loop is None else asyncio.current_task(loop)
        dispatch = self.manager.dispatch(event, data, process_id=self.name, metadata=self._metadata)
        if self.watchers:
            dispatch = self._watched(event, dispatch)
        if task is None or task in self._busy:  # a worker: busy already marks it
            return await dispatch
        dispatching = self._dispatching
        if dispatching is None:
            dispatching = self._dispatching = set()
        dispatching.add(task)
        try:
            return await dispatch
        finally:
            dispatching.discard(task)
            if not dispatching and self._dispatching is dispatching:
                self._dispatching = None  # an idle process holds none

    async def _watched(
        self, event: HookEvent, dispatch: Coroutine[Any, Any, DispatchResult]
    ) -> DispatchResult:
        ends = [end for watcher in self.watchers if (end := watcher(self.name, event))]
        result: DispatchResult | None = None
        try:
            result = await dispatch
            return result
        finally:
            for end in ends:
                try:
                    end(result)
                except Exception:  # a view must never break a dispatch
                    logger.debug("a dispatch watcher failed", exc_info=True)

    def dispatch_in_worker(
        self,
        event: HookEvent,
        data: dict[str, Any],
        *,
        context_factory: Callable[..., HookContext] | None = None,
    ) -> Coroutine[Any, Any, DispatchResult]:
        """``dispatch`` for code that only runs inside a worker, which ``busy`` already marks.

        A plain function handing back the dispatch to await: one coroutine less per event.
        ``context_factory`` builds the hooks' context (the agent loop's, for a tool call).
        """
        data = self.redactor.declared.value(data)
        dispatch = self.manager.dispatch(
            event,
            data,
            process_id=self.name,
            metadata=self._metadata,
            context_factory=context_factory,
        )
        return self._watched(event, dispatch) if self.watchers else dispatch

    def guard(self, what: str) -> None:
        """ProcessStateError when this task is inside a hook or run of the process: awaiting
        the process's ``what()`` would wait on itself."""
        task = asyncio.current_task()
        if task is not None and (task in (self._dispatching or ()) or task in self._busy):
            raise ProcessStateError(
                f"{what}() of process {self.name!r} was awaited from inside its own hook or run, "
                f"which would wait on itself; schedule it instead: "
                f"asyncio.create_task(process.{what}())"
            )


def _trigger(event: TriggerEvent) -> dict[str, Any]:
    """The keys every event-borne hook point starts with."""
    return {
        "event_id": event.event_id,
        "trigger_id": event.trigger_id,
        "trigger_type": event.trigger_type,
    }
