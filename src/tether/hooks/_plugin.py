"""Kept for the importers of ``tether.hooks._plugin`` outside the engine (process/, eval/,
plugins/, the CLI): plugins, the plugin kind of hook, now live in hooks/kinds/_plugin.py. The
public names (Plugin, PluginContext, PluginError, …) are ``tether.hooks``'s."""

from .kinds._plugin import MAX_SLUG as MAX_SLUG
from .kinds._plugin import RUN_POINTS as RUN_POINTS
from .kinds._plugin import SLUG as SLUG
from .kinds._plugin import Plugin as Plugin
from .kinds._plugin import PluginContext as PluginContext
from .kinds._plugin import PluginError as PluginError
from .kinds._plugin import _check as _check
from .kinds._plugin import available_plugins as available_plugins
from .kinds._plugin import build_plugin as build_plugin
from .kinds._plugin import plugin_methods as plugin_methods
from .kinds._plugin import register_plugin as register_plugin
from .kinds._plugin import resolve_plugin as resolve_plugin
from .kinds._plugin import run_time_hooks as run_time_hooks
from .kinds._plugin import unregister_plugin as unregister_plugin

__all__ = [
    "MAX_SLUG",
    "RUN_POINTS",
    "SLUG",
    "Plugin",
    "PluginContext",
    "PluginError",
    "available_plugins",
    "build_plugin",
    "plugin_methods",
    "register_plugin",
    "resolve_plugin",
    "run_time_hooks",
    "unregister_plugin",
]
