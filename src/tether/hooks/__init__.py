"""The hook engine: events, contexts, the manager, hook configs and command hooks.

This package knows nothing of processes: it dispatches an event with a data dict to an ordered
chain of hooks and reports what happened.
"""

from typing import TYPE_CHECKING, Any

from ._context import HookContext as HookContext
from ._errors import CommandHookError as CommandHookError
from ._errors import HookBlocked as HookBlocked
from ._errors import HookError as HookError
from ._errors import HookTimeoutError as HookTimeoutError
from ._errors import HttpHookError as HttpHookError
from ._errors import HttpHookTimeoutError as HttpHookTimeoutError
from ._errors import PromptHookError as PromptHookError
from ._events import BLOCKABLE_EVENTS as BLOCKABLE_EVENTS
from ._events import HookEvent as HookEvent
from ._manager import DispatchResult as DispatchResult
from ._manager import HookErrorInfo as HookErrorInfo
from ._manager import HookInfo as HookInfo
from ._manager import HookManager as HookManager
from ._programs import SAFE_ENV_VARS as SAFE_ENV_VARS
from ._records import HookRun as HookRun
from ._shell import ShellHook as ShellHook
from ._shell import ShellHookResult as ShellHookResult
from .kinds._plugin import Plugin as Plugin
from .kinds._plugin import PluginContext as PluginContext
from .kinds._plugin import PluginError as PluginError
from .kinds._plugin import available_plugins as available_plugins
from .kinds._plugin import hook_options as hook_options
from .kinds._plugin import implements as implements

if TYPE_CHECKING:
    from .kinds._http import HttpHook as HttpHook
    from .kinds._persistent import PersistentHook as PersistentHook
    from .kinds._registry import EXECUTOR_KINDS as EXECUTOR_KINDS
    from .kinds._registry import HookConfig as HookConfig

#: Names loaded on first use: the kinds' declarations need pydantic (~0.1 s to import); the
#: HTTP and persistent hooks are not needed by most programs. (EXECUTOR_KINDS, the names of
#: the kinds, is for the layers above; it is not part of ``__all__``.)
_LAZY = {
    "HookConfig": ".kinds._registry",
    "EXECUTOR_KINDS": ".kinds._registry",
    "HttpHook": ".kinds._http",
    "PersistentHook": ".kinds._persistent",
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
