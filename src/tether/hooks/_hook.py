"""The pieces HookManager is built from: a registration record, the dispatch's data and
result types, small helpers the dispatch loop and extension points share, and the two
protocols its parts are typed by: :class:`Engine` (the manager as they see it) and
:class:`RunRecorder` (what receives each hook run).

The parts (dispatch loop, background runs, recording, history, kinds, plugins) are handed
the manager and type it by ``Engine``: none imports hooks/_manager.py, which imports them.

Module state (the id counters and the registration generation) lives here so that every
manager shares it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import os
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

from ._errors import HookBlocked
from ._events import _BY_VALUE, VALID_EVENT_VALUES, HookEvent, parse_event
from ._limits import check_timeout
from ._records import HookRun

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._context import HookContext
    from ._executor import Executor
    from ._matcher import Matcher
DEFAULT_COMMAND_TIMEOUT: Final = 5.0
DEFAULT_CALLBACK_TIMEOUT: Final = 30.0

_ids = itertools.count(1)
_dispatch_ids = itertools.count(1)
#: Dispatch ids are unique across interpreters too (history outlives a process).
_RUN_PREFIX: Final = os.urandom(4).hex()  # eight random hex digits
#: How deep the running code is nested in dispatches: a dispatch runs its hooks one deeper, so
#: a dispatch made by a hook (or a background hook of a dispatch) records its depth. A context
#: variable: each task sees its own, so a hook suspended in one task lends nothing to another.
DEPTH: Final[contextvars.ContextVar[int]] = contextvars.ContextVar(
    "tether_dispatch_depth", default=0
)


class _Generation:
    """A counter every registration change bumps: caches of resolved chains (and of the
    secrets their hooks hold) compare it with the value they were built at."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        self.value += 1


#: Shared by every manager: a change anywhere may change any chain (inherited, shared ones).
generation: Final = _Generation()


def _bump() -> None:
    generation.bump()


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


#: "Not given" where ``None`` already means "no timeout".
UNSET: Final = _Unset()


class _Removed(int):
    """A count that can also be awaited (``n = m.remove_owner(o)`` or ``await ...``)."""

    def __await__(self) -> Generator[Any, None, int]:
        return self
        yield  # pragma: no cover - makes this a generator


