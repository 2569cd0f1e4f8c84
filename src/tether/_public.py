"""The public names of ``tether``, each written once, by the package that exports it.

The facade (``tether/__init__.py``) derives from this table its ``__all__`` and which package
to import for a name; each package calls :func:`published` so the classes and functions it
lends ``tether`` say ``tether`` in their ``__module__`` (reprs and tracebacks read
``tether.AgentProcess``, pickles load them from ``tether``). This module imports nothing, so
any package may read it.
"""

from __future__ import annotations

from types import FunctionType
from typing import Any, Final

#: Package (or module) below ``tether`` -> the names ``tether`` re-exports from it.
PUBLIC: Final[dict[str, tuple[str, ...]]] = {
    "errors": ("TetherError",),
    "hooks": (
        "BLOCKABLE_EVENTS",
        "SAFE_ENV_VARS",
        "ClaudeCodeHooks",
        "ClaudeCodeHooksError",
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
        "claude_code_hooks",
        "claude_code_settings",
        "hook_options",
        "implements",
    ),
    "agent": (
        "BudgetConfig",
        "ContextConfig",
        "GuardrailConfig",
        "ModelPrice",
        "PromptHook",
        "Tool",
        "ToolCallInfo",
        "current_tool_call",
        "tool",
    ),
    "approval": ("ApprovalDecision", "ApprovalPolicy", "ApprovalRequest"),
    "telemetry": ("Telemetry",),
    "process": (
        "AgentProcess",
        "CronTrigger",
        "EventTrigger",
        "FileWatchTrigger",
        "InvalidEventError",
        "McpServerConfig",
        "NothingToRollBackError",
        "OpenModeConfig",
        "ProcessBusyError",
        "ProcessConfig",
        "ProcessError",
        "ProcessState",
        "ProcessStateError",
        "QueueUnavailableError",
        "RestartPolicy",
        "SpawnRefusedError",
        "TriggerEvent",
        "WebhookTrigger",
    ),
    "manifest": ("AgentManifest", "ManifestError", "load_manifest", "manifest_to_process_config"),
    "runtime": ("AgentRuntime", "ProcessExistsError", "WebhookClashError"),
    "cluster": ("ClusterError", "ClusterNode"),
    "api": ("OrchestrationAPI",),
}

#: Loaded by ``import tether`` itself (the hook engine, light); the others on first use.
EAGER: Final = ("errors", "hooks")

#: Public name -> the package that exports it.
HOME: Final[dict[str, str]] = {name: package for package, names in PUBLIC.items() for name in names}


#: Public names that keep the module they are defined in: pydantic resolves the string
#: annotations of a dataclass it validates (``Tool``, in ``ProcessConfig.tools``) in the module
#: its ``__module__`` names, so that must stay the defining one.
KEEP_MODULE: Final = frozenset({"Tool"})


def published(namespace: dict[str, Any]) -> None:
    """Set ``__module__`` to ``"tether"`` on the classes and functions that ``tether``
    re-exports from the package (or module) whose ``globals()`` these are. A name the package
    loads on first use is not in them yet: its own module says ``tether`` then."""
    for name in PUBLIC[namespace["__name__"].removeprefix("tether.")]:
        value = namespace.get(name)
        if isinstance(value, type | FunctionType) and name not in KEEP_MODULE:
            value.__module__ = "tether"
