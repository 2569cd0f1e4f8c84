"""Hook plugins: one object implementing any subset of the lifecycle methods.

A plugin is activated explicitly (by instance, or by name from the built-ins and the
``tether.plugins`` entry-point group); installing a package never activates anything. Its
handlers are registered with the plugin as their owner, so removing it drains them all at once.
The context a plugin method receives adds ``warn``, ``emit_artifact`` and ``converse`` to
HookContext; what they do is decided by the host (the process) that activated the plugin.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from ._context import HookContext
from ._errors import HookBlocked
from ._events import HookEvent

if TYPE_CHECKING:
    from ._manager import HookManager

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "Plugin",
    "PluginContext",
    "PluginError",
    "PluginHost",
    "available_plugins",
    "hook_options",
    "implements",
    "plugin_methods",
    "register_plugin",
    "resolve_plugin",
]

ENTRY_POINT_GROUP: Final = "tether.plugins"
SLUG: Final = re.compile(r"^[a-z0-9_-]+$")
#: Built-in plugins: name -> "module:Class" (imported only when activated).
BUILTIN_PLUGINS: Final[dict[str, str]] = {"debrief": "tether.plugins.debrief:DebriefPlugin"}

F = TypeVar("F", bound=Callable[..., Any])


class PluginError(ValueError):
    """A plugin is malformed, unknown, or used where it cannot be."""


PluginError.__module__ = "tether"


def hook_options(
    *, priority: int | None = None, timeout: float | None = None, fail_closed: bool | None = None
) -> Callable[[F], F]:
    """Set priority, timeout or fail_closed for one plugin method (overrides the plugin's)."""

    def mark(fn: F) -> F:
        fn.__tether_hook_options__ = {  # type: ignore[attr-defined]
            k: v
            for k, v in (("priority", priority), ("timeout", timeout), ("fail_closed", fail_closed))
            if v is not None
        }
        return fn

    return mark


def implements(name: str, *, priority: int = 0) -> Callable[[F], F]:
    """Mark a plugin method as the handler of extension point ``name`` (a dotted name)."""
    if "." not in name:
        raise PluginError(f"extension point names are dotted (e.g. 'ticket.classify'): {name!r}")

    def mark(fn: F) -> F:
        fn.__tether_extension__ = (name, priority)  # type: ignore[attr-defined]
        return fn

    return mark


class PluginHost(Protocol):
    """What a plugin context delegates to (the process that activated the plugin)."""

    def plugin_warn(self, plugin: str, ctx: HookContext, message: str) -> None: ...

    def plugin_artifact(
        self, plugin: str, ctx: HookContext, payload: Any, label: str | None
    ) -> str: ...

    async def plugin_converse(
        self, plugin: str, ctx: HookContext, text: str, timeout: float
    ) -> str: ...

    def plugin_model_name(self) -> str | None: ...


class PluginContext(HookContext):
    """HookContext plus the capabilities a plugin may use at this point."""

    __slots__ = ("_host", "_plugin", "converse_calls")

    def __init__(self, base: HookContext, plugin: Plugin, host: PluginHost | None) -> None:
        super().__init__(base.event, base.process_id, base.data, base.metadata, base.timestamp)
        self._plugin = plugin
        self._host = host
        self.converse_calls: list[dict[str, Any]] = []

    @property
    def plugin_name(self) -> str:
        return self._plugin.name

    @property
    def model(self) -> str | None:
        """The name of the model the process runs (None without a host)."""
        return self._host.plugin_model_name() if self._host is not None else None

    def warn(self, message: str) -> None:
        """Record a non-fatal diagnostic with the task, as ``plugin:<name>: <message>``."""
        if self._host is not None:
            self._host.plugin_warn(self._plugin.name, self, str(message))

    def emit_artifact(self, payload: Any, label: str | None = None) -> str:
        """Store a JSON-serialisable payload beside the task's record; return its name."""
        if label is not None and not SLUG.match(label):
            raise PluginError(f"artifact label must match [a-z0-9_-]+, got {label!r}")
        try:
            json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"artifact payload is not JSON-serialisable: {exc}") from None
        if self._host is None:
            raise PluginError("this plugin context has no host to store artifacts")
        return self._host.plugin_artifact(self._plugin.name, self, payload, label)

    async def converse(self, text: str, *, timeout: float | None = None) -> str:
        """One extra turn in the task's own conversation (only in ``on_task_completed``)."""
        if self.event is not HookEvent.TASK_COMPLETED:
            raise PluginError(
                f"converse() is valid only in on_task_completed, not in on_{self.event.value}"
            )
        if self._host is None:
            raise PluginError("this plugin context has no agent to converse with")
        deadline = timeout if timeout is not None else self._plugin.converse_timeout
        return await self._host.plugin_converse(self._plugin.name, self, text, deadline)


