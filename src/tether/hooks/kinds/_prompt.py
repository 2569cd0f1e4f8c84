"""The prompt kind: a model reads the event and decides allow or deny (see
tether.agent.PromptHook).

The model lives above the engine, so this module declares the kind and the layer that knows
models fills in how it is built: ``tether.agent`` sets ``BUILDERS["prompt"]`` when it is
imported (an AgentProcess always imports it), and a process names its model as the default
of its manager's prompt hooks (``DEFAULT_MODELS``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_serializer, field_validator

from ._base import BaseHookConfig, NotThisKind, not_this_kind

if TYPE_CHECKING:
    from .._executor import Executor
    from .._hook import Engine

__all__ = ["BUILDERS", "DEFAULT_MODELS", "PromptHookConfig"]

#: How a prompt hook's executor is built: set by tether.agent (the layer that knows models).
BUILDERS: dict[str, Callable[[PromptHookConfig, Engine], Executor]] = {}
#: The model a manager's prompt hooks use when they name none (a process's own), looked up
#: at each event: the process makes its model when it starts.
DEFAULT_MODELS: weakref.WeakKeyDictionary[object, Callable[[], Any]] = weakref.WeakKeyDictionary()


class PromptHookConfig(BaseHookConfig):
    """A hook answered by a model under a policy ``prompt``: allow, or deny with a reason.

    ``model`` is a model spec (``"openai:<name>"``, ``"scripted"``) or, in code, a model object;
    unset, the process's own model answers. Each event costs one model call.
    """

    kind: ClassVar[str] = "prompt"
    key: ClassVar[str] = "prompt"
    default_timeout: ClassVar[float] = 30.0

    prompt: str = Field(description="The policy the model applies to each event")
    model: Any = Field(
        default=None,
        description="Model spec ('openai:<name>', 'scripted'); unset: the process's model",
        json_schema_extra={"type": ["string", "null"]},
    )
    command: NotThisKind = not_this_kind()
    callback: NotThisKind = not_this_kind()

    @field_validator("prompt")
    @classmethod
    def _a_policy(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt must state the policy, got an empty text")
        return value

    @field_validator("model")
    @classmethod
    def _a_model(cls, value: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, str):
            name = value.removeprefix("openai:")
            if value == "scripted" or (name != value and name.strip() and name == name.strip()):
                return value
        if not isinstance(value, str) and callable(getattr(value, "complete", None)):
            return value
        raise ValueError(
            "model must be a model spec ('openai:<model name>' or 'scripted') or an object "
            f"with an async complete(), got {value!r}"
        )

    @field_serializer("model")
    def _model_name(self, value: Any) -> Any:
        return value if value is None or isinstance(value, str) else getattr(value, "name", None)

    def executor(self, manager: Engine) -> Executor:
        build = BUILDERS.get("prompt")
        if build is None:
            raise RuntimeError(
                "prompt hooks are built by tether.agent, which is not loaded: import "
                "tether.agent first (an AgentProcess does), or register "
                "tether.PromptHook(...).callback in code"
            )
        return build(self, manager)
