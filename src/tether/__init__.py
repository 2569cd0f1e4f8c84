"""tether: a runtime for long-lived, supervised AI agent processes, with lifecycle hooks.

``import tether`` stays light: the hook engine is imported eagerly, everything that needs
pydantic, the openai SDK, starlette or the like is imported on first use of its name.

Every public name is written once, in the table of ``tether/_public.py`` (name -> the package
exporting it): ``__all__``, the eager imports and the lazy ones derive from it. The imports
under ``TYPE_CHECKING`` repeat it for type checkers, which cannot read a table; a test keeps
the two equal.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._public import EAGER, HOME, PUBLIC
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from .agent import BudgetConfig as BudgetConfig
    from .agent import ContextConfig as ContextConfig
    from .agent import GuardrailConfig as GuardrailConfig
    from .agent import ModelPrice as ModelPrice
    from .agent import PromptHook as PromptHook
    from .agent import Tool as Tool
    from .agent import ToolCallInfo as ToolCallInfo
    from .agent import current_tool_call as current_tool_call
    from .agent import tool as tool
    from .api import OrchestrationAPI as OrchestrationAPI
    from .approval import ApprovalDecision as ApprovalDecision
    from .approval import ApprovalPolicy as ApprovalPolicy
    from .approval import ApprovalRequest as ApprovalRequest
    from .cluster import ClusterError as ClusterError
    from .cluster import ClusterNode as ClusterNode
    from .errors import TetherError as TetherError
    from .hooks import BLOCKABLE_EVENTS as BLOCKABLE_EVENTS
    from .hooks import SAFE_ENV_VARS as SAFE_ENV_VARS
    from .hooks import ClaudeCodeHooks as ClaudeCodeHooks
    from .hooks import ClaudeCodeHooksError as ClaudeCodeHooksError
    from .hooks import CommandHookError as CommandHookError
    from .hooks import DispatchResult as DispatchResult
    from .hooks import HookBlocked as HookBlocked
    from .hooks import HookConfig as HookConfig
    from .hooks import HookContext as HookContext
    from .hooks import HookError as HookError
    from .hooks import HookErrorInfo as HookErrorInfo
    from .hooks import HookEvent as HookEvent
    from .hooks import HookInfo as HookInfo
    from .hooks import HookManager as HookManager
    from .hooks import HookRun as HookRun
    from .hooks import HookTimeoutError as HookTimeoutError
    from .hooks import HttpHook as HttpHook
    from .hooks import HttpHookError as HttpHookError
    from .hooks import HttpHookTimeoutError as HttpHookTimeoutError
    from .hooks import PersistentHook as PersistentHook
    from .hooks import Plugin as Plugin
    from .hooks import PluginContext as PluginContext
    from .hooks import PluginError as PluginError
    from .hooks import PromptHookError as PromptHookError
    from .hooks import ShellHook as ShellHook
    from .hooks import ShellHookResult as ShellHookResult
    from .hooks import available_plugins as available_plugins
    from .hooks import claude_code_hooks as claude_code_hooks
    from .hooks import claude_code_settings as claude_code_settings
    from .hooks import hook_options as hook_options
    from .hooks import implements as implements
    from .manifest import AgentManifest as AgentManifest
    from .manifest import ManifestError as ManifestError
    from .manifest import load_manifest as load_manifest
    from .manifest import manifest_to_process_config as manifest_to_process_config
    from .process import AgentProcess as AgentProcess
    from .process import CronTrigger as CronTrigger
    from .process import EventTrigger as EventTrigger
    from .process import FileWatchTrigger as FileWatchTrigger
    from .process import InvalidEventError as InvalidEventError
    from .process import McpServerConfig as McpServerConfig
    from .process import NothingToRollBackError as NothingToRollBackError
    from .process import OpenModeConfig as OpenModeConfig
    from .process import ProcessBusyError as ProcessBusyError
    from .process import ProcessConfig as ProcessConfig
    from .process import ProcessError as ProcessError
    from .process import ProcessState as ProcessState
    from .process import ProcessStateError as ProcessStateError
    from .process import QueueUnavailableError as QueueUnavailableError
    from .process import RestartPolicy as RestartPolicy
    from .process import SpawnRefusedError as SpawnRefusedError
    from .process import TriggerEvent as TriggerEvent
    from .process import WebhookTrigger as WebhookTrigger
    from .runtime import AgentRuntime as AgentRuntime
    from .runtime import ProcessExistsError as ProcessExistsError
    from .runtime import WebhookClashError as WebhookClashError
    from .telemetry import Telemetry as Telemetry

if not TYPE_CHECKING:
    # Hidden from type checkers, which read no computed __all__: without one they export
    # exactly the names imported above as ``X as X`` (``from tether import *`` included).
    __all__ = sorted(HOME)

for _package in EAGER:
    _names = vars(importlib.import_module(f".{_package}", __name__))
    # A name the package itself loads on first use (HookConfig: pydantic) waits for its use.
    globals().update({name: _names[name] for name in PUBLIC[_package] if name in _names})


def __getattr__(name: str) -> Any:
    package = HOME.get(name)
    if package is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{package}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(HOME))
