"""One agent run: model turns, tools, approval, budget, guardrails, conversation and state.

``__all__`` is the public API; the other names imported here are for tether's other packages,
which import the agent through this module only, never through its private modules.
"""

import warnings
from typing import Any

from .._public import published
from ._budget import BudgetBlock as BudgetBlock
from ._budget import BudgetTracker as BudgetTracker
from ._config import BudgetConfig as BudgetConfig
from ._config import ContextConfig as ContextConfig
from ._config import GuardrailConfig as GuardrailConfig
from ._config import ModelPrice as ModelPrice
from ._context import AgentContext as AgentContext
from ._context import ConversationBuffer as ConversationBuffer
from ._guardrails import GuardrailBlock as GuardrailBlock
from ._guardrails import scan as scan
from ._guardrails import scan_payload as scan_payload
from ._loop import AgentLoop as AgentLoop
from ._loop import Emit as Emit
from ._loop import RunBlocked as RunBlocked
from ._loop import RunError as RunError
from ._loop import RunRefused as RunRefused
from ._loop import RunResult as RunResult
from ._model_hooks import InvalidModelCallRewrite as InvalidModelCallRewrite
from ._model_hooks import ModelCallContext as ModelCallContext
from ._observer import Note as Note
from ._observer import Observer as Observer
from ._prompt_hook import PromptHook as PromptHook
from ._steps import RunSteps as RunSteps
from ._steps import ToolCallInfo as ToolCallInfo
from ._steps import current_tool_call as current_tool_call
from ._steps import describe_step as describe_step
from ._tool_hooks import Dispatch as Dispatch
from ._tool_hooks import InvalidArgumentsRewrite as InvalidArgumentsRewrite
from ._tool_hooks import ToolCallContext as ToolCallContext
from ._tool_hooks import permission_denied as permission_denied
from ._tools import Tool as Tool
from ._tools import ToolArgumentsError as ToolArgumentsError
from ._tools import as_tool as as_tool
from ._tools import check_import_path as check_import_path
from ._tools import import_tool as import_tool
from ._tools import tool as tool
from ._transcript import TranscriptFile as TranscriptFile
from ._usage import Usage as Usage
from ._usage import UsageMeter as UsageMeter

__all__ = [
    "AgentContext",
    "AgentLoop",
    "BudgetBlock",
    "BudgetConfig",
    "BudgetTracker",
    "ContextConfig",
    "ConversationBuffer",
    "GuardrailBlock",
    "GuardrailConfig",
    "InvalidArgumentsRewrite",
    "InvalidModelCallRewrite",
    "ModelCallContext",
    "ModelPrice",
    "PromptHook",
    "RunBlocked",
    "RunError",
    "RunRefused",
    "RunResult",
    "Tool",
    "ToolArgumentsError",
    "ToolCallContext",
    "ToolCallInfo",
    "Usage",
    "UsageMeter",
    "as_tool",
    "current_tool_call",
    "permission_denied",
    "scan",
    "tool",
]

published(globals())

#: Old names, kept working with a DeprecationWarning: "deny" is the word of an approval
#: decision only; a budget limit or a guardrail blocks.
_RENAMED = {"BudgetDenial": "BudgetBlock", "GuardrailDenial": "GuardrailBlock"}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"tether.agent.{name} is deprecated; use tether.agent.{new}", DeprecationWarning, 2
    )
    return globals()[new]
