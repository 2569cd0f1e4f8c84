"""Hook plugins: one object implementing any subset of the lifecycle methods.

A plugin is activated explicitly (by instance, or by name from the built-ins and the
``tether.plugins`` entry-point group); installing a package never activates anything. Its
handlers are registered with the plugin as their owner, so removing it drains them all at once.
The context a plugin method receives adds ``warn``, ``emit_artifact`` and ``converse`` to
HookContext; what they do is decided by the host (the process) that activated the plugin.
In a dry run (``ctx.dry_run``) none of them has an effect: ``converse`` raises without asking
the model, and the host keeps no warning and writes no artifact.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from ...errors import TetherError
from .._context import HookContext
from .._errors import HookBlocked
from .._events import HookEvent
from .._executor import CallbackExecutor
from .._hook import _check_timeout, _key, closing
from .._limits import check_timeout

if TYPE_CHECKING:
    from .._hook import Engine

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "Plugin",
    "PluginContext",
    "PluginError",
    "PluginExecutor",
    "PluginHost",
    "available_plugins",
    "hook_options",
    "implements",
    "plugin_methods",
    "register_plugin",
    "resolve_plugin",
    "unregister_plugin",
]

ENTRY_POINT_GROUP: Final = "tether.plugins"
SLUG: Final = re.compile(r"^[a-z0-9_-]+$")
#: The longest plugin name or artifact label (both are parts of an artifact's file name).
MAX_SLUG: Final = 64
#: Built-in plugins: name -> "module:Class" (imported only when activated).
BUILTIN_PLUGINS: Final[dict[str, str]] = {"debrief": "tether.plugins.debrief:DebriefPlugin"}

F = TypeVar("F", bound=Callable[..., Any])
#: The warning of a handler that swallowed its timeout's (or a stop's) cancellation and
#: returned as if nothing happened: its result is not used (the engine times it out).
IGNORED_CANCEL: Final = "timed out or was cancelled, and ignored it"


class PluginError(TetherError, ValueError):
    """A plugin is malformed, unknown, or used where it cannot be."""


class PluginHandlerError(PluginError, TypeError):
    """A handler given to ``register_hook`` is not callable (a TypeError and a PluginError)."""


PluginError.__module__ = "tether"


class PluginExecutor(CallbackExecutor):
    """A Plugin's lifecycle method or extension-point handler (its handler, which reports the
    plugin's errors): the plugin kind of HookInfo.executor_kind."""

    __slots__ = ()
    kind: Final[str] = "plugin"  # type: ignore[misc]


def _shown(value: object) -> str:
    """``repr(value)``, cut short in the middle if long (an error names it, not a page of it)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-10:]}"


def _check_priority(priority: object) -> None:
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"priority must be an int, got {priority!r}")


def _check_fail_closed(fail_closed: object) -> None:
    if not isinstance(fail_closed, bool):
        raise TypeError(f"fail_closed must be a bool, got {fail_closed!r}")


def _check_converse_timeout(timeout: object, what: str = "converse timeout") -> float:
    """A converse deadline: a number of seconds, > 0 and at most MAX_TIMEOUT (not a bool, not
    NaN, not infinite: a deadline that does not bound is no deadline)."""
    return check_timeout(timeout, what)


def _check_point(name: object) -> str:
    """An extension-point name by the manager's own rule (dotted, no spaces, no edge dots)."""
    try:
        key = _key(name)  # type: ignore[arg-type]
    except ValueError:
        key = None
    if not isinstance(key, str) or isinstance(key, HookEvent):
        raise PluginError(f"extension point names are dotted (e.g. 'ticket.classify'): {name!r}")
    return key


def hook_options(
    *, priority: int | None = None, timeout: float | None = None, fail_closed: bool | None = None
) -> Callable[[F], F]:
    """Set priority, timeout or fail_closed for one plugin method (overrides the plugin's).

    The values are checked here, where they are declared.
    """
    if priority is not None:
        _check_priority(priority)
    _check_timeout(timeout)
    if fail_closed is not None:
        _check_fail_closed(fail_closed)

    def mark(fn: F) -> F:
        fn.__tether_hook_options__ = {  # type: ignore[attr-defined]
            k: v
            for k, v in (("priority", priority), ("timeout", timeout), ("fail_closed", fail_closed))
            if v is not None
        }
        return fn

    return mark


