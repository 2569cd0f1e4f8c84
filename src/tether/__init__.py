"""tether: a runtime for long-lived, supervised AI agent processes, with lifecycle hooks.

``import tether`` stays light: the hook engine is imported eagerly, everything that needs
pydantic, the openai SDK, starlette or the like is imported on first use of its name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .hooks import BLOCKABLE_EVENTS as BLOCKABLE_EVENTS
from .hooks import SAFE_ENV_VARS as SAFE_ENV_VARS
from .hooks import CommandHookError as CommandHookError
from .hooks import DispatchResult as DispatchResult
from .hooks import HookBlocked as HookBlocked
from .hooks import HookContext as HookContext
from .hooks import HookError as HookError
from .hooks import HookErrorInfo as HookErrorInfo
from .hooks import HookEvent as HookEvent
from .hooks import HookInfo as HookInfo
from .hooks import HookManager as HookManager
from .hooks import HookRun as HookRun
from .hooks import HookTimeoutError as HookTimeoutError
from .hooks import ShellHook as ShellHook
from .hooks import ShellHookResult as ShellHookResult

if TYPE_CHECKING:
    from .hooks._config import HookConfig as HookConfig

__version__ = "0.1.0"

# Public name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "HookConfig": "tether.hooks._config",
}

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
    "ShellHook",
    "ShellHookResult",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
