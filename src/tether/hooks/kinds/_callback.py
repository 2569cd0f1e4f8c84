"""The callback kind: an async Python callable declared in code (never serialized).

Its executor is :class:`~tether.hooks._executor.CallbackExecutor`, the engine's own for any
callable registered in code (``manager.register``, ``@manager.on``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, SecretStr, field_validator

from .._executor import CallbackExecutor
from .._hook import _callable_name, _is_async_callable
from .._limits import DEFAULT_OUTPUT_BYTES
from ._base import BaseHookConfig, NotThisKind, not_this_kind

if TYPE_CHECKING:
    from .._executor import Executor
    from .._hook import Engine

__all__ = ["CallbackHookConfig"]


class CallbackHookConfig(BaseHookConfig):
    """A hook that calls an async Python function with the HookContext."""

    kind: ClassVar[str] = "callback"
    key: ClassVar[str] = "callback"
    default_timeout: ClassVar[float] = 30.0

    callback: Callable[..., Any] = Field(
        exclude=True, description="Async Python hook (code only; not serialized)"
    )
    command: NotThisKind = not_this_kind()

    @field_validator("callback")
    @classmethod
    def _async_callback(cls, value: Any) -> Any:
        if not _is_async_callable(value):
            raise TypeError(
                f"callback {_callable_name(value)!r} must be an async function (async def) "
                "or an object with an async __call__"
            )
        return value

    def executor(self, manager: Engine) -> Executor:
        return CallbackExecutor(self.callback)

    # The reference documents HookConfig as one table of fields: a callback hook reads the
    # command's own fields as their defaults.
    @property
    def cwd(self) -> None:
        return None

    @property
    def env(self) -> dict[str, SecretStr]:
        return {}

    @property
    def env_passthrough(self) -> list[str]:
        return []

    @property
    def max_output_bytes(self) -> int:
        return DEFAULT_OUTPUT_BYTES
