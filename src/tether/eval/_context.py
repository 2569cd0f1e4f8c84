"""The scoped context a run-level hook receives, and the dispatch that contains its failures.

A hook never gets the process: it gets a RunContext with the data of its point (copies: what a
hook changes in them changes nothing the runner keeps) and three capabilities. ``converse`` is
valid only in ``on_run_scored`` and always under the framework's deadline; ``emit_artifact``
buffers a payload the runner writes beside the trace (hooks get no filesystem access);
``warn`` adds ``hook:<name>: <message>`` to the run's (or scenario's, or pack's) warnings.
Every capability ends when its handler returns.

Dispatch runs the active hooks in activation order, one at a time, each under its deadline;
an exception or a hang of one becomes a warning and the next hook runs.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..hooks import MAX_SLUG, SLUG, Plugin, PluginError

__all__ = [
    "CONVERSE_TIMEOUT_VAR",
    "HOOK_TIMEOUT_VAR",
    "Deadlines",
    "RunContext",
    "Scope",
    "dispatch",
]

logger = logging.getLogger("tether.eval")

CONVERSE_TIMEOUT_VAR: Final = "TETHER_HOOK_CONVERSE_TIMEOUT_S"
HOOK_TIMEOUT_VAR: Final = "TETHER_HOOK_TIMEOUT_S"
DEFAULT_CONVERSE_TIMEOUT: Final = 30.0
DEFAULT_HOOK_TIMEOUT: Final = 60.0
MAX_DEADLINE: Final = 3600.0
#: A converse turn ends this much before its handler's own deadline, so the handler still
#: gets its TimeoutError and can record it.
_MARGIN: Final = 0.5
_WARNING_CHARS: Final = 2000


def _seconds(name: str, default: float, environ: dict[str, str] | None = None) -> float:
    raw = (os.environ if environ is None else environ).get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_DEADLINE:
        raise ValueError(
            f"{name} must be a number of seconds, > 0 and at most {MAX_DEADLINE:g}, got {raw!r}"
        )
    return value


@dataclass(frozen=True, slots=True)
class Deadlines:
    """The framework's deadlines, read once per pack from the environment."""

    converse: float = DEFAULT_CONVERSE_TIMEOUT
    hook: float = DEFAULT_HOOK_TIMEOUT

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Deadlines:
        return cls(
            converse=_seconds(CONVERSE_TIMEOUT_VAR, DEFAULT_CONVERSE_TIMEOUT, environ),
            hook=_seconds(HOOK_TIMEOUT_VAR, DEFAULT_HOOK_TIMEOUT, environ),
        )

    def for_hook(self, plugin: Plugin) -> float:
        """A hook's deadline per point: its own ``timeout`` if it sets one, else the default."""
        own = plugin.timeout
        if isinstance(own, int | float) and not isinstance(own, bool) and 0 < own <= MAX_DEADLINE:
            return float(own)
        return self.hook


class Session(Protocol):
    """What the runner lends a context while the run's process is alive."""

    async def converse(self, text: str, timeout: float) -> str: ...

    def snapshot(self) -> dict[str, Any]: ...


@dataclass(slots=True)
class Scope:
    """Where a point's warnings and artifacts go: one run, one scenario, or the pack."""

    kind: str  # "run", "scenario" or "pack"
    warnings: list[str] = field(default_factory=list)
    #: (hook, label, payload, converse calls of the handler that emitted it)
    artifacts: list[tuple[str, str | None, Any, list[dict[str, Any]]]] = field(default_factory=list)


