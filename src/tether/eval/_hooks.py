"""Run-level hooks by name: the eval built-ins, then tether's plugins and entry points.

A hook is a ``tether.Plugin`` defining at least one run-level point (``RUN_POINTS``). Names
resolve to the eval built-ins first (``debrief`` with its run-level point, ``isolation``),
then to the plugin built-ins and the ``tether.plugins`` entry-point group. Nothing is active
unless named: installing a package never turns a hook on.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from typing import Final

from ..hooks import (
    RUN_POINTS,
    Plugin,
    PluginError,
    available_plugins,
    checked_plugin,
    plugin_methods,
    resolve_plugin,
)

__all__ = ["EVAL_BUILTINS", "available_hooks", "resolve_hook", "resolve_hooks", "run_points"]

#: Eval built-ins: name -> "module:Class" (imported only when named).
EVAL_BUILTINS: Final[dict[str, str]] = {
    "debrief": "tether.eval._debrief:DebriefHook",
    "isolation": "tether.eval._probe:IsolationProbe",
}


def available_hooks() -> list[str]:
    """Every name ``--hook`` takes: the built-ins, then the entry points."""
    return sorted(set(EVAL_BUILTINS) | set(available_plugins()))


def run_points(plugin: Plugin) -> list[str]:
    """The run-level points ``plugin`` defines (introspected: undefined points cost nothing)."""
    return [point for point in RUN_POINTS if getattr(plugin, point, None) is not None]


def resolve_hook(hook: str | Plugin | type[Plugin]) -> Plugin:
    """A plugin for ``hook`` (a name, a Plugin or a Plugin class), checked as a run-level hook."""
    if isinstance(hook, str):
        if hook in EVAL_BUILTINS:
            module, _, attr = EVAL_BUILTINS[hook].partition(":")
            plugin = checked_plugin(getattr(importlib.import_module(module), attr))
        elif hook in available_plugins():
            plugin = resolve_plugin(hook)
        else:
            raise PluginError(
                f"unknown hook {hook!r}; available: {', '.join(available_hooks()) or 'none'}"
            )
    else:
        plugin = checked_plugin(hook)
    plugin_methods(plugin)  # a misspelled on_ method is an error here, not a silent no-op
    points = run_points(plugin)
    if not points:
        raise PluginError(
            f"hook {plugin.name!r} defines no run-level point ({', '.join(RUN_POINTS)}); "
            "it has nothing to observe in an eval"
        )
    for point in points:
        method = getattr(plugin, point)
        if not inspect.iscoroutinefunction(method):
            raise PluginError(f"hook {plugin.name!r}: {point} must be an async method (async def)")
        try:
            inspect.signature(method).bind(None)
        except TypeError:
            raise PluginError(
                f"hook {plugin.name!r}: {point} must take the context as its one argument, "
                "e.g. (self, ctx)"
            ) from None
        except ValueError:
            pass
    return plugin


def resolve_hooks(hooks: Sequence[str | Plugin | type[Plugin]]) -> list[Plugin]:
    """The hooks to activate, in this order; a name given twice is an error."""
    active: list[Plugin] = []
    for hook in hooks:
        plugin = resolve_hook(hook)
        if any(other.name == plugin.name for other in active):
            raise PluginError(f"hook {plugin.name!r} is named twice; each runs once per point")
        active.append(plugin)
    return active
