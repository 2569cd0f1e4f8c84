"""tether: a runtime for long-lived, supervised AI agent processes, with lifecycle hooks.

``import tether`` stays light: the hook engine is imported eagerly, everything that needs
pydantic, the openai SDK, starlette or the like is imported on first use of its name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import TetherError as TetherError
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
from .hooks import HttpHookError as HttpHookError
from .hooks import HttpHookTimeoutError as HttpHookTimeoutError
from .hooks import Plugin as Plugin
from .hooks import PluginContext as PluginContext
from .hooks import PluginError as PluginError
from .hooks import PromptHookError as PromptHookError
from .hooks import ShellHook as ShellHook
from .hooks import ShellHookResult as ShellHookResult
from .hooks import available_plugins as available_plugins
from .hooks import hook_options as hook_options
from .hooks import implements as implements

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
    from .hooks import HookConfig as HookConfig
    from .hooks import HttpHook as HttpHook
    from .hooks import PersistentHook as PersistentHook
    from .hooks._claude_scopes import claude_code_settings as claude_code_settings
    from .hooks._claude_settings import ClaudeCodeHooks as ClaudeCodeHooks
    from .hooks._claude_settings import ClaudeCodeHooksError as ClaudeCodeHooksError
    from .hooks._claude_settings import claude_code_hooks as claude_code_hooks
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

__version__ = "0.1.0"

# Public name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    "HookConfig": "tether.hooks",
    "HttpHook": "tether.hooks",
    "PersistentHook": "tether.hooks",
    "PromptHook": "tether.agent",
    "ClaudeCodeHooks": "tether.hooks._claude_settings",
    "ClaudeCodeHooksError": "tether.hooks._claude_settings",
    "claude_code_settings": "tether.hooks._claude_scopes",
    "claude_code_hooks": "tether.hooks._claude_settings",
    "AgentRuntime": "tether.runtime",
    "ClusterError": "tether.cluster",
    "ClusterNode": "tether.cluster",
    "ProcessExistsError": "tether.runtime",
    "WebhookClashError": "tether.runtime",
    "OrchestrationAPI": "tether.api",
    "AgentManifest": "tether.manifest",
    "ManifestError": "tether.manifest",
    "load_manifest": "tether.manifest",
    "manifest_to_process_config": "tether.manifest",
    "AgentProcess": "tether.process",
    "ProcessConfig": "tether.process",
    "ProcessState": "tether.process",
    "TriggerEvent": "tether.process",
    "InvalidEventError": "tether.process",
    "CronTrigger": "tether.process",
    "WebhookTrigger": "tether.process",
    "FileWatchTrigger": "tether.process",
    "EventTrigger": "tether.process",
    "OpenModeConfig": "tether.process",
    "RestartPolicy": "tether.process",
    "ProcessError": "tether.process",
    "ProcessBusyError": "tether.process",
    "NothingToRollBackError": "tether.process",
    "McpServerConfig": "tether.process",
    "ProcessStateError": "tether.process",
    "QueueUnavailableError": "tether.process",
    "SpawnRefusedError": "tether.process",
    "ContextConfig": "tether.agent",
    "BudgetConfig": "tether.agent",
    "GuardrailConfig": "tether.agent",
    "ModelPrice": "tether.agent",
    "Tool": "tether.agent",
    "ToolCallInfo": "tether.agent",
    "current_tool_call": "tether.agent",
    "tool": "tether.agent",
    "ApprovalPolicy": "tether.approval",
    "ApprovalDecision": "tether.approval",
    "ApprovalRequest": "tether.approval",
    "Telemetry": "tether.telemetry",
}

__all__ = [
    "BLOCKABLE_EVENTS",
    "SAFE_ENV_VARS",
    "AgentManifest",
    "AgentProcess",
    "AgentRuntime",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "BudgetConfig",
    "ClaudeCodeHooks",
    "ClaudeCodeHooksError",
    "ClusterError",
    "ClusterNode",
    "CommandHookError",
    "ContextConfig",
    "CronTrigger",
    "DispatchResult",
    "EventTrigger",
    "FileWatchTrigger",
    "GuardrailConfig",
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
    "InvalidEventError",
    "ManifestError",
    "McpServerConfig",
    "ModelPrice",
    "NothingToRollBackError",
    "OpenModeConfig",
    "OrchestrationAPI",
    "PersistentHook",
    "Plugin",
    "PluginContext",
    "PluginError",
    "ProcessBusyError",
    "ProcessConfig",
    "ProcessError",
    "ProcessExistsError",
    "ProcessState",
    "ProcessStateError",
    "PromptHook",
    "PromptHookError",
    "QueueUnavailableError",
    "RestartPolicy",
    "ShellHook",
    "ShellHookResult",
    "SpawnRefusedError",
    "Telemetry",
    "TetherError",
    "Tool",
    "ToolCallInfo",
    "TriggerEvent",
    "WebhookClashError",
    "WebhookTrigger",
    "available_plugins",
    "claude_code_hooks",
    "claude_code_settings",
    "current_tool_call",
    "hook_options",
    "implements",
    "load_manifest",
    "manifest_to_process_config",
    "tool",
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