def implements(
    name: str, *, priority: int | None = None, timeout: float | None = None
) -> Callable[[F], F]:
    """Mark a plugin method as the handler of extension point ``name`` (a dotted name).

    ``priority`` and ``timeout`` default to the plugin's (its class attributes), as for its
    ``on_<event>`` methods; they are checked here, where they are declared.
    """
    _check_point(name)
    if priority is not None:
        _check_priority(priority)
    _check_timeout(timeout)

    def mark(fn: F) -> F:
        fn.__tether_extension__ = (name, priority, timeout)  # type: ignore[attr-defined]
        return fn

    return mark


class PluginHost(Protocol):
    """What a plugin context delegates to (the process that activated the plugin).

    During a dry run (``ctx.dry_run``) a host persists nothing: ``plugin_warn`` keeps nothing
    and ``plugin_artifact`` writes nothing, answering the name it would have written.
    ``plugin_converse`` is not called then.
    """

    def plugin_warn(self, plugin: str, ctx: HookContext, message: str) -> None: ...

    def plugin_failed(self, plugin: str, task_id: str | None, message: str) -> None:
        """One of the plugin's extension-point handlers failed (a warning of that task)."""

    def plugin_artifact(
        self, plugin: str, ctx: HookContext, payload: Any, label: str | None
    ) -> str: ...

    async def plugin_converse(
        self, plugin: str, ctx: HookContext, text: str, timeout: float
    ) -> str: ...

    def plugin_model_name(self, ctx: HookContext) -> str | None: ...


class PluginContext(HookContext):
    """HookContext plus the capabilities a plugin may use at this point."""

    __slots__ = ("_host", "_live", "_plugin", "converse_calls", "handler", "hook_deadline")

    def __init__(
        self,
        base: HookContext,
        plugin: Plugin,
        host: PluginHost | None,
        handler: str | None = None,
    ) -> None:
        super().__init__(base.event, base.process_id, base.data, base.metadata, base.timestamp)
        self._dry_run = base._dry_run
        self._plugin = plugin
        self._host = host
        self.converse_calls: list[dict[str, Any]] = []
        #: The plugin's handler running: ``on_<event>``, or what register_hook was given.
        self.handler = handler or f"on_{base.event.value}"
        #: False once the handler it was made for has returned: its capabilities end there.
        self._live = True
        #: When the handler's own timeout cuts it off (the loop's clock), if it has one.
        self.hook_deadline: float | None = None

    def _check_live(self, capability: str) -> None:
        if not self._live:
            raise PluginError(
                f"plugin {self._plugin.name!r}: {capability}() on a context whose handler "
                f"({self.handler}) has returned; a context is valid only while its handler runs"
            )

    @property
    def plugin_name(self) -> str:
        return self._plugin.name

    @property
    def model(self) -> str | None:
        """The name of the model that ran this task, else the process's (None without a host)."""
        return self._host.plugin_model_name(self) if self._host is not None else None

    def warn(self, message: str) -> None:
        """Record a non-fatal diagnostic with the task, as ``plugin:<name>: <message>``.

        In a dry run it is not recorded (the process answers it with the dry run's report).
        """
        self._check_live("warn")
        if self._host is not None:
            self._host.plugin_warn(self._plugin.name, self, str(message))

    def emit_artifact(self, payload: Any, label: str | None = None) -> str:
        """Store a JSON-serialisable payload beside the task's record; return its name.

        In a dry run the label and payload are checked as usual but nothing is written: the
        name it would have is returned (the process answers the artifact with the dry run's
        report), so a plugin runs to its end as it would for real.
        """
        self._check_live("emit_artifact")
        if label is not None and not (
            isinstance(label, str) and SLUG.fullmatch(label) and len(label) <= MAX_SLUG
        ):
            raise PluginError(
                f"artifact label must match [a-z0-9_-]+ (at most {MAX_SLUG} characters), "
                f"got {_shown(label)}"
            )
        try:
            json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"artifact payload is not JSON-serialisable: {exc}") from None
        except RecursionError:
            raise PluginError("artifact payload is nested too deeply to store") from None
        if self._host is None:
            raise PluginError("this plugin context has no host to store artifacts")
        return self._host.plugin_artifact(self._plugin.name, self, payload, label)

    async def converse(self, text: str, *, timeout: float | None = None) -> str:
        """One extra turn in the task's own conversation (only in ``on_task_completed``).

        In a dry run it raises PluginError and the model is not called (check ``dry_run``
        first to skip the call); left uncaught, the hook's run is ``failed`` with that message.
        """
        if self.event is not HookEvent.TASK_COMPLETED:
            raise PluginError(
                f"converse() is valid only in on_task_completed, not in on_{self.event.value}"
            )
        self._check_live("converse")
        if not isinstance(text, str) or not text.strip():
            raise PluginError(f"converse text must be a non-empty str, got {_shown(text)}")
        if timeout is not None:
            _check_converse_timeout(timeout)
        if self.dry_run:
            raise PluginError(
                "converse() does not call the model in a dry run; nothing was asked "
                "(check ctx.dry_run to skip the call)"
            )
        if self._host is None:
            raise PluginError("this plugin context has no agent to converse with")
        deadline = timeout if timeout is not None else self._plugin.converse_timeout
        if self.hook_deadline is not None:
            # The turn ends a little before the handler's own timeout would cut the handler
            # off, so the handler still gets its TimeoutError and can record it.
            left = self.hook_deadline - asyncio.get_running_loop().time()
            deadline = max(min(deadline, left - min(0.5, left / 10)), 0.001)
        return await self._host.plugin_converse(self._plugin.name, self, text, deadline)


