"""HookManager: registration, ordering and dispatch of lifecycle hooks and extension points.

Invariants kept here:

* Order is priority (highest first), ties in registration order; own hooks, then inherited
  managers (transitively, depth first), then the shared manager; then the hooks' before/after
  constraints (hooks/_order.py). The resolved chain is computed once and cached until any
  registration or chain link changes (a global generation counter).
* A dispatch works on the snapshot it took at its start: registrations made or removed while it
  runs take effect from the next dispatch. The one exception is ``once``: a once hook is removed
  before it runs and is skipped by any overlapping dispatch that still holds it.
* What one dispatch does is in hooks/_dispatch.py (the loop), what it keeps of its runs in
  hooks/_recording.py, and how each hook runs in its executor (hooks/_executor.py).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._bounded import Expired, within
from ._context import DRY_RUN_KEY, HookContext
from ._copy import copy_payload
from ._dispatch import Chain
from ._errors import HookTimeoutError
from ._events import HookEvent, parse_event
from ._executor import Executor, executor_for
from ._extension import ExtensionPoints
from ._hook import (
    DEPTH,
    UNSET,
    DispatchResult,
    Engine,
    HookErrorInfo,
    HookInfo,
    RunRecorder,
    _bump,
    _callable_name,
    _check_timeout,
    _dispatch_ids,
    _Hook,
    _ids,
    _is_async_callable,
    _key,
    _Removed,
    _Unset,
    generation,
)
from ._order import (
    DeclarationError,
    Misplaced,
    OrderError,
    check_names,
    declaration_problems,
    ordered,
)
from ._recording import (
    OFF,
    DispatchRecord,
    _Off,
    log_failure,
    log_listener_failure,
    not_a_dict,
)

if TYPE_CHECKING:
    from ._matcher import Matcher
    from .kinds._base import BaseHookConfig

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

    def __init__(
        self, default_timeout: float | None = None, *, loop_block_warn: float | None = None
    ) -> None:
        _check_timeout(default_timeout)
        if loop_block_warn is not None and (
            isinstance(loop_block_warn, bool)
            or not isinstance(loop_block_warn, int | float)
            or loop_block_warn <= 0
        ):
            raise ValueError(
                "loop_block_warn must be a number of seconds > 0 (or None), "
                f"got {loop_block_warn!r}"
            )
        self.default_timeout = default_timeout
        #: Seconds a hook's step may hold the event loop before a warning (None: only a hold
        #: past the hook's timeout is reported, and that one times the hook out).
        self.loop_block_warn = loop_block_warn
        # (The tuples and dicts here are replaced as a whole, or start empty: a process's
        # manager, one per process, holds none of its own until it has something to keep.)
        #: The hooks whose holding of the event loop was logged (it is logged once per hook).
        self._held_logged: tuple[str, ...] = ()
        #: How often a hook's step held the event loop in this manager's dispatches, by
        #: (event, kind): "timed_out" (past the hook's timeout) or "warned" (past
        #: ``loop_block_warn``). Only ever counts up (telemetry reads it after each dispatch).
        self.loop_blocks: dict[tuple[str, str], int] = {}
        self._hooks: dict[HookEvent | str, list[_Hook]] = {}
        self._by_id: dict[str, _Hook] = {}
        self._inherited: tuple[HookManager, ...] = ()
        self._shared: HookManager | None = None
        self._cache: dict[HookEvent | str, tuple[_Hook, ...]] = {}
        self._cache_gen = -1
        self._error_listeners: tuple[Callable[[HookErrorInfo], Any], ...] = ()
        #: Deferred extension-point calls (call_later): those not yet due and those running,
        #: with the point each calls.
        self._due: dict[asyncio.TimerHandle, str] = {}
        self._deferred: dict[asyncio.Task[Any], str] = {}
        #: While register_configs runs: the hooks it registered, whose order it checks at once.
        self._declaring: list[_Hook] | None = None
        self.recorder: RunRecorder | None = None
        #: Applied to the text of every logged hook error (the process sets its redactor).
        self.redact: Callable[[str], str] | None = None
        #: Replaces the declared secrets alone (the process sets it): a Claude Code hook that
        #: inherits the host environment gets no variable whose value holds one.
        self.redact_declared: Callable[[str], str] | None = None

    # -- chaining --------------------------------------------------------------------------

    def inherit(self, parent: HookManager) -> None:
        """Run ``parent``'s hooks (and what it inherited) after this manager's own."""
        if parent is self or self in parent._lineage():
            raise ValueError("a hook manager cannot inherit itself")
        if parent not in self._inherited:
            before, self._inherited = self._inherited, (*self._inherited, parent)
            _bump()
            try:
                self._check_links()
            except OrderError as exc:
                self._inherited = before
                _bump()
                raise ValueError(f"cannot inherit {parent!r}: {exc}") from None

    def share(self, shared: HookManager | None) -> None:
        """Run ``shared``'s hooks after own and inherited hooks (``None`` unsets it)."""
        if shared is self:
            raise ValueError("a hook manager cannot share itself")
        previous, self._shared = self._shared, shared
        _bump()
        try:
            self._check_links()
        except OrderError as exc:
            self._shared = previous
            _bump()
            raise ValueError(f"cannot share {shared!r}: {exc}") from None

    @property
    def shared(self) -> HookManager | None:
        return self._shared

    @property
    def inherited(self) -> tuple[HookManager, ...]:
        return self._inherited

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
        if self._cache_gen != generation.value:
            self._cache.clear()
            self._cache_gen = generation.value
        found = self._cache.get(key)
        if found is None:
            base = self._base_chain(key)
            try:
                found = ordered(base)
            except OrderError as exc:  # refused where declared; only a later link can make one
                logger.error("%s of %s; running them in priority order", exc, key)
                found = base
            self._cache[key] = found
        return found

    def _base_chain(self, key: HookEvent | str) -> tuple[_Hook, ...]:
        """Own, inherited and shared hooks of ``key``, each manager's by priority."""
        return tuple(h for m, _ in self._chain() for h in m._sorted(key))

    def _check_links(self) -> None:
        """After a change of inherited or shared managers: no chain has an order cycle."""
        keys = {key for m, _ in self._chain() for key in m._hooks}
        for key in keys:
            ordered(self._base_chain(key))

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
        before: Sequence[str] | None = None,
        after: Sequence[str] | None = None,
    ) -> str:
        """Register ``callback`` for a lifecycle event or a dotted extension point; return its id.

        Lifecycle hooks must be async callables taking one HookContext (a sync one raises
        TypeError); extension-point handlers may be sync or async. ``executor`` is what runs
        the hook (by default the callable's, see executor_for); its ``run`` is ``callback``.
        ``before``/``after`` name hooks of this event's chain (own, inherited, shared) this one
        must run ahead of / behind, whatever their priority; a name not in the chain, or a
        constraint that makes a cycle, is a ValueError.
        """
        key = _key(event)
        _check_registration(key, callback, timeout, priority, mode, fail_closed)
        ahead, behind = check_names(before, "before"), check_names(after, "after")
        compiled = None
        if matcher is not None:
            from ._matcher import Matcher as _M

            compiled = matcher if isinstance(matcher, _M) else _M.build(key, matcher)
        if executor is None:
            executor = executor_for(callback)
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
            before=ahead,
            after=behind,
        )
        self._hooks.setdefault(key, []).append(hook)
        self._by_id[hook_id] = hook
        _bump()
        if self._declaring is not None:  # register_configs checks the declaration as a whole
            self._declaring.append(hook)
            return hook_id
        try:
            self._check_order(key, hook)
        except ValueError:
            self._drop(hook)
            raise
        return hook_id

    def _check_order(self, key: HookEvent | str, hook: _Hook) -> None:
        """The names ``hook`` is ordered against are in its chain, and no cycle results."""
        chain = self._base_chain(key)
        names = {h.name for h in chain if h is not hook}
        for field, wanted in (("before", hook.before), ("after", hook.after)):
            unknown = [n for n in wanted if n not in names]
            if unknown:
                known = ", ".join(sorted(map(repr, names))) or "none"
                raise ValueError(
                    f"hook {hook.name!r}: {field} names {', '.join(map(repr, unknown))}, which no "
                    f"hook of {key}'s chain is called (declare it first); hooks there: {known} "
                    "(a chain holds this manager's hooks and those it inherits and shares, not "
                    "those of a manager that inherits or shares it)"
                )
        try:
            ordered(chain)
        except OrderError as exc:
            raise ValueError(f"hook {hook.name!r} cannot be registered: {exc}") from None

    def register_config(
        self, config: BaseHookConfig, *, source: str = "config", owner: object | None = None
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
            before=config.before or None,
            after=config.after or None,
        )

    def register_configs(
        self,
        configs: Sequence[BaseHookConfig],
        *,
        source: str = "config",
        owner: object | None = None,
    ) -> list[str]:
        """Register hooks declared together (a process's ``hooks``) as a whole; return their ids.

        A before/after name may be that of any hook of the list, declared before or after the
        one naming it, or of the chain (inherited and shared managers: link them first). An
        unknown name or a cycle is a DeclarationError (a ValueError) naming each hook and
        field at fault (``hooks[i].after``), and then none of the list is kept. Each hook's
        source is its declaration's (a manifest's), else ``source``.
        """
        if self._declaring is not None:
            raise RuntimeError("register_configs cannot be called from within itself")
        declared: list[_Hook] = []
        self._declaring = declared
        try:
            for config in configs:
                self.register_config(config, source=config._source or source, owner=owner)
            problems = self._declaration_problems(declared)
            if problems:
                raise DeclarationError(problems)
        except BaseException:
            for hook in declared:
                self._drop(hook)
            raise
        finally:
            self._declaring = None
        return [h.hook_id for h in declared]

    def _declaration_problems(self, declared: list[_Hook]) -> list[Misplaced]:
        """What is wrong with the order of ``declared`` (registered together) in its chains."""
        problems: list[Misplaced] = []
        for key in dict.fromkeys(h.event for h in declared):
            mine = [(i, h) for i, h in enumerate(declared) if h.event == key]
            others = [h for h in self._base_chain(key) if h not in declared]
            problems += declaration_problems(mine, others, str(key))
        return sorted(problems, key=lambda p: p.position)

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
        before: Sequence[str] | None = None,
        after: Sequence[str] | None = None,
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
                before=before,
                after=after,
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

    def listens(self, event: HookEvent | str) -> bool:
        """Whether a dispatch of ``event`` would find hooks to run (own, inherited or shared):
        a caller may skip building data nobody reads."""
        return bool(self._resolved(event if type(event) is HookEvent else parse_event(event)))

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
            _bump()  # a changed chain
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
        self._error_listeners += (listener,)
        return listener

    async def _report(self, info: HookErrorInfo, owner: Engine) -> None:
        listeners = list(self._error_listeners)
        if owner is not self:
            listeners += [fn for fn in owner._error_listeners if fn not in listeners]
        for fn in listeners:
            try:
                outcome = fn(info)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                log_listener_failure(logger, self.redact, fn, exc)

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
        hooks = self._resolved(ev)  # the snapshot this dispatch runs, whatever changes meanwhile
        payload = copy_payload(data) if data else {}
        if not hooks:
            return DispatchResult(0, False, None, [], payload, [])
        extra = dict(metadata) if metadata else {}
        if context_factory is None:
            ctx = HookContext(ev, process_id, payload, extra)
        else:
            ctx = context_factory(ev, process_id, payload, extra)
        if dry_run:  # hooks can tell (ctx.dry_run; command hooks: the metadata key)
            ctx.metadata[DRY_RUN_KEY] = True
            ctx._dry_run = True
        depth = DEPTH.get()
        recording = self._recording(recorder, ev, depth, ctx)
        chain = Chain(self, ev, recording)
        token = DEPTH.set(depth + 1)  # what the hooks dispatch is one level deeper
        try:
            await chain.run(hooks, ctx, data or {}, dry_run)
        finally:
            DEPTH.reset(token)
        if not isinstance(ctx.data, dict):  # a context_factory's data was no dict
            self._not_a_dict(chain, ctx)
            ctx.data = payload
        recording.close(chain.blocked)
        # A plain copy: what a hook kept of the data, or a task it started, cannot change the
        # result once the dispatch has returned. fired counts the hooks that ran without error.
        failed = len({id(h) for h, _ in chain.errors}) if chain.errors else 0
        errors = [(h.hook_id, e) for h, e in chain.errors] if chain.errors else []
        result = DispatchResult(
            chain.fired - failed,
            chain.blocked,
            chain.reason,
            errors,
            copy_payload(ctx.data),
            [],
            blocked_by=chain.blocked_by,
        )
        if chain.errors or chain.background or chain.blocked:
            await self._after(chain, hooks, ctx, depth, recording, data or {}, dry_run)
        return result

    def _not_a_dict(self, chain: Chain, ctx: HookContext) -> None:
        """A context_factory made data that is not a dict: the error of the last hook that ran
        on it (the result's data is the dispatch's own), or only logged when none ran."""
        if chain.last is None:
            logger.warning(
                "%s: the context factory's data is a %s, not a dict; the hooks' result is the "
                "data as dispatched",
                chain.event.value,
                type(ctx.data).__name__,
            )
            return
        broken = not_a_dict(chain.last, ctx)
        self._log_failure(chain.last, chain.event.value, broken)
        chain.errors.append((chain.last, broken))

    def _recording(
        self, recorder: RunRecorder | None, event: HookEvent, depth: int, ctx: HookContext
    ) -> DispatchRecord | _Off:
        """The record keeping of one dispatch: OFF unless a recorder is attached or given."""
        if recorder is None:
            recorder = self.recorder
            if recorder is None:
                return OFF
        data = ctx.data if isinstance(ctx.data, dict) else {}  # a factory's non-dict: an error
        number = next(_dispatch_ids)
        return DispatchRecord(number, self, event, depth, recorder=recorder, data=data)

    async def _after(
        self,
        chain: Chain,
        hooks: tuple[_Hook, ...],
        ctx: HookContext,
        depth: int,
        recording: DispatchRecord | _Off,
        event: dict[str, Any],
        dry_run: bool,
    ) -> None:
        """After the chain: queue (or, in a dry run, run) its async hooks, then tell the error
        listeners. Async hooks run blocked or not (an audit hook sees blocks too); a block
        stops the loop, so those ordered after the blocker are added here. They are queued
        before the listeners are awaited, which a cancellation may cut short."""
        background = chain.background
        if chain.blocked:
            background = [h for h in hooks if h.mode == "async" and h.enabled]
        if background:
            from ._background import run_inline, submit

            run_id, recorder = recording.dispatch_id, recording.recorder
            if dry_run:
                await run_inline(self, background, ctx, depth, recorder, run_id, event)
            else:
                submit(self, background, ctx, depth, recorder, run_id, event)
        for hook, error in chain.errors:
            info = HookErrorInfo(
                chain.event.value,
                hook.hook_id,
                hook.name,
                ctx.process_id,
                error,
                ctx,
                recording.dispatch_id,
            )
            await self._report(info, hook.manager)

    def _log_failure(self, hook: _Hook, event: str, exc: BaseException) -> None:
        """Log an isolated hook error; with ``redact`` set, secrets never reach the log."""
        log_failure(logger, self.redact, hook, event, exc)

    def _shown(self, hook: _Hook) -> str:
        """A hook's name for a log line (a command's is its command line: redacted)."""
        return hook.name if self.redact is None else self.redact(hook.name)

    def _warn_blocked(self, hook: _Hook, event: str, held: float, timeout: float | None) -> None:
        """Log, once per hook, that one of its steps held the event loop ``held`` seconds."""
        if hook.hook_id in self._held_logged:
            return
        self._held_logged += (hook.hook_id,)
        bound = f"its {timeout:g}s timeout" if timeout is not None else "no timeout"
        logger.warning(
            "hook %s (%s) blocked the event loop for %.3gs on %s (%s; logged once per hook): "
            "a blocking call in an async hook cannot be interrupted, use await or a thread",
            self._shown(hook),
            hook.hook_id,
            held,
            event,
            bound,
        )

    async def _bounded(self, hook: _Hook, awaitable: Awaitable[Any]) -> Any:
        """Await an extension-point handler's result within its timeout (a HookTimeoutError
        when it runs past it, whatever it made of its cancellation)."""
        timeout = self._timeout_of(hook)
        try:
            return await within(awaitable, timeout)
        except Expired as exc:
            raise HookTimeoutError(
                f"hook {hook.name!r} ({hook.hook_id}) timed out after {exc.timeout:g}s"
            ) from exc.__cause__

    def __repr__(self) -> str:
        return f"HookManager(hooks={len(self)}, default_timeout={self.default_timeout})"


def _check_registration(
    key: HookEvent | str,
    callback: Callable[..., Any],
    timeout: float | _Unset | None,
    priority: int,
    mode: str,
    fail_closed: bool,
) -> None:
    """Refuse a registration that cannot work, naming the field, the value and what is allowed."""
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


HookManager.__module__ = "tether"
DispatchResult.__module__ = "tether"
HookErrorInfo.__module__ = "tether"
HookInfo.__module__ = "tether"