@dataclass(slots=True)
class DispatchResult:
    """What one dispatch did."""

    fired: int = 0
    blocked: bool = False
    reason: str | None = None
    errors: list[tuple[str, BaseException]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    runs: list[HookRun] = field(default_factory=list)
    #: The name of the hook that blocked (by refusing, or failing while fail_closed).
    blocked_by: str | None = None


@dataclass(frozen=True, slots=True)
class HookErrorInfo:
    """Delivered to error listeners for every isolated hook error (and extension-point error).

    ``context`` is the context of the dispatch the hook failed in (its event, the data as the
    chain left it, its metadata; None for an extension point's error) and ``dispatch_id`` that
    dispatch's id in the run history ("" when it was not recorded); neither is compared.
    """

    event: str
    hook_id: str
    hook_name: str
    process_id: str
    error: BaseException
    context: HookContext | None = field(default=None, compare=False, repr=False)
    dispatch_id: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class HookInfo:
    """A read-only description of one registration, for catalogs.

    ``timeout`` is the one the hook was declared with (or the default it got): for a command
    hook, the program's own, not the engine's bound (which allows a backstop past it).
    ``executor_kind`` says what runs the hook: one of EXECUTOR_KINDS (hooks/kinds/_registry.py);
    ``protocol``, for a command hook, what its program reads and answers ("tether" or
    "claude-code"; None for other kinds).
    """

    hook_id: str
    event: str
    name: str
    priority: int
    order: int
    timeout: float | None
    fail_closed: bool
    once: bool
    tag: str | None
    source: str
    mode: str
    enabled: bool
    matcher: dict[str, list[str]] | None
    command: list[str] | str | None
    owner: str | None
    executor_kind: str
    protocol: str | None = None


def run_prefix() -> str:
    """The prefix of this interpreter's dispatch ids (hook ids, unlike them, repeat across
    interpreters: ``hook-3`` of an earlier run of the runtime was another registration)."""
    return _RUN_PREFIX


def _run_id(number: int) -> str:
    """The printable id of dispatch ``number`` (unique across interpreters too)."""
    return f"{_RUN_PREFIX}-{number}" if number else ""


class _Hook:
    """One registration: what runs (its executor), when (event, matcher, order) and how."""

    __slots__ = (
        "after",
        "before",
        "command",
        "enabled",
        "event",
        "executor",
        "fail_closed",
        "fn",
        "hook_id",
        "manager",
        "matcher",
        "mode",
        "name",
        "once",
        "owner",
        "priority",
        "seq",
        "source",
        "spent",
        "tag",
        "timeout",
    )

    def __init__(
        self,
        *,
        hook_id: str,
        event: HookEvent | str,
        fn: Callable[..., Any],
        executor: Executor,
        priority: int,
        seq: int,
        once: bool,
        tag: str | None,
        timeout: float | _Unset | None,
        fail_closed: bool,
        owner: object | None,
        manager: Engine,
        name: str,
        source: str,
        mode: str,
        matcher: Matcher | None,
        command: list[str] | str | None,
        before: tuple[str, ...] = (),
        after: tuple[str, ...] = (),
    ) -> None:
        self.hook_id = hook_id
        self.event = event
        self.fn = fn
        self.executor = executor
        self.priority = priority
        self.seq = seq
        self.once = once
        #: A once hook that has run (or been queued): overlapping dispatches skip it.
        self.spent = False
        self.tag = tag
        #: The engine's bound around the executor's run (UNSET: the manager's default).
        self.timeout = timeout
        self.fail_closed = fail_closed
        self.owner = owner
        self.manager = manager
        self.name = name
        self.source = source
        self.mode = mode
        self.matcher = matcher
        self.enabled = True
        self.command = command
        #: Names of the hooks this one runs ahead of / behind (see hooks/_order.py).
        self.before = before
        self.after = after


def _unexplained(hook: _Hook) -> HookBlocked:
    """The block of a hook that raised HookBlocked without a reason: it names the hook."""
    return HookBlocked(f"blocked by hook {hook.name!r} (it gave no reason)")


def _cancelling() -> bool:
    """Whether the running task is being cancelled (rather than a hook meeting a CancelledError)."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


#: The message of the cancellation with which an owner ends the work it runs because it stops
#: (a process stopping cancels its runs, trigger tasks and last hooks; ``aclose()`` its deferred
#: calls). A handler cancelled so is at no fault of its own: a plugin's is not reported failed.
CLOSING: Final = "tether: cancelled by the stop of its owner"


def closing(exc: BaseException) -> bool:
    """Whether ``exc`` is a cancellation with the CLOSING message (not a timeout's, say)."""
    return isinstance(exc, asyncio.CancelledError) and CLOSING in exc.args


def _is_async_callable(fn: object) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - we need the class's __call__
    return call is not None and inspect.iscoroutinefunction(call)


def _callable_name(fn: object) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__qualname__
    return str(name)


def _check_timeout(timeout: float | _Unset | None) -> None:
    if timeout is not UNSET and timeout is not None:
        check_timeout(timeout)


def _key(name: HookEvent | str) -> HookEvent | str:
    """A lifecycle event, or a dotted extension-point name."""
    if isinstance(name, HookEvent):
        return name
    if isinstance(name, str) and "." in name and name.strip(".") == name and " " not in name:
        looks_like = _BY_VALUE.get(name.replace(".", "_").replace("-", "_").lower())
        if looks_like is not None:  # "user_prompt.submit": a misspelt event, not a new point
            raise ValueError(
                f"{name!r} is not a hook event (did you mean {looks_like.value!r}?) and cannot "
                f"be an extension point name: it would shadow that event; valid events are: "
                f"{VALID_EVENT_VALUES}"
            )
        return name
    try:
        return parse_event(name)
    except ValueError as exc:
        if not isinstance(name, str):
            raise
        raise ValueError(
            f"{exc}; an extension point name is dotted, with no spaces and no leading or "
            "trailing dot (e.g. 'ticket.classify')"
        ) from None


class RunRecorder(Protocol):
    """Receives every hook execution of the dispatches of the manager it is attached to."""

    trace: bool

    def ran(
        self,
        manager: Engine,
        hook: _Hook,
        ctx: HookContext,
        depth: int,
        outcome: str,
        started: float,
        error: BaseException | None,
        before: dict[str, Any],
        dispatch_id: str = "",
    ) -> None: ...

    # ``record`` is a DispatchRecord (hooks/_recording.py, which builds on this module).
    def add(self, record: Any) -> None:
        """Keep the runs of one dispatch (see hooks/_recording.py)."""

    def skipped(
        self, manager: Engine, hook: _Hook, ctx: HookContext, depth: int, dispatch_id: str = ""
    ) -> None: ...


class Engine(Protocol):
    """A HookManager as the parts it is built from see it (hooks/_manager.py is the one
    implementation). The private members are the manager's internals its own package shares."""

    default_timeout: float | None
    loop_block_warn: float | None
    loop_blocks: dict[tuple[str, str], int]
    recorder: RunRecorder | None
    redact: Callable[[str], str] | None
    redact_declared: Callable[[str], str] | None
    _by_id: dict[str, _Hook]
    _error_listeners: tuple[Callable[[HookErrorInfo], Any], ...]

    @property
    def _shared(self) -> Engine | None: ...

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
    ) -> str: ...

    def remove_owner(self, owner: object) -> int: ...

    def on_error(
        self, listener: Callable[[HookErrorInfo], Any]
    ) -> Callable[[HookErrorInfo], Any]: ...

    def _chain(self) -> Sequence[tuple[Engine, str]]: ...

    def _resolved(self, key: HookEvent | str) -> tuple[_Hook, ...]: ...

    def _drop(self, hook: _Hook) -> bool: ...

    def _timeout_of(self, hook: _Hook) -> float | None: ...

    def _shown(self, hook: _Hook) -> str: ...

    def _log_failure(self, hook: _Hook, event: str, exc: BaseException) -> None: ...

    def _warn_blocked(
        self, hook: _Hook, event: str, held: float, timeout: float | None
    ) -> None: ...

    async def _report(self, info: HookErrorInfo, owner: Engine) -> None: ...