class Plugin:
    """Base class of hook plugins: define any of ``on_<event>`` (async, taking the context).

    A plugin may also define the eval harness's run-level points (``RUN_POINTS``:
    ``on_provisioned`` ... ``on_pack_end``, async, taking a ``tether.eval.RunContext``); only
    ``tether eval run --hook NAME`` calls them, never a process.

    Class attributes ``priority``, ``timeout`` and ``fail_closed`` apply to every method;
    ``hook_options`` overrides them per method.
    """

    name: str = ""
    priority: int = 0
    timeout: float | None = None
    fail_closed: bool = False
    converse_timeout: float = 30.0

    def __repr__(self) -> str:
        return f"<plugin {self.name}>"

    def register_hook(
        self,
        name: HookEvent | str,
        fn: Callable[..., Any],
        *,
        priority: int = 0,
        timeout: float | None = None,
        fail_closed: bool = False,
    ) -> list[str]:
        """Register ``fn`` for an extension point (or a lifecycle event) while the plugin is active.

        What ``implements`` and the ``on_<event>`` methods declare, done at run time: ``fn`` is
        owned by this plugin, so removing or reloading the plugin removes it with the rest. A
        lifecycle handler is async and receives a PluginContext, as the plugin's methods do.
        Returns the hook ids, one per manager the plugin is active on; a plugin that is not
        active is a PluginError (there would be nothing to bind ``fn``'s lifetime to).
        """
        if not callable(fn):
            raise PluginHandlerError(
                f"plugin {self.name!r}: the handler for {getattr(name, 'value', name)!r} must "
                f"be callable, got {type(fn).__name__}"
            )
        bindings = _bindings(self)
        if not bindings:
            raise PluginError(
                f"plugin {self.name!r} is not active: register_hook() binds a handler to an "
                "active plugin (activate it first, e.g. process.plugins.add)"
            )
        key = _key(name)
        where = getattr(fn, "__name__", None) or type(fn).__name__
        if isinstance(key, HookEvent) and not inspect.iscoroutinefunction(fn):
            raise PluginError(
                f"plugin {self.name!r}: {where} for {key.value} must be an async function"
            )
        if isinstance(key, HookEvent):
            _check_takes_context(self, where, fn)
        options: dict[str, Any] = {"priority": priority, "fail_closed": fail_closed}
        if timeout is not None:
            options["timeout"] = timeout
        ids: list[tuple[Engine, str]] = []
        try:
            for manager, host, source in list(bindings):
                if isinstance(key, HookEvent):
                    callback = _make_handler(
                        self, key, fn, host, where, _budget(manager, options.get("timeout"))
                    )
                elif host is not None:  # its failures are the task's warnings, as declared ones'
                    callback = _point_handler(self, key, fn, host)
                else:
                    callback = fn
                hook_id = manager.register(
                    key,
                    callback,
                    executor=PluginExecutor(callback),
                    owner=self,
                    source=source,
                    name=f"plugin:{self.name}.{where}",
                    **options,
                )
                ids.append((manager, hook_id))
        except BaseException:
            for manager, hook_id in ids:  # all or nothing, as at activation
                manager._drop(manager._by_id[hook_id])
            raise
        # Kept while the plugin is active: a failed reload registers them again.
        run_time_hooks(self).append((name, fn, {**options, "timeout": timeout}))
        return [hook_id for _, hook_id in ids]


