"""HookManager: registration, ordering and dispatch of lifecycle hooks and extension points.

Invariants kept here:

* Order is priority (highest first), ties in registration order; own hooks, then inherited
  managers (transitively, depth first), then the shared manager. The resolved chain is computed
  once and cached until any registration or chain link changes (a global generation counter).
* A dispatch works on the snapshot it took at its start: registrations made or removed while it
  runs take effect from the next dispatch. The one exception is ``once``: a once hook is removed
  before it runs and is skipped by any overlapping dispatch that still holds it.
* A hook that finishes without suspending costs no timer: its coroutine is stepped directly and a
  timeout is armed only when it actually suspends.
* No hook can leak into data it was not handed: hooks get a copy of the caller's data, the result
  gets a copy of theirs, and after a hook's error or timeout the later hooks get a copy of the
  data that hook (or a thread or task it left running) can no longer reach.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from types import CoroutineType
from typing import TYPE_CHECKING, Any, TypeVar

from . import _recording
from ._context import DRY_RUN_KEY, HookContext
from ._copy import _IMMUTABLE_SET, _copy_value, copy_payload
from ._errors import HookBlocked, HookTimeoutError
from ._events import BLOCKABLE_EVENTS, HookEvent, parse_event
from ._executor import Executor, executor_for
from ._extension import ExtensionPoints
from ._hook import (
    _SKIPPED,
    UNSET,
    DispatchResult,
    HookErrorInfo,
    HookInfo,
    _awaiting,
    _bump,
    _callable_name,
    _cancelling,
    _check_timeout,
    _depth,
    _generation,
    _Hook,
    _ids,
    _is_async_callable,
    _key,
    _new,
    _now,
    _number,
    _raise_timed_out,
    _Removed,
    _resume,
    _run_id,
    _snapshot,
    _unexplained,
    _Unset,
)
from ._recording import TimedOnce, _detach, _not_a_dict, _note_error, _replaced, _settle
from ._records import HEADER, RunRecorder
from ._tracked import _Tracked, track

if TYPE_CHECKING:
    from ._config import HookConfig
    from ._matcher import Matcher

__all__ = ["DispatchResult", "HookErrorInfo", "HookInfo", "HookManager"]

logger = logging.getLogger("tether.hooks")

HookCallback = Callable[[HookContext], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Any])


class HookManager(ExtensionPoints):
    """Holds hooks and dispatches events to them.

    ``default_timeout`` bounds hooks registered without a timeout of their own (``None``: no
    bound). A manager may inherit other managers and share one more; see :meth:`inherit` and
    :meth:`share`.
    """

    def __init__(self, default_timeout: float | None = None) -> None:
        _check_timeout(default_timeout)
        self.default_timeout = default_timeout
        self._hooks: dict[HookEvent | str, list[_Hook]] = {}
        self._by_id: dict[str, _Hook] = {}
        self._inherited: list[HookManager] = []
        self._shared: HookManager | None = None
        self._cache: dict[HookEvent | str, tuple[_Hook, ...]] = {}
        self._cache_gen = -1
        #: Timing (see _recording.note_timing): the streaks of fast dispatches that make a
        #: chain timed once (its cached tuple a TimedOnce).
        self._streaks: dict[HookEvent | str, int] = {}
        self._error_listeners: list[Callable[[HookErrorInfo], Any]] = []
        self._deferred: set[asyncio.Task[Any]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self.recorder: RunRecorder | None = None
        #: Applied to the text of every logged hook error (the process sets its redactor).
        self.redact: Callable[[str], str] | None = None

    # -- chaining --------------------------------------------------------------------------

    def inherit(self, parent: HookManager) -> None:
        """Run ``parent``'s hooks (and what it inherited) after this manager's own."""
        if parent is self or self in parent._lineage():
            raise ValueError("a hook manager cannot inherit itself")
        if parent not in self._inherited:
            self._inherited.append(parent)
            _bump()

    def share(self, shared: HookManager | None) -> None:
        """Run ``shared``'s hooks after own and inherited hooks (``None`` unsets it)."""
        if shared is self:
            raise ValueError("a hook manager cannot share itself")
        self._shared = shared
        _bump()

    @property
    def shared(self) -> HookManager | None:
        return self._shared

    @property
    def inherited(self) -> tuple[HookManager, ...]:
        return tuple(self._inherited)

    def _lineage(self) -> list[HookManager]:
        seen: list[HookManager] = []
        stack = [self]
        while stack:
            m = stack.pop(0)
            if m in seen:
                continue
            seen.append(m)
            stack[0:0] = m._inherited
        return seen

    def _chain(self) -> list[tuple[HookManager, str]]:
        chain: list[tuple[HookManager, str]] = []
        for m in self._lineage():
            chain.append((m, "own" if m is self else "inherited"))
        if self._shared is not None and all(m is not self._shared for m, _ in chain):
            chain.append((self._shared, "shared"))
        return chain

    def _resolved(self, key: HookEvent | str) -> tuple[_Hook, ...]:
        if self._cache_gen != _generation[0]:
            self._cache.clear()
            self._cache_gen = _generation[0]
            self._streaks.clear()  # a changed chain is timed per hook until found fast again
        found = self._cache.get(key)
        if found is None:
            found = tuple(h for m, _ in self._chain() for h in m._sorted(key))
            self._cache[key] = found
        return found

    def _sorted(self, key: HookEvent | str) -> list[_Hook]:
        hooks = self._hooks.get(key)
        if not hooks:
            return []
        return sorted(hooks, key=lambda h: (-h.priority, h.seq))

    # -- registration ----------------------------------------------------------------------

    def register(
        self,
        event: HookEvent | str,
        callback: Callable[..., Any],
        *,
        priority: int = 0,
        once: bool = False,
        tag: str | None = None,
        timeout: float | _Unset | None = UNSET,
        fail_closed: bool = False,
        owner: object | None = None,
        name: str | None = None,
        source: str = "code",
        mode: str = "sync",
        matcher: Matcher | dict[str, Any] | None = None,
        command: list[str] | str | None = None,
        executor: Executor | None = None,
    ) -> str:
        """Register ``callback`` for a lifecycle event or a dotted extension point; return its id.

        Lifecycle hooks must be async callables taking one HookContext (a sync one raises
        TypeError); extension-point handlers may be sync or async. ``executor`` is what runs
        the hook (by default the callable's, see executor_for); its ``run`` is ``callback``.
        """
        key = _key(event)
        is_event = isinstance(key, HookEvent)
        if not callable(callback):
            raise TypeError(f"hook callback must be callable, got {callback!r}")
        is_async = _is_async_callable(callback)
        if is_event and not is_async:
            raise TypeError(
                f"hook {_callable_name(callback)!r} for {key} must be an async function "
                "(async def) or an object with an async __call__; sync callables are not allowed"
            )
        _check_timeout(timeout)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"priority must be an int, got {priority!r}")
        if mode not in ("sync", "async"):
            raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
        if mode == "async" and fail_closed:
            raise ValueError("an async hook cannot be fail_closed: it runs after the event")
        if fail_closed and not is_event:
            raise ValueError(
                f"fail_closed applies to lifecycle events; {key!r} is an extension point, "
                "whose handlers' errors are isolated (see on_error)"
            )
        compiled = None
        if matcher is not None:
            from ._matcher import Matcher as _M

            compiled = matcher if isinstance(matcher, _M) else _M.build(key, matcher)
        if executor is None:
            executor = executor_for(callback, owner)
        if timeout is UNSET and executor.timeout is not None:
            # An executor with a timeout of its own (a command's program is killed at it): the
            # engine allows its backstop past it (which may pass MAX_TIMEOUT, checked above).
            timeout = executor.timeout + executor.backstop
        hook_id = f"hook-{next(_ids)}"
        hook = _Hook(
            hook_id=hook_id,
            event=key,
            fn=callback,
            executor=executor,
            priority=priority,
            seq=next(_ids),
            once=once,
            tag=tag,
            timeout=timeout,
            fail_closed=fail_closed,
            owner=owner,
            manager=self,
            name=name or _callable_name(callback),
            source=source,
            mode=mode,
            matcher=compiled,
            command=command,
        )
        self._hooks.setdefault(key, []).append(hook)
        self._by_id[hook_id] = hook
        _bump()
        return hook_id

    def register_config(
        self, config: HookConfig, *, source: str = "config", owner: object | None = None
    ) -> str:
        """Register a HookConfig: its kind's executor is built and registered."""
        executor = config.executor(self)
        timeout: float | _Unset = UNSET  # an executor with a timeout of its own: bounded by it
        if executor.timeout is None:
            timeout = config.timeout if config.timeout is not None else config.default_timeout
        return self.register(
            config.event,
            executor.run,
            priority=config.priority,
            once=config.once,
            tag=config.tag,
            timeout=timeout,
            fail_closed=config.fail_closed,
            owner=owner,
            name=config.name or getattr(executor, "name", None),
            source=source,
            mode=config.mode,
            matcher=config.matcher,
            command=getattr(config, "command", None),
            executor=executor,
        )

    def on(
        self,
        event: HookEvent | str,
        *,
        priority: int = 0,
        once: bool = False,
        tag: str | None = None,
        timeout: float | _Unset | None = UNSET,
        fail_closed: bool = False,
        owner: object | None = None,
        name: str | None = None,
        mode: str = "sync",
        matcher: Matcher | dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Decorator form of :meth:`register`; returns the function unchanged."""

        def decorate(fn: F) -> F:
            self.register(
                event,
                fn,
                priority=priority,
                once=once,
                tag=tag,
                timeout=timeout,
                fail_closed=fail_closed,
                owner=owner,
                name=name,
                mode=mode,
                matcher=matcher,
            )
            return fn

        return decorate

    def _drop(self, hook: _Hook) -> bool:
        if self._by_id.pop(hook.hook_id, None) is None:
            return False
        bucket = self._hooks.get(hook.event)
        if bucket is not None:
            bucket.remove(hook)
            if not bucket:
                del self._hooks[hook.event]
        _bump()
        return True

    async def remove(self, hook_id: str) -> bool:
        """Remove one hook; True if it was registered."""
        hook = self._by_id.get(hook_id)
        return hook is not None and self._drop(hook)

    async def remove_by_tag(self, tag: str) -> int:
        """Remove every hook with this tag; return how many."""
        if not isinstance(tag, str):
            raise TypeError(f"tag must be a string, got {tag!r} (untagged hooks have no tag)")
        return sum(self._drop(h) for h in list(self._by_id.values()) if h.tag == tag)

    def remove_owner(self, owner: object) -> _Removed:
        """Remove every hook registered with this owner at once; return how many (awaitable)."""
        return _Removed(sum(self._drop(h) for h in list(self._by_id.values()) if h.owner is owner))

    def registered(self, event: HookEvent | str | None = None) -> list[str]:
        """Hook ids of this manager's own hooks, for one event or all, in run order."""
        if event is None:
            return [h.hook_id for key in list(self._hooks) for h in self._sorted(key)]
        return [h.hook_id for h in self._sorted(_key(event))]

    def clear(self, event: HookEvent | str | None = None) -> None:
        """Remove all own hooks, or all own hooks of one event."""
        if event is None:
            self._hooks.clear()
            self._by_id.clear()
        else:
            for hook in self._hooks.pop(_key(event), []):
                self._by_id.pop(hook.hook_id, None)
        _bump()

    def set_enabled(self, selector: str, enabled: bool, *, chain: bool = False) -> int:
        """Enable or disable hooks by id or tag without removing them; return how many.

        With ``chain`` every manager of the resolved chain is searched (inherited and shared
        ones too). A hook lives in one manager: disabling an inherited or shared hook disables
        it for every manager whose chain runs it.
        """
        managers = [m for m, _ in self._chain()] if chain else [self]
        hooks: list[_Hook] = []
        for m in managers:
            if selector in m._by_id and m._by_id[selector] not in hooks:
                hooks.append(m._by_id[selector])
            hooks += [h for h in m._by_id.values() if h.tag == selector and h not in hooks]
        for hook in hooks:
            hook.enabled = enabled
        if hooks:
            _bump()  # a changed chain: timed per hook again (see _resolved)
        return len(hooks)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, hook_id: object) -> bool:
        return hook_id in self._by_id

    def describe(self, event: HookEvent | str | None = None) -> list[HookInfo]:
        """The resolved chain (own, inherited, shared) as read-only records, in run order."""
        keys: Iterable[HookEvent | str]
        if event is not None:
            keys = [_key(event)]
        else:
            seen: dict[HookEvent | str, None] = {}
            for m, _ in self._chain():
                seen.update(dict.fromkeys(m._hooks))
            keys = list(seen)
        sources = {id(m): role for m, role in self._chain()}
        out: list[HookInfo] = []
        for key in keys:
            for order, h in enumerate(self._resolved(key)):
                role = sources.get(id(h.manager), "own")
                timeout = bound = self._timeout_of(h)
                own = h.executor.timeout
                if own is not None:  # the declared one, not the engine's backstop past it
                    timeout = own if bound is None else min(own, bound)
                out.append(
                    HookInfo(
                        hook_id=h.hook_id,
                        event=str(key),
                        name=h.name,
                        priority=h.priority,
                        order=order,
                        timeout=timeout,
                        fail_closed=h.fail_closed,
                        once=h.once,
                        tag=h.tag,
                        source=h.source if role == "own" else role,
                        mode=h.mode,
                        enabled=h.enabled,
                        matcher=h.matcher.as_dict() if h.matcher is not None else None,
                        command=h.command,
                        owner=getattr(h.owner, "name", None) if h.owner is not None else None,
                        executor_kind=h.executor.kind,
                        protocol=getattr(h.executor, "protocol", None),
                    )
                )
        return out

    def _timeout_of(self, hook: _Hook) -> float | None:
        t = hook.timeout
        if t is UNSET:
            t = hook.manager.default_timeout
            if t is None:
                t = self.default_timeout
        assert not isinstance(t, _Unset)
        return t

    # -- errors ----------------------------------------------------------------------------

    def on_error(self, listener: Callable[[HookErrorInfo], Any]) -> Callable[[HookErrorInfo], Any]:
        """Call ``listener(info)`` for every isolated hook error (sync or async listener)."""
        self._error_listeners.append(listener)
        return listener

    async def _report(self, info: HookErrorInfo, owner: HookManager) -> None:
        listeners = list(self._error_listeners)
        if owner is not self:
            listeners += [fn for fn in owner._error_listeners if fn not in listeners]
        for fn in listeners:
            try:
                outcome = fn(info)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                _recording.log_listener_failure(logger, self.redact, fn, exc)

    # -- dispatch --------------------------------------------------------------------------

    async def dispatch(
        self,
        event: HookEvent | str,
        data: dict[str, Any] | None = None,
        *,
        process_id: str = "",
        metadata: dict[str, Any] | None = None,
        context_factory: Callable[..., HookContext] | None = None,
        recorder: RunRecorder | None = None,
        dry_run: bool = False,
    ) -> DispatchResult:
        """Run the resolved chain for ``event`` on a copy of ``data``; never raises hook errors.

        ``recorder`` overrides the manager's run recorder for this dispatch; ``dry_run`` keeps
        once hooks registered and runs async hooks inline (for tracing a chain).
        """
        ev = event if type(event) is HookEvent else parse_event(event)
        # The cache check of _resolved, inlined: this is the hot path.
        hooks = self._cache.get(ev) if self._cache_gen == _generation[0] else None
        if hooks is None:
            hooks = self._resolved(ev)
        if recorder is None:
            recorder = self.recorder
        # Recording costs one clock reading per hook (per dispatch, for a chain timed once):
        # marks gets the end time of each hook that ran (0.0 when its chain is timed once, None
        # for one that did not run), preceded by notes on anything not plain about it (an
        # outcome, a write to the data, a skip, a snapshot when tracing). The data notes its
        # own writes into marks (see _tracked); the recorder expands marks into HookRuns off
        # the hot path. Only ``marks`` is read when nothing records: the rest is bound below.
        if recorder is None or not hooks:
            if data:  # copy_payload, its all-immutable fast path inlined
                payload = data.copy()
                for value in payload.values():
                    if type(value) not in _IMMUTABLE_SET:
                        payload = copy_payload(data)
                        break
            else:
                payload = {}
            if not hooks:  # built field by field, as below: the commonest dispatch
                empty = _new(DispatchResult)
                empty.fired = 0
                empty.blocked = False
                empty.blocked_by = None
                empty.reason = None
                empty.errors = []
                empty.data = payload  # a copy of its own, as with hooks
                empty.runs = []
                return empty
            marks: list[Any] | None = None
            t0 = _now()
        else:  # recorded: the copy is made of containers that note their writes in marks
            t0 = _now()
            depth = _depth[0]  # one deeper from the loop on (raised there: nothing before it)
            # marks[0]: the dispatch's number, given when wanted (_number); then the start, the
            # manager, event, depth, chain and first snapshot (see _history); the hooks' marks.
            marks = [None, t0, self, ev, depth, hooks, None]
            bare = HEADER + len(hooks)  # marks' length if no hook leaves a note (see below)
            # track(), its all-immutable fast path inlined (a call is ~0.02 us of the budget)
            if data:
                payload = _Tracked(data)
                payload._marks = marks
                for value in data.values():
                    if type(value) not in _IMMUTABLE_SET:
                        payload = track(data, marks)
                        bare = -1
                        marks[1] = t0 = _now()  # a deep copy is not the first hook's time
                        break
            else:
                payload = _Tracked()
                payload._marks = marks
        if context_factory is None:
            # Hot path: the context is built slot by slot, skipping the class call and
            # HookContext.__init__ (~0.1 us of a ~1.5 us dispatch). Keep in step with
            # HookContext.__slots__ (a test checks that every slot is set).
            ctx = _new(HookContext)
            ctx.event = ev
            ctx.process_id = process_id
            ctx.data = payload
            ctx.metadata = dict(metadata) if metadata else {}
            ctx._timestamp = None
            ctx._dry_run = dry_run
            # Runs are dated and timed on the wall clock, as tracing systems do: the context's
            # own timestamp is the start, so recording adds one clock reading per hook only.
            ctx._epoch = t0
        else:
            ctx = context_factory(ev, process_id, payload, dict(metadata) if metadata else {})
            if marks is not None:
                if type(ctx.data) is not _Tracked and isinstance(ctx.data, dict):  # its own
                    ctx.data = track(ctx.data, marks)
                marks[1] = t0 = _now()  # nor is the factory's
        if dry_run:  # hooks can tell (ctx.dry_run; command hooks: the metadata key)
            ctx.metadata[DRY_RUN_KEY] = True
            ctx._dry_run = True
        # After each hook, ``ctx.data is watched`` tells that it left the data it was handed
        # (the one check per hook both paths make): a non-dict is undone and is that hook's
        # error, a new dict is the data from then on (tracked, when recorded).
        watched: dict[str, Any] | None
        if marks is None:
            depth = 0
            watched = ctx.data
            quick = False
        else:
            tracked: _Tracked
            watched = tracked = ctx.data  # type: ignore[assignment]
            if dry_run:
                # Tracing (a dry run's recorder keeping each hook's data) fails the per-hook
                # check every time: the snapshot is taken on the slow path of a new dict.
                trace = recorder.trace  # type: ignore[union-attr]
                if trace:
                    watched = None
                    marks[6] = _snapshot(tracked)
                quick = False
            else:
                trace = False
                # A chain found fast is timed once, at its end (its hooks share the time, and
                # their records say so); any other reads the clock after each hook.
                quick = type(hooks) is TimedOnce
            suspended = False
            _depth[0] = depth + 1  # put back when the loop ends, however it ends
        blocked = False
        blocker: _Hook | None = None
        reason: str | None = None
        errors: list[tuple[_Hook, BaseException]] | None = None
        background: list[_Hook] | None = None
        fired = 0
        try:
            # With a recorder, each hook's marks (after the header) end with its end time.
            for hook in hooks:
                if not hook.enabled:
                    if marks is not None:
                        marks.append(None)
                    continue
                if hook.mode == "async":
                    if background is None:
                        background = []
                    background.append(hook)
                    if marks is not None:
                        marks.append(None)
                    continue
                # Matched against the event as dispatched, not as earlier hooks rewrote it (the
                # process reads no matched field back): none can switch a later hook off or on.
                if hook.matcher is not None and not hook.matcher.matches(data or {}):
                    if marks is not None:
                        marks.append(_SKIPPED)
                        marks.append(0.0 if quick else _now())
                    continue
                if hook.once:
                    if hook.spent:
                        if marks is not None:
                            marks.append(None)
                        continue
                    if not dry_run:
                        hook.spent = True
                        hook.manager._drop(hook)
                fired += 1
                try:
                    coro = hook.executor.run(ctx)
                    if type(coro) is not CoroutineType:  # another awaitable (or none at all)
                        coro = _awaiting(coro)  # stepped as one: no timer unless it suspends
                    # A for loop steps the coroutine: it sees the hook return without the
                    # StopIteration a send() raises (~80 ns a hook). Its body runs only if the
                    # hook suspended: then, and only then, its timeout is armed.
                    for pending in coro.__await__():
                        timeout = self._timeout_of(hook)
                        at = -1
                        if marks is not None:  # others may run while this hook is suspended
                            _depth[0] = at = depth
                            suspended = True
                            if quick:  # it, the hooks after it and the chain: per hook
                                quick = _recording.suspends(self, ev, marks)
                        try:
                            if timeout is None:
                                await _resume(coro, pending, at)
                            else:
                                try:
                                    async with asyncio.timeout(timeout) as scope:
                                        await _resume(coro, pending, at)
                                    if scope.expired():  # the hook swallowed its cancellation
                                        raise TimeoutError
                                except Exception as exc:
                                    if scope.expired():
                                        _raise_timed_out(hook, timeout, exc)
                                    raise
                        finally:
                            if marks is not None:
                                _depth[0] = depth + 1
                        break
                except HookBlocked as exc:
                    if ev in BLOCKABLE_EVENTS:
                        if not exc.reason:  # a refusal always says why, as a command hook's does
                            exc = _unexplained(hook)
                        blocked = True
                        blocker = hook
                        reason = exc.reason
                        if marks is not None:  # the record keeps the reason: a block's "why"
                            marks.append(("o", "blocked", exc))
                    else:
                        logger.warning(
                            "hook %s (%s) tried to block %s, which cannot be blocked; ignored",
                            hook.name if self.redact is None else self.redact(hook.name),
                            hook.hook_id,
                            ev.value,
                        )
                except (Exception, asyncio.CancelledError, SystemExit) as exc:  # sys.exit() too
                    if not isinstance(exc, Exception) and _cancelling():
                        raise  # this task is being cancelled: not a hook error to isolate
                    if marks is not None:
                        timed_out = isinstance(exc, HookTimeoutError) or getattr(
                            exc, "timed_out", False
                        )
                        marks.append(("o", "timed_out" if timed_out else "failed", exc))
                    self._log_failure(hook, ev.value, exc)
                    if errors is None:
                        errors = []
                    errors.append((hook, exc))
                    _detach(ctx)  # what the hook may still hold no longer reaches the data
                    if hook.fail_closed and ev in BLOCKABLE_EVENTS:
                        blocked = True
                        blocker = hook
                        reason = f"hook failed (fail_closed): {str(exc) or type(exc).__name__}"
                if ctx.data is not watched:  # replaced (a non-dict is undone), or tracing
                    if marks is None:
                        watched, bad = _replaced(ctx, watched, hook)  # type: ignore[arg-type]
                    else:
                        tracked, bad = _settle(ctx, tracked, marks, hook, trace)
                        watched = None if trace else tracked
                    if bad is not None:
                        errors = _note_error(errors, hook, bad, self, ev.value)
                if marks is not None:  # ends the hook's notes (see _tracked); 0.0: timed later
                    marks.append(0.0 if quick else _now())
                if blocked:
                    break
        finally:
            if marks is not None:
                _depth[0] = depth
        # What a context_factory made was no dict (the loop undoes a hook's non-dict).
        if context_factory is not None and not isinstance(ctx.data, dict):
            broken = _not_a_dict(hook, ctx)
            ctx.data = payload
            errors = _note_error(errors, hook, broken, self, ev.value)
        # Built field by field for the same reason as the context (a test checks every field).
        result = _new(DispatchResult)
        # fired counts the hooks that ran without error: one that raised or timed out is only
        # in errors.
        result.fired = fired if errors is None else fired - len({id(h) for h, _ in errors})
        result.blocked = blocked
        result.blocked_by = None if blocker is None else blocker.name
        result.reason = reason
        result.errors = [] if errors is None else [(h.hook_id, e) for h, e in errors]
        result.runs = []
        # The result's data is a plain copy (copy_payload): what a hook kept of the data, or a
        # task it started, cannot change the result once the dispatch has returned.
        if marks is None:  # copy_payload, inlined: one top-level copy
            final = ctx.data.copy()
            for key, value in final.items():
                if type(value) not in _IMMUTABLE_SET:
                    final[key] = _copy_value(value)
        else:
            # Flat data no hook wrote to (no note in marks: a chain run to its end, as a
            # block's notes could make up for the hooks it cut off; the dispatch's own dict) is
            # flat still: a shallow copy is a deep one. A write around the data's methods
            # (dict.__setitem__(ctx.data, ...), ctx.data.__init__(...)) goes unnoted, uncopied.
            untouched = len(marks) == bare and ctx.data is payload and not blocked
            if fired or _SKIPPED in marks:  # a hook ran, or was skipped: recorded
                if quick:  # the shared hooks' end (see _history._steps), read inline: hot path
                    end = _now()
                    marks.append(("e", end))
                    if end - t0 > _recording.SLOW:  # perhaps slow: timed per hook again
                        _recording.note_slow(self, ev, end - t0, fired)
                elif fired > 1 and not suspended and not dry_run:
                    _recording.note_timing(self, ev, hooks, marks, t0, fired)
                recorder.add(marks)  # type: ignore[union-attr]
            final = ctx.data.copy() if untouched else copy_payload(ctx.data)
        result.data = final
        # Async hooks run after the chain, blocked or not: an audit hook sees refusals too
        # (a block stops the loop, so the async hooks ordered after the blocker are added here).
        # They are queued before the error listeners are awaited, which a cancellation may cut.
        if blocked:
            background = [h for h in hooks if h.mode == "async" and h.enabled] or None
        if background is not None:
            from ._background import run_inline, submit

            run_id = _run_id(0 if marks is None else _number(marks))
            if dry_run:
                await run_inline(self, background, ctx, depth, recorder, run_id, data or {})
            else:
                submit(self, background, ctx, depth, recorder, run_id, data or {})
        if errors is not None:
            for h, e in errors:
                await self._report(
                    HookErrorInfo(ev.value, h.hook_id, h.name, process_id, e), h.manager
                )
        return result

    def _log_failure(self, hook: _Hook, event: str, exc: BaseException) -> None:
        """Log an isolated hook error; with ``redact`` set, secrets never reach the log."""
        _recording.log_failure(logger, self.redact, hook, event, exc)

    async def _resume_bounded(
        self, hook: _Hook, coro: Coroutine[Any, Any, Any], pending: Any
    ) -> Any:
        """Finish a coroutine that suspended once (yielding ``pending``), within its timeout."""
        if self._timeout_of(hook) is None:
            return await _resume(coro, pending)
        return await self._await_bounded(hook, _resume(coro, pending))

    async def _await_bounded(self, hook: _Hook, awaitable: Awaitable[Any]) -> Any:
        timeout = self._timeout_of(hook)
        try:
            async with asyncio.timeout(timeout) as scope:
                value = await awaitable
            if scope.expired():  # the hook swallowed its cancellation
                raise TimeoutError
            return value
        except Exception as exc:
            if scope.expired():
                _raise_timed_out(hook, timeout, exc)
            raise

    def __repr__(self) -> str:
        return f"HookManager(hooks={len(self)}, default_timeout={self.default_timeout})"


HookManager.__module__ = "tether"
DispatchResult.__module__ = "tether"
HookErrorInfo.__module__ = "tether"
HookInfo.__module__ = "tether"
