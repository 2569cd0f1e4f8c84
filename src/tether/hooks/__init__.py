"""The hook engine: events, contexts, the manager, hook configs and command hooks.

This package knows nothing of processes: it dispatches an event with a data dict to an ordered
chain of hooks and reports what happened.

``__all__`` is the public API (each name also in ``tether``). The other names imported here are
for tether's other packages, which import the engine through this module only, never through
its private modules.
"""

from typing import TYPE_CHECKING, Any

from ._bounded import Expired as Expired
from ._bounded import LoopProbe as LoopProbe
from ._bounded import within as within
from ._context import DRY_RUN_KEY as DRY_RUN_KEY
from ._context import HookContext as HookContext
from ._errors import CommandHookError as CommandHookError
from ._errors import HookBlocked as HookBlocked
from ._errors import HookError as HookError
from ._errors import HookTimeoutError as HookTimeoutError
from ._errors import HttpHookError as HttpHookError
from ._errors import HttpHookTimeoutError as HttpHookTimeoutError
from ._errors import PromptHookError as PromptHookError
from ._events import BLOCKABLE_EVENTS as BLOCKABLE_EVENTS
from ._events import EVENTS as EVENTS
from ._events import HookEvent as HookEvent
from ._events import parse_event as parse_event
from ._executor import HookObjectExecutor as HookObjectExecutor
from ._hook import CLOSING as CLOSING
from ._hook import Engine as Engine
from ._hook import closing as closing
from ._hook import run_prefix as run_prefix
from ._manager import DispatchResult as DispatchResult
from ._manager import HookErrorInfo as HookErrorInfo
from ._manager import HookInfo as HookInfo
from ._manager import HookManager as HookManager
from ._order import DeclarationError as DeclarationError
from ._order import Declared as Declared
from ._order import declaration_problems as declaration_problems
from ._programs import SAFE_ENV_VARS as SAFE_ENV_VARS
from ._programs import minimal_env as minimal_env
from ._programs import signal_group as signal_group
from ._recording import redacted_trace as redacted_trace
from ._records import OUTCOMES as OUTCOMES
from ._records import HookRun as HookRun
from ._shell import ShellHook as ShellHook
from ._shell import ShellHookResult as ShellHookResult
from ._shell import resolve_refs as resolve_refs
from .kinds._plugin import MAX_SLUG as MAX_SLUG
from .kinds._plugin import RUN_POINTS as RUN_POINTS
from .kinds._plugin import SLUG as SLUG
from .kinds._plugin import Plugin as Plugin
from .kinds._plugin import PluginContext as PluginContext
from .kinds._plugin import PluginError as PluginError
from .kinds._plugin import _check
from .kinds._plugin import available_plugins as available_plugins
from .kinds._plugin import build_plugin as build_plugin
from .kinds._plugin import hook_options as hook_options
from .kinds._plugin import implements as implements
from .kinds._plugin import plugin_methods as plugin_methods
from .kinds._plugin import register_plugin as register_plugin
from .kinds._plugin import resolve_plugin as resolve_plugin
from .kinds._plugin import run_time_hooks as run_time_hooks
from .kinds._plugin import unregister_plugin as unregister_plugin

#: A Plugin (or Plugin class) checked as a plugin (for tether.eval's run-level hooks).
checked_plugin = _check

if TYPE_CHECKING:
    from ._background import drain as drain
    from ._claude_code import TETHER_TO_CLAUDE as TETHER_TO_CLAUDE
    from ._claude_code import ClaudeCodeHook as ClaudeCodeHook
    from ._claude_code import claude_input as claude_input
    from ._claude_code import remove_session as remove_session
    from ._claude_code import session_folder as session_folder
    from ._claude_scopes import claude_code_settings as claude_code_settings
    from ._claude_settings import ClaudeCodeHooks as ClaudeCodeHooks
    from ._claude_settings import ClaudeCodeHooksError as ClaudeCodeHooksError
    from ._claude_settings import claude_code_hooks as claude_code_hooks
    from ._files import MAX_FILE_BYTES as MAX_FILE_BYTES
    from ._files import FileRefused as FileRefused
    from ._files import read_small_file as read_small_file
    from ._history import HistoryRecorder as HistoryRecorder
    from ._resources import close_resources as close_resources
    from ._resources import on_close as on_close
    from ._secrets import CommandSecrets as CommandSecrets
    from ._taxonomy import FAMILIES as FAMILIES
    from ._taxonomy import describe_events as describe_events
    from .kinds._base import BaseHookConfig as BaseHookConfig
    from .kinds._base import SecretText as SecretText
    from .kinds._base import masked_errors as masked_errors
    from .kinds._command import CommandHookConfig as CommandHookConfig
    from .kinds._http import HttpHook as HttpHook
    from .kinds._http import HttpHookConfig as HttpHookConfig
    from .kinds._persistent import PersistentHook as PersistentHook
    from .kinds._prompt import BUILDERS as BUILDERS
    from .kinds._prompt import DEFAULT_MODELS as DEFAULT_MODELS
    from .kinds._prompt import PromptHookConfig as PromptHookConfig
    from .kinds._registry import EXECUTOR_KINDS as EXECUTOR_KINDS
    from .kinds._registry import HookConfig as HookConfig

#: Names loaded on first use: HookConfig needs pydantic (~0.1 s to import); the HTTP and
#: persistent hooks are not needed by most programs, nor the Claude Code settings, the event
#: taxonomy or the history recorder by ``import tether``.
_LAZY = {
    "HookConfig": ".kinds._registry",
    "HttpHook": ".kinds._http",
    "PersistentHook": ".kinds._persistent",
    "drain": "._background",
    "TETHER_TO_CLAUDE": "._claude_code",
    "ClaudeCodeHook": "._claude_code",
    "claude_input": "._claude_code",
    "remove_session": "._claude_code",
    "session_folder": "._claude_code",
    "claude_code_settings": "._claude_scopes",
    "ClaudeCodeHooks": "._claude_settings",
    "ClaudeCodeHooksError": "._claude_settings",
    "claude_code_hooks": "._claude_settings",
    "CommandHookConfig": ".kinds._command",
    "SecretText": ".kinds._base",
    "masked_errors": ".kinds._base",
    "MAX_FILE_BYTES": "._files",
    "FileRefused": "._files",
    "read_small_file": "._files",
    "HistoryRecorder": "._history",
    "EXECUTOR_KINDS": ".kinds._registry",
    "BUILDERS": ".kinds._prompt",
    "DEFAULT_MODELS": ".kinds._prompt",
    "PromptHookConfig": ".kinds._prompt",
    "close_resources": "._resources",
    "on_close": "._resources",
    "CommandSecrets": "._secrets",
    "FAMILIES": "._taxonomy",
    "describe_events": "._taxonomy",
    "HttpHookConfig": ".kinds._http",
    "BaseHookConfig": ".kinds._base",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        return getattr(importlib.import_module(module, __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BLOCKABLE_EVENTS",
    "SAFE_ENV_VARS",
    "CommandHookError",
    "DispatchResult",
    "HookBlocked",
    "HookConfig",
    "HookContext",
    "HookError",
    "HookErrorInfo",
    "HookEvent",
    "HookInfo",
    "HookManager",
    "HookRun",
    "HookTimeoutError",
    "HttpHook",
    "HttpHookError",
    "HttpHookTimeoutError",
    "PersistentHook",
    "Plugin",
    "PluginContext",
    "PluginError",
    "PromptHookError",
    "ShellHook",
    "ShellHookResult",
    "available_plugins",
    "hook_options",
    "implements",
]