Plugin.__module__ = "tether"
PluginContext.__module__ = "tether"


def plugin_methods(plugin: Plugin) -> dict[HookEvent, Callable[..., Any]]:
    """The lifecycle methods a plugin really defines (introspected, like pytest plugins).

    A method named ``on_<something>`` that is not a lifecycle event is a PluginError naming
    the closest event: a misspelled method would otherwise never run, silently.
    """
    _check_method_names(plugin)
    found: dict[HookEvent, Callable[..., Any]] = {}
    for event in HookEvent:
        method = getattr(plugin, f"on_{event.value}", None)
        if method is None:
            continue
        if not inspect.iscoroutinefunction(method):
            raise PluginError(
                f"plugin {plugin.name!r}: on_{event.value} must be an async method (async def)"
            )
        _check_takes_context(plugin, f"on_{event.value}", method)
        found[event] = method
    return found


_LIFECYCLE_METHODS: Final = tuple(f"on_{event.value}" for event in HookEvent)
#: The run-level points of the eval harness, in the order they are dispatched (``tether.eval`` calls
#: them; a process never does, so registering a plugin on a process ignores them).
RUN_POINTS: Final = (
    "on_provisioned",
    "on_run_start",
    "on_run_scored",
    "on_run_end",
    "on_scenario_end",
    "on_pack_end",
)