class Plugin:
    """Base class of hook plugins: define any of ``on_<event>`` (async, taking the context).

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


Plugin.__module__ = "tether"
PluginContext.__module__ = "tether"


def plugin_methods(plugin: Plugin) -> dict[HookEvent, Callable[..., Any]]:
    """The lifecycle methods a plugin really defines (introspected, like pytest plugins)."""
    found: dict[HookEvent, Callable[..., Any]] = {}
    for event in HookEvent:
        method = getattr(plugin, f"on_{event.value}", None)
        if method is None:
            continue
        if not inspect.iscoroutinefunction(method):
            raise PluginError(
                f"plugin {plugin.name!r}: on_{event.value} must be an async method (async def)"
            )
        found[event] = method
    return found


def _check(plugin: object) -> Plugin:
    if isinstance(plugin, type) and issubclass(plugin, Plugin):
        plugin = plugin()
    if not isinstance(plugin, Plugin):
        raise PluginError(f"a plugin must be a tether.Plugin instance or subclass, got {plugin!r}")
    name = plugin.name
    if not isinstance(name, str) or not SLUG.match(name):
        raise PluginError(
            f"plugin {type(plugin).__name__}: name must be a slug matching [a-z0-9_-]+, "
            f"got {name!r}"
        )
    return plugin


def register_plugin(
    manager: HookManager, plugin: Plugin, host: PluginHost | None = None, *, source: str = "plugin"
) -> list[str]:
    """Register the plugin's lifecycle methods and extension points, owned by the plugin."""
    plugin = _check(plugin)
    methods = plugin_methods(plugin)
    extensions = []
    for attr in dir(type(plugin)):
        fn = getattr(plugin, attr, None)
        ext = getattr(fn, "__tether_extension__", None)
        if ext is not None and callable(fn):
            extensions.append((ext, fn))
    ids: list[str] = []
    for event, method in methods.items():
        options = getattr(method, "__tether_hook_options__", {})

        async def handler(
            ctx: HookContext, _method: Callable[..., Any] = method, _plugin: Plugin = plugin
        ) -> None:
            scoped = PluginContext(ctx, _plugin, host)
            where = f"on_{scoped.event.value}"
            try:
                await _method(scoped)
            except HookBlocked:
                raise
            except Exception as exc:
                # A plugin's failure is never the task's failure: it travels as a warning.
                if host is not None:
                    host.plugin_warn(_plugin.name, scoped, f"{where} failed: {exc!r}")
                raise
            except asyncio.CancelledError:
                if host is not None:
                    host.plugin_warn(_plugin.name, scoped, f"{where} timed out or was cancelled")
                raise
            finally:
                ctx.data = scoped.data

        handler.__qualname__ = f"{plugin.name}.on_{event.value}"
        timeout = options.get("timeout", plugin.timeout)
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        ids.append(
            manager.register(
                event,
                handler,
                priority=options.get("priority", plugin.priority),
                fail_closed=options.get("fail_closed", plugin.fail_closed),
                owner=plugin,
                name=f"plugin:{plugin.name}.on_{event.value}",
                source=source,
                **kwargs,
            )
        )
    for (point, priority), fn in extensions:
        ids.append(
            manager.register(
                point,
                fn,
                priority=priority,
                owner=plugin,
                name=f"plugin:{plugin.name}.{fn.__name__}",
                source=source,
            )
        )
    return ids


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_plugins() -> list[str]:
    """Names that can be activated: the built-ins, then the entry points."""
    return sorted(set(BUILTIN_PLUGINS) | set(_entry_points()))


def resolve_plugin(name: str) -> Plugin:
    """A fresh plugin instance for ``name`` (built-ins first, then the entry-point group)."""
    target: Any
    if name in BUILTIN_PLUGINS:
        import importlib

        module, _, attr = BUILTIN_PLUGINS[name].partition(":")
        target = getattr(importlib.import_module(module), attr)
    else:
        ep = _entry_points().get(name)
        if ep is None:
            raise PluginError(
                f"unknown plugin {name!r}; available: {', '.join(available_plugins()) or 'none'}"
            )
        target = ep.load()
    plugin = _check(target)
    return plugin