class RunContext:
    """What a run-level hook sees at one point, and what it may do there.

    Members absent at a point are None: ``trace`` and ``score`` from ``on_run_scored`` on,
    ``aggregate`` at ``on_scenario_end``, ``aggregates`` at ``on_pack_end``. They are copies.
    """

    __slots__ = (
        "_deadline",
        "_deadlines",
        "_live",
        "_plugin",
        "_scope",
        "_session",
        "agent",
        "aggregate",
        "aggregates",
        "converse_calls",
        "pack",
        "point",
        "run_id",
        "run_index",
        "scenario",
        "score",
        "session_id",
        "trace",
    )

    def __init__(
        self,
        point: str,
        plugin: Plugin,
        scope: Scope,
        deadlines: Deadlines,
        *,
        pack: str,
        agent: dict[str, Any] | None = None,
        scenario: dict[str, Any] | None = None,
        run_id: str | None = None,
        run_index: int | None = None,
        session_id: str | None = None,
        trace: dict[str, Any] | None = None,
        score: dict[str, Any] | None = None,
        aggregate: dict[str, Any] | None = None,
        aggregates: list[dict[str, Any]] | None = None,
        session: Session | None = None,
    ) -> None:
        self.point = point
        self.pack = pack
        self.agent = copy.deepcopy(agent)
        self.scenario = copy.deepcopy(scenario)
        self.run_id = run_id
        self.run_index = run_index
        self.session_id = session_id
        self.trace = copy.deepcopy(trace)
        self.score = copy.deepcopy(score)
        self.aggregate = copy.deepcopy(aggregate)
        self.aggregates = copy.deepcopy(aggregates)
        #: One record per converse call: timed_out, error, duration_ms, tools_disabled.
        self.converse_calls: list[dict[str, Any]] = []
        self._plugin = plugin
        self._scope = scope
        self._session = session
        self._deadlines = deadlines
        self._deadline: float | None = None
        self._live = True

    def __repr__(self) -> str:
        return f"<RunContext {self.point} of hook {self._plugin.name!r}>"

    @property
    def hook(self) -> str:
        """The name of the hook this context was made for."""
        return self._plugin.name

    def _check_live(self, capability: str) -> None:
        if not self._live:
            raise PluginError(
                f"hook {self.hook!r}: {capability}() on a context whose handler ({self.point}) "
                "has returned; a context is valid only while its handler runs"
            )

    def knob(self, key: str, default: str | None = None) -> str | None:
        """The hook's environment knob ``TETHER_<HOOKNAME>_<KEY>`` (``-`` read as ``_``)."""
        return os.environ.get(knob_name(self.hook, key), default)

    def snapshot(self) -> dict[str, Any]:
        """A copy of what the agent keeps between turns now: ``conversation`` (its messages)
        and ``state`` (its notes). Only while the scenario's process is alive (run points and
        ``on_provisioned``)."""
        self._check_live("snapshot")
        if self._session is None:
            raise PluginError(f"snapshot() has no agent to look at in {self.point}")
        return self._session.snapshot()

    def warn(self, message: str) -> None:
        """Add ``hook:<name>: <message>`` to the warnings of this point's run (its trace's
        ``worker_warnings``), scenario or pack. A warning never changes a score."""
        self._check_live("warn")
        self._scope.warnings.append(_warning(self.hook, str(message)))

    def emit_artifact(self, payload: Any, label: str | None = None) -> str:
        """Buffer a JSON-serialisable payload; the runner writes it beside the run's trace
        (``<stem>.<hook>[.<label>].json``), or at the folder's root for a scenario or the
        pack. Returns the artifact's key: ``<hook>`` or ``<hook>.<label>``."""
        self._check_live("emit_artifact")
        if label is not None and not (
            isinstance(label, str) and SLUG.fullmatch(label) and len(label) <= MAX_SLUG
        ):
            raise PluginError(
                f"artifact label must match [a-z0-9_-]+ (at most {MAX_SLUG} characters), "
                f"got {label!r}"
            )
        try:
            text = json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"artifact payload is not JSON-serialisable: {exc}") from None
        except RecursionError:
            raise PluginError("artifact payload is nested too deeply to store") from None
        if any(hook == self.hook and had == label for hook, had, _, _ in self._scope.artifacts):
            raise PluginError(
                f"hook {self.hook!r} already emitted an artifact labelled {label!r} here; "
                "give each artifact of one run its own label"
            )
        # A copy of the payload as it is now, and the list of converse calls (growing until the
        # handler returns: the stamp counts every call of the handler).
        self._scope.artifacts.append((self.hook, label, json.loads(text), self.converse_calls))
        return self.hook if label is None else f"{self.hook}.{label}"

    async def converse(self, text: str, *, timeout: float | None = None) -> str:
        """Send one turn into the run's own conversation and return the reply (only in
        ``on_run_scored``: the score and trace are frozen, the next reset has not begun).

        The turn is never added to the trace nor to the agent's conversation, and the
        agent's tools are off for it. It runs under the framework's deadline
        (``TETHER_HOOK_CONVERSE_TIMEOUT_S``, default 30 s; ``timeout`` may only shorten it):
        past it, TimeoutError is raised and a late reply is discarded.
        """
        if self.point != "on_run_scored":
            raise PluginError(f"converse() is valid only in on_run_scored, not in {self.point}")
        self._check_live("converse")
        if not isinstance(text, str) or not text.strip():
            raise PluginError(f"converse text must be a non-empty str, got {text!r}")
        limit = self._deadlines.converse
        if timeout is not None:
            if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
                raise PluginError(
                    f"converse timeout must be a number of seconds > 0, got {timeout!r}"
                )
            limit = min(limit, float(timeout))
        if self._deadline is not None:
            left = self._deadline - asyncio.get_running_loop().time()
            limit = max(min(limit, left - min(_MARGIN, left / 10)), 0.001)
        if self._session is None:
            raise PluginError("this context has no session to converse in")
        record: dict[str, Any] = {"timed_out": False, "error": None, "tools_disabled": True}
        started = time.perf_counter()
        try:
            return await self._session.converse(text, limit)
        except TimeoutError:
            record["timed_out"] = True
            raise
        except Exception as exc:
            record["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            record["duration_ms"] = round((time.perf_counter() - started) * 1e3, 3)
            self.converse_calls.append(record)


RunContext.__module__ = "tether.eval"


def knob_name(hook: str, key: str) -> str:
    """``TETHER_<HOOKNAME>_<KEY>``: the environment variable of one knob of a hook."""
    return f"TETHER_{hook.upper().replace('-', '_')}_{key.upper()}"


def _warning(hook: str, message: str) -> str:
    text = f"hook:{hook}: {message}"
    return text if len(text) <= _WARNING_CHARS else f"{text[:_WARNING_CHARS]}..."


#: Hook tasks abandoned at their deadline and not yet ended (a reference keeps each alive).
_ABANDONED: set[asyncio.Task[Any]] = set()


def _abandon(task: asyncio.Task[Any]) -> None:
    _ABANDONED.add(task)

    def ended(done: asyncio.Task[Any]) -> None:
        _ABANDONED.discard(done)
        if not done.cancelled():
            done.exception()  # read: a late failure is not logged as "never retrieved"

    task.add_done_callback(ended)


async def dispatch(
    point: str,
    hooks: list[Plugin],
    scope: Scope,
    deadlines: Deadlines,
    make: Callable[[Plugin], RunContext],
) -> None:
    """Call ``point`` on each hook defining it, in activation order, one after the other.

    Each call runs under its deadline in a task of its own: an exception becomes the warning
    ``hook:<name>: <error>`` (logged with the point), a call past its deadline is cancelled
    and abandoned (``... timed out after Ns``) and the dispatch goes on with the next hook.
    Nothing a hook does reaches the caller.
    """
    for plugin in hooks:
        method: Callable[[RunContext], Awaitable[Any]] | None = getattr(plugin, point, None)
        if method is None:
            continue
        ctx = make(plugin)
        seconds = deadlines.for_hook(plugin)
        loop = asyncio.get_running_loop()
        ctx._deadline = loop.time() + seconds
        task = loop.create_task(_call(method, ctx), name=f"hook:{plugin.name}.{point}")
        try:
            done, _ = await asyncio.wait((task,), timeout=seconds)
        except BaseException:
            task.cancel()  # the runner itself is cancelled: the hook goes with it
            _abandon(task)
            ctx._live = False
            raise
        ctx._live = False
        if not done:
            task.cancel()
            _abandon(task)
            scope.warnings.append(_warning(plugin.name, f"{point} timed out after {seconds:g}s"))
            continue
        if task.cancelled():
            scope.warnings.append(_warning(plugin.name, f"{point} was cancelled"))
            continue
        exc = task.exception()
        if exc is not None:  # the warning says the error (document 002); the log, the point
            logger.info("hook %s: %s failed: %r", plugin.name, point, exc)
            scope.warnings.append(_warning(plugin.name, repr(exc)))


async def _call(method: Callable[[RunContext], Awaitable[Any]], ctx: RunContext) -> None:
    """The hook's call, in a task of its own (one that swallows its cancellation at the
    deadline is abandoned by the caller, its late end discarded)."""
    try:
        await method(ctx)
    except SystemExit as exc:  # a hook's sys.exit() is its failure, never the runner's exit
        raise PluginError(f"called sys.exit({exc.code!r})") from None