def _check_takes_context(plugin: Plugin, where: str, fn: Callable[..., Any]) -> None:
    """A lifecycle handler is called with the context alone: one that cannot take it would
    fail at every event, so it is refused where it is declared."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # (a callable without a signature: left to the call)
    try:
        signature.bind(None)
    except TypeError:
        raise PluginError(
            f"plugin {plugin.name!r}: {where}{signature} must take the context as its one "
            "argument, e.g. (self, ctx)"
        ) from None


def _check_method_names(plugin: Plugin) -> None:
    for attr in dir(type(plugin)):
        if attr not in _LIFECYCLE_METHODS:
            raw = inspect.getattr_static(plugin, attr, None)
            if hasattr(getattr(raw, "__func__", raw), "__tether_hook_options__"):
                # Silently ignored options would be a setting that never applies.
                raise PluginError(
                    f"plugin {plugin.name!r}: hook_options on {attr} would never apply: it sets "
                    "the options of an on_<event> method (an extension point's priority is set "
                    "with implements(name, priority=...))"
                )
        if not attr.startswith("on_") or attr in _LIFECYCLE_METHODS or attr in RUN_POINTS:
            continue
        raw = inspect.getattr_static(plugin, attr, None)
        fn = getattr(raw, "__func__", raw)
        if not callable(fn) or hasattr(fn, "__tether_extension__"):
            continue  # data, or an extension-point handler (@implements)
        known = _LIFECYCLE_METHODS + RUN_POINTS
        import difflib  # only for this mistake

        close = difflib.get_close_matches(attr, known, n=1, cutoff=0.6)
        hint = (
            f"did you mean {close[0]}?" if close else f"lifecycle methods are: {', '.join(known)}"
        )
        raise PluginError(
            f"plugin {plugin.name!r}: {attr} is not a lifecycle method and would never run; " + hint
        )


_ACTIVE: Final = "_tether_active"


_RUN_TIME: Final = "_tether_run_time_hooks"


def run_time_hooks(
    plugin: Plugin,
) -> list[tuple[HookEvent | str, Callable[..., Any], dict[str, Any]]]:
    """What ``register_hook`` registered while the plugin is active: (name, fn, options)."""
    found: list[tuple[HookEvent | str, Callable[..., Any], dict[str, Any]]] = vars(
        plugin
    ).setdefault(_RUN_TIME, [])
    return found


def _bindings(plugin: Plugin) -> list[tuple[Engine, PluginHost | None, str]]:
    """Where the plugin is active: (manager, host, source) per ``register_plugin``."""
    found: list[tuple[Engine, PluginHost | None, str]] = vars(plugin).setdefault(_ACTIVE, [])
    return found


def build_plugin(cls: type[Plugin]) -> Plugin:
    """``cls()``; what it raises is a PluginError naming the class (the cause chained)."""
    try:
        return cls()
    except Exception as exc:
        raise PluginError(
            f"plugin class {cls.__name__} could not be built with no arguments: {exc!r}"
        ) from exc


def _check(plugin: object) -> Plugin:
    if isinstance(plugin, type) and issubclass(plugin, Plugin):
        plugin = build_plugin(plugin)
    if not isinstance(plugin, Plugin):
        raise PluginError(f"a plugin must be a tether.Plugin instance or subclass, got {plugin!r}")
    name = plugin.name
    if not isinstance(name, str) or not SLUG.fullmatch(name) or len(name) > MAX_SLUG:
        raise PluginError(
            f"plugin {type(plugin).__name__}: name must be a slug matching [a-z0-9_-]+ "
            f"(at most {MAX_SLUG} characters), got {_shown(name)}"
        )
    return plugin


def _in_definition_order(cls: type) -> list[str]:
    """The attribute names of a class, as defined (a base class's first), not sorted as
    ``dir`` has them: handlers of one point at one priority run in the order written."""
    names: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        names.update(dict.fromkeys(vars(klass)))
    return list(names)


def _extensions(
    plugin: Plugin,
) -> list[tuple[tuple[str, int | None, float | None], Callable[..., Any]]]:
    """The methods marked with ``implements``, in definition order, found without evaluating
    any attribute (a property of the plugin must not run just because it is registered)."""
    found = []
    for attr in _in_definition_order(type(plugin)):
        raw = inspect.getattr_static(plugin, attr, None)
        ext = getattr(getattr(raw, "__func__", raw), "__tether_extension__", None)
        if ext is not None:
            found.append((ext, getattr(plugin, attr)))
    return found


def _make_handler(
    plugin: Plugin,
    event: HookEvent,
    method: Callable[..., Any],
    host: PluginHost | None,
    where: str | None = None,
    budget: Callable[[], float | None] | None = None,
) -> Callable[[HookContext], Any]:
    """The registered callback of a lifecycle method. ``budget`` answers the handler's timeout
    (its own, else its manager's default, read at each call), which bounds its converse turns."""
    where = where or f"on_{event.value}"
    timed = budget if event is HookEvent.TASK_COMPLETED else None  # (converse is valid there)

    async def handler(ctx: HookContext) -> None:
        scoped = PluginContext(ctx, plugin, host, where)
        if timed is not None and (seconds := timed()) is not None:
            scoped.hook_deadline = asyncio.get_running_loop().time() + seconds
        cancels = _cancels()
        try:
            await method(scoped)
            if host is not None and _cancels() > cancels:
                host.plugin_warn(plugin.name, scoped, f"{where} {IGNORED_CANCEL}")
        except HookBlocked:
            raise
        except (Exception, SystemExit) as exc:  # (the engine isolates a sys.exit() too)
            # A plugin's failure is never the task's failure: it travels as a warning.
            if host is not None:
                host.plugin_warn(plugin.name, scoped, f"{where} failed: {exc!r}")
            raise
        except asyncio.CancelledError as exc:
            if host is not None and not closing(exc):  # a stop's cancellation is no fault
                host.plugin_warn(plugin.name, scoped, f"{where} timed out or was cancelled")
            raise
        finally:
            scoped._live = False
            ctx.data = scoped.data

    handler.__qualname__ = f"{plugin.name}.{where}"
    return handler


def _cancels() -> int:
    """How many cancellations of the running task are pending: a handler that returns with
    more than it started with swallowed one (its timeout's, or its owner's)."""
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0


def _budget(manager: Engine, timeout: float | None) -> Callable[[], float | None]:
    """A handler's timeout: its own, else its manager's default as it is at the call."""
    if timeout is not None:
        return lambda: timeout
    return lambda: manager.default_timeout


def _point_handler(
    plugin: Plugin, point: str, method: Callable[..., Any], host: PluginHost
) -> Callable[..., Any]:
    """``method`` (sync or async, as it is) telling ``host`` when it fails: a plugin's
    failure is never the task's, so it travels as a warning (the engine still isolates it and
    tells the error listeners). A cancellation with the CLOSING message (its caller's owner
    stopping cut it off) is no failure of the plugin and is not told."""
    where = f"{point} ({getattr(method, '__name__', point)})"

    def failed(kwargs: dict[str, Any], why: str) -> None:
        task = getattr(kwargs.get("event"), "event_id", None)  # the points tether calls
        host.plugin_failed(plugin.name, task if isinstance(task, str) else None, why)

    # SystemExit too: the engine isolates a handler calling sys.exit(), as any failure.
    async def finish(value: Awaitable[Any], kwargs: dict[str, Any]) -> Any:
        cancels = _cancels()
        try:
            answer = await value
        except (Exception, SystemExit) as exc:
            failed(kwargs, f"{where} failed: {exc!r}")
            raise
        except asyncio.CancelledError as exc:
            if not closing(exc):
                failed(kwargs, f"{where} timed out or was cancelled")
            raise
        if _cancels() > cancels:
            failed(kwargs, f"{where} {IGNORED_CANCEL}")
        return answer

    if inspect.iscoroutinefunction(method):

        async def handler(**kwargs: Any) -> Any:
            try:
                value = method(**kwargs)
            except Exception as exc:  # (its arguments do not fit)
                failed(kwargs, f"{where} failed: {exc!r}")
                raise
            return await finish(value, kwargs)

    else:

        def handler(**kwargs: Any) -> Any:  # type: ignore[misc]
            try:
                value = method(**kwargs)
            except (Exception, SystemExit) as exc:
                failed(kwargs, f"{where} failed: {exc!r}")
                raise
            # A callable answering an awaitable (an object with an async __call__) fails
            # when it is awaited: watched there too.
            return finish(value, kwargs) if inspect.isawaitable(value) else value

    handler.__name__ = getattr(method, "__name__", point)
    handler.__qualname__ = f"{plugin.name}.{handler.__name__}"
    return handler


def register_plugin(
    manager: Engine, plugin: Plugin, host: PluginHost | None = None, *, source: str = "plugin"
) -> list[str]:
    """Register the plugin's lifecycle methods and extension points, owned by the plugin.

    Everything is validated before anything is registered: a bad plugin leaves no handler.
    """
    plugin = _check(plugin)
    if any(bound is manager for bound, _, _ in _bindings(plugin)):
        # Twice on one manager would run every handler twice per event.
        raise PluginError(f"plugin {plugin.name!r} is already registered on this manager")
    methods = plugin_methods(plugin)
    try:
        _check_converse_timeout(plugin.converse_timeout, "converse_timeout")
    except (TypeError, ValueError) as exc:
        raise PluginError(f"plugin {plugin.name!r}: {exc}") from None
    specs: list[tuple[HookEvent | str, Callable[..., Any], dict[str, Any]]] = []
    for event, method in methods.items():
        options = {
            "priority": plugin.priority,
            "timeout": plugin.timeout,
            "fail_closed": plugin.fail_closed,
            **getattr(method, "__tether_hook_options__", {}),
        }
        where = f"on_{event.value}"
        try:
            _check_priority(options["priority"])
            _check_timeout(options["timeout"])
            _check_fail_closed(options["fail_closed"])
        except (TypeError, ValueError) as exc:
            raise PluginError(f"plugin {plugin.name!r}: {where}: {exc}") from None
        if options["timeout"] is None:
            del options["timeout"]  # the manager's default applies
        options["name"] = f"plugin:{plugin.name}.{where}"
        budget = _budget(manager, options.get("timeout"))
        specs.append((event, _make_handler(plugin, event, method, host, None, budget), options))
    for (point, priority, timeout), fn in _extensions(plugin):
        name = f"plugin:{plugin.name}.{getattr(fn, '__name__', point)}"
        # The plugin's priority and timeout, unless implements() set the handler's own.
        priority = plugin.priority if priority is None else priority
        timeout = plugin.timeout if timeout is None else timeout
        try:
            _check_point(point)
            _check_priority(priority)
            _check_timeout(timeout)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"plugin {plugin.name!r}: {name}: {exc}") from None
        if host is not None:  # its failures are warnings of the task, as its methods' are
            fn = _point_handler(plugin, point, fn, host)
        ext_options: dict[str, Any] = {"priority": priority, "name": name}
        if timeout is not None:
            ext_options["timeout"] = timeout
        specs.append((point, fn, ext_options))
    ids: list[str] = []
    try:
        for key, fn, options in specs:
            ids.append(
                manager.register(
                    key, fn, executor=PluginExecutor(fn), owner=plugin, source=source, **options
                )
            )
    except BaseException:
        for hook_id in ids:  # never leave a half-registered plugin behind
            manager._drop(manager._by_id[hook_id])
        raise
    _bindings(plugin).append((manager, host, source))
    return ids


def unregister_plugin(manager: Engine, plugin: Plugin) -> int:
    """Remove every handler the plugin owns on ``manager`` (declared or added by
    ``register_hook``) at once, and end its activation there; return how many went."""
    active = _bindings(plugin)
    active[:] = [b for b in active if b[0] is not manager]
    if not active:  # its run-time handlers are gone with it
        run_time_hooks(plugin).clear()
    return int(manager.remove_owner(plugin))


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_plugins() -> list[str]:
    """Names that can be activated: the built-ins, then the entry points."""
    return sorted(set(BUILTIN_PLUGINS) | set(_entry_points()))


def resolve_plugin(name: str) -> Plugin:
    """A fresh plugin instance for ``name`` (built-ins first, then the entry-point group)."""
    if name in BUILTIN_PLUGINS:
        import importlib

        module, _, attr = BUILTIN_PLUGINS[name].partition(":")
        plugin = _check(getattr(importlib.import_module(module), attr))
    else:
        ep = _entry_points().get(name)
        if ep is None:
            raise PluginError(
                f"unknown plugin {name!r}; available: {', '.join(available_plugins()) or 'none'}"
            )
        try:
            target = ep.load()
            plugin = _check(target)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {name!r} could not be loaded from entry point {ep.value!r}: {exc!r}"
            ) from exc
    if plugin.name != name:
        # The name is the activation token and the artifact discriminator: they must agree.
        raise PluginError(
            f"entry point {name!r} loads plugin {plugin.name!r}; "
            "an entry point must be named after the plugin it loads"
        )
    return plugin
