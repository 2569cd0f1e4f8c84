"""A process's hook dispatches, and which tasks are inside its hooks and runs.

Every lifecycle event of a process goes through its Emitter: the data is redacted of declared
secret values, and each hook's context names the process. A task inside one of its hooks or
runs that awaits the process's own start, stop, restart or rewind would wait on itself: the
Emitter knows those tasks, and ``guard`` raises a clear error instead of a deadlock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ._errors import ProcessStateError

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..hooks import DispatchResult, HookContext, HookEvent, HookManager

__all__ = ["Emitter", "Watcher"]

logger = logging.getLogger("tether.process")

#: Told of each dispatch before it starts, in the dispatching task: answers what to call with
#: its result once it is over (None when it failed), or None. Live views use it (tether run).
Watcher = Callable[[str, "HookEvent"], "Callable[[DispatchResult | None], None] | None"]


class Emitter:
    """Dispatches one process's hook events (see the module docstring).

    ``metadata`` is the HookContext.metadata of every dispatch (the engine gives each hook its
    own copy); ``busy`` the process's map of the workers running an event now; ``loop`` the
    loop it runs in, if running: asking it for the current task spares each dispatch the
    getpid() system call asyncio.current_task() makes.
    """

    def __init__(
        self,
        name: str,
        hooks: HookManager,
        redactor: Redactor,
        metadata: Mapping[str, str],
        *,
        busy: Mapping[asyncio.Task[None], str],
        loop: Callable[[], asyncio.AbstractEventLoop | None],
    ) -> None:
        self.name = name
        self.hooks = hooks
        self.redactor = redactor
        self._metadata = dict(metadata)
        self._busy = busy
        self._loop = loop
        self._dispatching: set[asyncio.Task[Any]] = set()
        #: See Watcher; empty (the common case), a dispatch costs nothing more.
        self.watchers: list[Watcher] = []

    def listens(self, event: HookEvent) -> bool:
        """Whether a dispatch of ``event`` would reach a hook or a watcher."""
        return bool(self.watchers) or self.hooks.listens(event)

    async def emit(self, event: HookEvent, data: dict[str, Any]) -> DispatchResult:
        """Dispatch ``event`` to the resolved chain with secrets redacted, noting the
        dispatching task (see ``guard``)."""
        data = self.redactor.declared.value(data)
        loop = self._loop()
        task = asyncio.current_task() if loop is None else asyncio.current_task(loop)
        dispatch = self.hooks.dispatch(event, data, process_id=self.name, metadata=self._metadata)
        if self.watchers:
            dispatch = self._watched(event, dispatch)
        if task is None or task in self._busy:  # a worker: busy already marks it
            return await dispatch
        self._dispatching.add(task)
        try:
            return await dispatch
        finally:
            self._dispatching.discard(task)

    async def _watched(
        self, event: HookEvent, dispatch: Coroutine[Any, Any, DispatchResult]
    ) -> DispatchResult:
        ends = [end for watcher in list(self.watchers) if (end := watcher(self.name, event))]
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

    def emit_worker(
        self,
        event: HookEvent,
        data: dict[str, Any],
        *,
        context_factory: Callable[..., HookContext] | None = None,
    ) -> Coroutine[Any, Any, DispatchResult]:
        """``emit`` for code that only runs inside a worker, which ``busy`` already marks.

        A plain function handing back the dispatch to await: one coroutine less per event.
        ``context_factory`` builds the hooks' context (the agent loop's, for a tool call).
        """
        data = self.redactor.declared.value(data)
        dispatch = self.hooks.dispatch(
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
        if task is not None and (task in self._dispatching or task in self._busy):
            raise ProcessStateError(
                f"{what}() of process {self.name!r} was awaited from inside its own hook or run, "
                f"which would wait on itself; schedule it instead: "
                f"asyncio.create_task(process.{what}())"
            )
