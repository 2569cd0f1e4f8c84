"""The callback kind: an async Python callable declared in code (never serialized)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from ._config import HookConfig
from ._executor import CallbackExecutor

if TYPE_CHECKING:
    from ._executor import Executor
    from ._manager import HookManager

__all__ = ["CallbackHookConfig"]


class CallbackHookConfig(HookConfig):
    """A hook that calls an async Python function with the HookContext."""

    kind: ClassVar[str] = "callback"
    key: ClassVar[str] = "callback"
    default_timeout: ClassVar[float] = 30.0

    callback: Callable[..., Any] = Field(
        exclude=True, description="Async Python hook (code only; not serialized)"
    )

    @field_validator("callback")
    @classmethod
    def _async_callback(cls, value: Any) -> Any:
        from ._hook import _callable_name, _is_async_callable

        if not _is_async_callable(value):
            raise TypeError(
                f"callback {_callable_name(value)!r} must be an async function (async def) "
                "or an object with an async __call__"
            )
        return value

    def executor(self, manager: HookManager) -> Executor:
        return CallbackExecutor(self.callback)
