"""AgentRuntime: many agent processes, one shared HookManager.

Errors (both also ``ValueError``, for callers that catch that)::

    ProcessError
    ├── ProcessExistsError   a process of that name is already in the runtime (you asked twice)
    └── WebhookClashError    two webhook triggers would answer on the same port and path
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import os
import sys
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ._public import published
from ._redact import Redactor, redacted_trace
from .hooks import HookManager, close_resources
from .process import AgentProcess, ProcessConfig, ProcessError, TriggerEvent, WebhookTrigger

if TYPE_CHECKING:
    from .manifest import AgentManifest
    from .telemetry import Telemetry

__all__ = ["AgentRuntime", "ProcessExistsError", "WebhookClashError", "WebhookRoute"]

logger = logging.getLogger("tether.runtime")

#: ``listener(change, process)`` with change "added" or "removed".
Listener = Callable[[str, AgentProcess], Awaitable[None] | None]


class ProcessExistsError(ProcessError, ValueError):
    """The runtime already holds a process of that name."""


class WebhookClashError(ProcessError, ValueError):
    """A webhook trigger would answer on a port and path another trigger already serves."""


class WebhookRoute:
    """One webhook trigger of one process, as the webhook server serves it."""

    __slots__ = ("process", "trigger", "trigger_id")

    def __init__(self, process: AgentProcess, trigger_id: str, trigger: WebhookTrigger) -> None:
        self.process = process
        self.trigger_id = trigger_id
        self.trigger = trigger

    def __repr__(self) -> str:
        return (
            f"WebhookRoute({self.process.name!r}, {self.trigger_id!r}, "
            f"{self.trigger.webhook_host}:{self.trigger.webhook_port}{self.trigger.webhook_path})"
        )


#: One webhook trigger in the index: (process name, trigger id).
_Entry = tuple[str, str]
#: The route table webhook_routes() answers: (host, port) -> path -> route.
RouteTable = Mapping[tuple[str, int], Mapping[str, WebhookRoute]]
_K = TypeVar("_K")


class _WebhookIndex:
    """The webhook triggers of a runtime's processes, by port and by (port, path), kept as
    processes are added and removed and as their triggers change: a check or a request's
    lookup costs the same at any number of processes.

    Entries keep the order they were indexed in (a process's triggers in its order, processes
    as added; a trigger a process gains later goes last). Where two triggers clash (only
    triggers added past the runtime's check can), the earliest indexed is served.
    """

    def __init__(self) -> None:
        self._of: dict[str, list[WebhookRoute]] = {}
        self._on_port: dict[int, OrderedDict[_Entry, WebhookRoute]] = {}
        self._on_path: dict[tuple[int, str], OrderedDict[_Entry, WebhookRoute]] = {}
        self._listeners: Counter[tuple[str, int]] = Counter()
        #: Built by table() when asked for; dropped at each change, never per request.
        self._table: RouteTable | None = None

    def put(self, process: AgentProcess) -> None:
        """Index ``process``'s webhook triggers as they are now (again, after a change): those
        it kept keep their place."""
        before = {(r.trigger_id, id(r.trigger)): r for r in self._of.pop(process.name, ())}
        now = {(i, id(t)): (i, t) for i, t in process.webhook_triggers}
        for key in before.keys() - now.keys():
            self._drop(before[key])
        routes: list[WebhookRoute] = []
        for key, (trigger_id, trigger) in now.items():
            route = before.get(key)
            if route is None:
                route = WebhookRoute(process, trigger_id, trigger)
                self._add(route)
            routes.append(route)
        if routes:
            self._of[process.name] = routes

    def remove(self, name: str) -> None:
        """Forget the webhook triggers of the process ``name``."""
        for route in self._of.pop(name, ()):
            self._drop(route)

    def _add(self, route: WebhookRoute) -> None:
        t, entry = route.trigger, (route.process.name, route.trigger_id)
        self._on_port.setdefault(t.webhook_port, OrderedDict())[entry] = route
        self._on_path.setdefault((t.webhook_port, t.webhook_path), OrderedDict())[entry] = route
        self._listeners[(t.webhook_host, t.webhook_port)] += 1
        self._table = None

    def _drop(self, route: WebhookRoute) -> None:
        t, entry = route.trigger, (route.process.name, route.trigger_id)
        _discard(self._on_port, t.webhook_port, entry)
        _discard(self._on_path, (t.webhook_port, t.webhook_path), entry)
        listener = (t.webhook_host, t.webhook_port)
        self._listeners[listener] -= 1
        if self._listeners[listener] <= 0:
            del self._listeners[listener]
        self._table = None

    def route(self, host: str, port: int, path: str) -> WebhookRoute | None:
        """The route a request to ``host:port`` for ``path`` takes, if any."""
        for route in self._on_path.get((port, path), {}).values():
            if route.trigger.webhook_host == host:
                return route
        return None

    def listeners(self) -> set[tuple[str, int]]:
        """Every (host, port) some webhook trigger answers on."""
        return set(self._listeners)

    def table(self) -> RouteTable:
        """Every route by (host, port) and path (read-only; built once per change)."""
        if self._table is None:
            table: dict[tuple[str, int], dict[str, WebhookRoute]] = {}
            for (port, path), entries in self._on_path.items():
                for route in entries.values():
                    key = (route.trigger.webhook_host, port)
                    table.setdefault(key, {}).setdefault(path, route)
            self._table = MappingProxyType({k: MappingProxyType(v) for k, v in table.items()})
        return self._table

    def check(self, triggers: Iterable[tuple[str, WebhookTrigger]], owner: str) -> None:
        """WebhookClashError if one of ``triggers`` (of the process ``owner``, replacing those
        it has) would answer where another trigger does, or on a port another host holds."""
        taken: dict[tuple[int, str], str] = {}
        hosts: dict[int, tuple[str, str]] = {}
        for trigger_id, t in triggers:
            where = (t.webhook_port, t.webhook_path)
            holder = taken.get(where) or self._holder(where, owner)
            if holder is not None:
                raise WebhookClashError(
                    f"webhook trigger {owner}/{trigger_id}: path {t.webhook_path} on port "
                    f"{t.webhook_port} is already served by {holder}"
                )
            host = self._host(t.webhook_port, owner) or hosts.get(t.webhook_port)
            if host is not None and host[0] != t.webhook_host:
                raise WebhookClashError(
                    f"webhook trigger {owner}/{trigger_id}: port {t.webhook_port} already "
                    f"listens on {host[0]} (for {host[1]}), not on {t.webhook_host}"
                )
            taken[where] = f"{owner}/{trigger_id}"
            hosts.setdefault(t.webhook_port, (t.webhook_host, f"{owner}/{trigger_id}"))

    def _holder(self, where: tuple[int, str], owner: str) -> str | None:
        """The latest trigger of another process than ``owner`` on (port, path)."""
        for name, trigger_id in reversed(self._on_path.get(where, OrderedDict())):
            if name != owner:
                return f"{name}/{trigger_id}"
        return None

    def _host(self, port: int, owner: str) -> tuple[str, str] | None:
        """The host ``port`` listens on, and the first trigger (not ``owner``'s) there."""
        for (name, trigger_id), route in self._on_port.get(port, {}).items():
            if name != owner:
                return route.trigger.webhook_host, f"{name}/{trigger_id}"
        return None


def _discard(table: dict[_K, OrderedDict[_Entry, WebhookRoute]], key: _K, entry: _Entry) -> None:
    entries = table[key]
    del entries[entry]
    if not entries:
        del table[key]


class AgentRuntime:
    """Holds processes by name; ``hooks`` (a shared manager) runs for every one of them.

    A process added while the runtime runs starts at once. Usable as an async context manager:
    ``async with AgentRuntime() as rt: ...`` starts every process and stops them on exit.
    Iterating yields the processes in the order they were added.
    """

    def __init__(
        self, hooks: HookManager | None = None, *, telemetry: Telemetry | None = None
    ) -> None:
        self.hooks = hooks if hooks is not None else HookManager()
        #: Observes every process added (spans, metrics: see tether.telemetry); None: off.
        self.telemetry = telemetry
        self._from_global: Telemetry | None = None  # see _global_telemetry
        if telemetry is not None:
            telemetry.watch(lambda: [p.status() for p in self])
        self._processes: dict[str, AgentProcess] = {}
        # The webhook triggers of the processes in _processes, kept with it (see _hold).
        self._webhooks = _WebhookIndex()
        self._listeners: list[Listener] = []
        #: value -> name of the secrets of the processes removed: an error raised after (a
        #: stop's, a listener's) may still carry one.
        self._retired: dict[str, str] = {}
        self._started_at: float | None = None
        self.running = False
        #: This host's part of a cluster: the tether.cluster.ClusterNode that set it when it
        #: started, or None. Typed ``object`` because the cluster sits above the runtime.
        self.cluster: object | None = None

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<AgentRuntime {state} processes={sorted(self._processes)}>"

    def __iter__(self) -> Iterator[AgentProcess]:
        return iter(list(self._processes.values()))

    def __len__(self) -> int:
        return len(self._processes)

    def __contains__(self, name: object) -> bool:
        return name in self._processes

    def get(self, name: str) -> AgentProcess | None:
        """The process called ``name``, or None."""
        return self._processes.get(name)

    @property
    def processes(self) -> dict[str, AgentProcess]:
        """A copy of the name -> process mapping."""
        return dict(self._processes)

    def redact(self, text: str) -> str:
        """``text`` with the secrets of every process this runtime holds (or held) redacted:
        for an error no one process owns (an API request's, a listener's) before it is logged."""
        pairs = [pair for p in list(self._processes.values()) for pair in p.redactor.known()]
        pairs += [(name, value) for value, name in self._retired.items()]
        return Redactor(pairs).text(text) if pairs else text

    def on_change(self, listener: Listener) -> Listener:
        """Call ``listener(change, process)`` after a process is added or removed (errors are
        logged, never raised)."""
        self._listeners.append(listener)
        return listener

    def off_change(self, listener: Listener) -> None:
        """Stop calling ``listener`` (one not added: nothing happens)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def _notify(self, change: str, process: AgentProcess) -> None:
        # A listener's failure is logged: the process is already added (or removed) by now.
        for listener in list(self._listeners):
            try:
                outcome = listener(change, process)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:
                trace = redacted_trace(exc, self.redact)
                logger.error(
                    "runtime listener %r failed on %s %s\n%s", listener, change, process, trace
                )

    # -- processes -------------------------------------------------------------------------

    async def add_process(
        self, name: str, config: ProcessConfig | dict[str, Any] | None = None
    ) -> AgentProcess:
        """Create a process sharing this runtime's hooks; it starts now if the runtime runs.

        Raises ProcessExistsError for a taken name, WebhookClashError when one of its webhook
        triggers would answer where another already does, ValueError for a bad name.
        """
        if name in self._processes:
            raise ProcessExistsError(f"a process named {name!r} already exists")
        if isinstance(config, dict):
            config = ProcessConfig.model_validate(config)
        config = config if config is not None else ProcessConfig()
        process = AgentProcess(name, config, hooks=self.hooks)
        telemetry = self.telemetry if self.telemetry is not None else self._global_telemetry()
        if telemetry is not None:
            process.observe(telemetry)
        self.check_webhooks(process.webhook_triggers, owner=name)
        # No await between the check above and this line: a concurrent add cannot slip in.
        self._hold(process)
        if self.running:
            try:
                await process.start()
            except BaseException:
                self._release(name)
                self._retire(process)  # its error, raised on, may carry one of its secrets
                await process.aclose()
                raise
        await self._notify("added", process)
        return process

    def _global_telemetry(self) -> Telemetry | None:
        """Without a Telemetry of its own: spans through OpenTelemetry's global TracerProvider
        once the application has set one (as libraries of that ecosystem do), else none."""
        if self._from_global is None and "opentelemetry.trace" in sys.modules:
            from .telemetry import Telemetry

            self._from_global = Telemetry.from_global()
        return self._from_global

    async def add_manifest(self, path: str | os.PathLike[str]) -> AgentProcess:
        """Load an ``.agent`` file and add the process it describes (named by the manifest)."""
        from .manifest import load_manifest

        return await self.add_spec(load_manifest(path))

    async def add_spec(self, manifest: AgentManifest) -> AgentProcess:
        """Add the process a loaded manifest describes."""
        from .manifest import manifest_to_process_config

        return await self.add_process(manifest.name, manifest_to_process_config(manifest))

    async def remove_process(self, name: str) -> bool:
        """Stop and forget a process; False if there was none."""
        process = self._release(name)
        if process is None:
            return False
        self._retire(process)
        try:
            await process.stop()
        finally:
            await process.aclose()
            await self._notify("removed", process)
        return True

    def _hold(self, process: AgentProcess) -> None:
        """Take ``process`` in, its webhook triggers indexed now and after each change."""
        self._processes[process.name] = process
        self._webhooks.put(process)
        process.on_triggers_change(partial(self._webhooks.put, process))

    def _release(self, name: str) -> AgentProcess | None:
        """Let the process ``name`` go (the index forgets it); None if there was none."""
        process = self._processes.pop(name, None)
        if process is not None:
            process.on_triggers_change(None)
            self._webhooks.remove(name)
        return process

    def _retire(self, process: AgentProcess) -> None:
        for secret, value in process.redactor.known():
            self._retired.setdefault(value, secret)

    async def start_all(self) -> None:
        """Start every process (and those added later, as they are added).

        A process that fails to start raises here; those started before it keep running (an
        ``async with`` of the runtime stops them: see ``__aenter__``).
        """
        self.running = True
        if self._started_at is None:
            self._started_at = time.monotonic()
        for process in list(self._processes.values()):
            await process.start()

    async def stop_all(self) -> None:
        """Stop every process, concurrently, and release their model clients (and what the
        shared hooks hold open).

        Every process is stopped and closed even when the stop of another raises; the first
        such error is raised once all are done.
        """
        self.running = False
        self._started_at = None
        processes = list(self._processes.values())
        stopped = await asyncio.gather(*(p.stop() for p in processes), return_exceptions=True)
        closed = await asyncio.gather(*(p.aclose() for p in processes), return_exceptions=True)
        # What the shared hooks' executors hold open (HTTP connections, persistent programs);
        # they reopen on the next event.
        await close_resources(self.hooks)
        errors = [e for e in (*stopped, *closed) if isinstance(e, BaseException)]
        for error in errors[1:]:
            logger.error("stopping the runtime: %s", self.redact(f"{error}"))
        if errors:
            raise errors[0]

    async def __aenter__(self) -> AgentRuntime:
        """Start every process; if one fails to start, those started are stopped again (so
        nothing runs that no ``__aexit__`` would stop) and the error is raised."""
        try:
            await self.start_all()
        except BaseException:
            try:
                await self.stop_all()
            except BaseException as exc:  # the start's error is the one the caller needs
                logger.error(
                    "stopping the runtime after its failed start: %s", self.redact(f"{exc}")
                )
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_all()

    # -- events ----------------------------------------------------------------------------

    async def publish(self, event_type: str, payload: dict[str, Any] | None = None) -> list[str]:
        """Deliver a runtime event to every process with an event trigger for ``event_type``;
        the ids of the events made, one per trigger.

        Each event gets its own deep copy of ``payload`` (checked once: InvalidEventError
        before any is made), so what one process does to its event never reaches another's. A
        process whose ``inject()`` raises (a task_created hook raising what the engine does
        not isolate; the event is dead-lettered) does not keep the event from the others: the
        first such error is raised once every trigger had its event.
        """
        TriggerEvent("publish", "event", payload or {})  # a payload that is no JSON: refused
        ids: list[str] = []
        errors: list[BaseException] = []
        for process in list(self._processes.values()):
            for trigger_id, trigger in process.event_triggers:
                if trigger.event_type == event_type:
                    event = TriggerEvent(trigger_id, "event", copy.deepcopy(dict(payload or {})))
                    try:
                        ids.append(await process.inject(event))
                    except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
                        raise
                    except BaseException as exc:
                        ids.append(event.event_id)
                        errors.append(exc)
        if errors:
            raise errors[0]
        return ids

    # -- webhooks --------------------------------------------------------------------------

    def webhook_routes(self) -> RouteTable:
        """Every webhook trigger, by (host, port) and then path; the first one wins a clash.

        Read-only, and the same table until a process or a trigger changes (it is built once
        per change, not per call).
        """
        return self._webhooks.table()

    def webhook_route(self, host: str, port: int, path: str) -> WebhookRoute | None:
        """The webhook trigger a request to ``host:port`` for ``path`` reaches, if any."""
        return self._webhooks.route(host, port, path)

    def webhook_listeners(self) -> set[tuple[str, int]]:
        """Every (host, port) a webhook trigger answers on."""
        return self._webhooks.listeners()

    def check_webhooks(self, triggers: Iterable[tuple[str, WebhookTrigger]], *, owner: str) -> None:
        """Raise WebhookClashError if any of ``triggers`` (of process ``owner``, replacing the
        triggers it has) would clash with another process's, or among themselves."""
        self._webhooks.check(triggers, owner)

    # -- health ----------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """A JSON-ready summary: running, process count, processes per state, dead letters."""
        states: dict[str, int] = {}
        dead = 0
        for process in self._processes.values():
            states[process.state.value] = states.get(process.state.value, 0) + 1
            dead += len(process.dead_letters)
        return {
            "running": self.running,
            "processes": len(self._processes),
            "states": states,
            "dead_letters": dead,
            "uptime_s": (
                round(time.monotonic() - self._started_at, 3) if self._started_at else None
            ),
        }


WebhookRoute.__module__ = "tether.runtime"
published(globals())
