"""Extension points: named call sites in one flat, dotted namespace (``"ticket.classify"``).

``call`` runs every handler in priority order and returns their results (a failed handler's
slot is None, its error reported to the error listeners); ``firstresult`` stops at the first
non-None result; ``call_later`` defers a fire-and-forget call.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

from ._events import HookEvent
from ._hook import (
    CLOSING,
    HookErrorInfo,
    _cancelling,
    _Hook,
    _key,
    generation,
)

if TYPE_CHECKING:
    from ._hook import Engine

logger = logging.getLogger("tether.hooks")

__all__ = ["ExtensionPoints"]


class ExtensionPoints:
    """The extension-point half of HookManager (it shares the manager's registry)."""

    if TYPE_CHECKING:
        default_timeout: float | None
        redact: Callable[[str], str] | None
        _cache: dict[HookEvent | str, tuple[_Hook, ...]]
        _cache_gen: int
        _due: dict[asyncio.TimerHandle, str]
        _deferred: dict[asyncio.Task[Any], str]

        def _resolved(self, key: HookEvent | str) -> tuple[_Hook, ...]: ...

        async def _bounded(self, hook: _Hook, awaitable: Awaitable[Any]) -> Any: ...

        def _log_failure(self, hook: _Hook, event: str, exc: BaseException) -> None: ...

        async def _report(self, info: HookErrorInfo, owner: Engine) -> None: ...

    def _point(self, name: str) -> tuple[_Hook, ...]:
        # Hot path (the process looks up three extension points per run): a cached chain needs
        # no name validation, since only a validated name ever enters the cache.
        hooks = self._cache.get(name) if self._cache_gen == generation.value else None
        if hooks is None:
            key = _key(name)
            if isinstance(key, HookEvent):
                raise ValueError(f"{name!r} is a lifecycle event; use dispatch() for events")
            hooks = self._resolved(key)
        return hooks

    def implemented(self, name: str) -> bool:
        """Whether extension point ``name`` has an enabled handler (a call would run one)."""
        hooks = self._point(name)
        return bool(hooks) and any(hook.enabled for hook in hooks)

    async def call(self, name: str, *, firstresult: bool = False, **kwargs: Any) -> Any:
        """Call every handler of extension point ``name`` in priority order.

        Returns the list of results (a failed handler's slot is None, its error reported to the
        error listeners), or with ``firstresult`` the first non-None result (None if none).
        """
        return await self._multicall(name, kwargs, firstresult, None)

    async def call_first(
        self, name: str, accept: Callable[[Any], str | None], /, **kwargs: Any
    ) -> Any:
        """``call(name, firstresult=True)`` for a caller that needs one kind of answer: the
        first non-None result that ``accept`` takes (it answers None) is returned. A result it
        refuses (answering why) is that handler's error, logged and reported to the error
        listeners as any failure, and the next handler is asked: one handler answering the
        wrong thing never keeps a later one from answering."""
        return await self._multicall(name, kwargs, True, accept)

    async def _multicall(
        self,
        name: str,
        kwargs: dict[str, Any],
        firstresult: bool,
        accept: Callable[[Any], str | None] | None,
    ) -> Any:
        """The one loop behind ``call`` and ``call_first`` (as pluggy's ``_multicall``)."""
        results: list[Any] = []
        for hook in self._point(name):
            if not hook.enabled:
                continue
            try:
                value = hook.fn(**kwargs)
                if inspect.isawaitable(value):
                    value = await self._bounded(hook, value)
                if accept is not None and value is not None and (why := accept(value)) is not None:
                    raise TypeError(f"{name} answered {why}")
            except (Exception, asyncio.CancelledError, SystemExit) as exc:
                if not isinstance(exc, Exception) and _cancelling():
                    raise  # this task is being cancelled: not a handler error to isolate
                self._log_failure(hook, name, exc)
                info = HookErrorInfo(name, hook.hook_id, hook.name, "", exc)
                await self._report(info, hook.manager)
                value = None
            if not firstresult:
                results.append(value)
            elif value is not None:
                return value
        return None if firstresult else results

    def call_later(self, delay: float, name: str, **kwargs: Any) -> None:
        """Schedule a fire-and-forget call of extension point ``name`` after ``delay`` seconds.

        The delay is checked here, at call time: a negative, infinite or NaN delay (or a bool)
        is a ValueError, never a call that fires at once or never.
        """
        if (
            not isinstance(delay, int | float)
            or isinstance(delay, bool)
            or not 0 <= delay < math.inf
        ):
            raise ValueError(
                f"delay must be a number of seconds >= 0, got {delay!r}"
                + (" (it must be finite)" if isinstance(delay, float) and not delay < 0 else "")
            )
        key = _key(name)
        if isinstance(key, HookEvent):
            raise ValueError(f"{name!r} is a lifecycle event; use dispatch() for events")
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._due.pop(handle, None)
            task = loop.create_task(self.call(name, **kwargs), name=f"deferred call of {name}")
            self._deferred[task] = name
            task.add_done_callback(self._deferred_ended)

        handle = loop.call_later(delay, fire)
        self._due[handle] = name

    def _deferred_ended(self, task: asyncio.Task[Any]) -> None:
        """Forget a deferred call that ended. What its handlers raised past ``call`` (what no
        layer isolates) is logged here, through the manager's redactor: left to asyncio, it
        would be logged as raised, secrets and all."""
        name = self._deferred.pop(task, "?")
        if task.cancelled() or (exc := task.exception()) is None:
            return
        from ._recording import redacted_trace

        trace = redacted_trace(exc, self.redact or str)  # str: unredacted, as given
        logger.error("deferred call of %s failed\n%s", name, trace)

    async def aclose(self, keep: Collection[asyncio.Task[Any] | None] = ()) -> None:
        """Cancel deferred calls still pending: those not yet fired and those running (but
        the calling task, and those in ``keep``: a deferred call awaiting what closes this).
        Running ones are cancelled with the CLOSING message: no fault of their handlers.
        Then what the hooks' executors hold open is closed (see hooks/_resources.py)."""
        dropped = sorted(self._due.values())
        for handle in self._due:
            handle.cancel()
        self._due.clear()
        me = asyncio.current_task()
        tasks = [task for task in self._deferred if task is not me and task not in keep]
        for task in tasks:
            task.cancel(CLOSING)
        if dropped or tasks:
            # Fire-and-forget is not forget-silently: what the close ends is said once.
            logger.warning(
                "closing: %d deferred extension-point call(s) not yet due dropped%s, "
                "%d running cancelled%s",
                len(dropped),
                f" ({', '.join(dropped)})" if dropped else "",
                len(tasks),
                f" ({', '.join(sorted(t.get_name() for t in tasks))})" if tasks else "",
            )
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)
        # What the hooks' executors hold open (HTTP connections, persistent co-processes).
        from ._resources import close_resources

        await close_resources(self)
