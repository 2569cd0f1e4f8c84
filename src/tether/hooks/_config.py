"""HookConfig: one hook declared as data (a command) or in code (a callback)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ._events import VALID_EVENT_VALUES, parse_event

__all__ = ["MAX_OUTPUT_LIMIT", "HookConfig", "SecretText"]

MAX_OUTPUT_LIMIT = 10 * 1024 * 1024


class NotShown:
    """What a validation error shows for a value of another type than text given where a
    secret goes: its type, never the value itself."""

    __slots__ = ("kind",)

    def __init__(self, value: object) -> None:
        self.kind = type(value).__name__

    def __repr__(self) -> str:
        return f"<{self.kind}, not shown>"


def _withheld(value: Any) -> Any:
    return value if isinstance(value, str | SecretStr) else NotShown(value)


#: A secret value: text (kept as SecretStr). One of another type is refused, and the error
#: names the field and that it takes a string, but shows only the type of what it got.
SecretText = Annotated[SecretStr, BeforeValidator(_withheld)]

#: What each number field of HookConfig takes, for the message refusing a bool there.
_NUMBERS = {
    "timeout": "a number of seconds, > 0 and at most 3600",
    "priority": "an int",
    "max_output_bytes": f"an int of bytes, between 1 and {MAX_OUTPUT_LIMIT} (10 MiB)",
}


def masked_errors(
    exc: ValidationError, hidden: Callable[[tuple[Any, ...], Any, str], bool]
) -> ValidationError:
    """``exc`` with the input of each error for which ``hidden(loc, input, type)`` holds shown
    as ``'<not shown>'``; every other error keeps its input (and each its message)."""
    from typing import get_args

    from pydantic_core.core_schema import ErrorType

    known = set(get_args(ErrorType))
    details: list[Any] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        value = err["input"]
        kind: Any = err["type"]
        masked = hidden(loc, value, str(kind))
        if kind not in known:  # a custom error: its message as it was
            kind = PydanticCustomError(kind, str(err["msg"]).replace("{", "{{").replace("}", "}}"))
        detail: dict[str, Any] = {
            "type": kind,
            "loc": loc,
            "input": "<not shown>" if masked else value,
        }
        if "ctx" in err and not isinstance(kind, PydanticCustomError):
            detail["ctx"] = err["ctx"]
        details.append(detail)
    return ValidationError.from_exception_data(exc.title, details)


def _holds_env(loc: tuple[Any, ...], value: Any, kind: str) -> bool:
    """An error whose input may hold an ``env`` value: one of the whole declaration (its input
    is every field) or of ``env`` as a whole. (An env value of another type than text is
    already a NotShown, its type alone.)"""
    return not loc or (loc[0] == "env" and isinstance(value, dict | list | tuple))


class HookConfig(BaseModel):
    """A hook declaration: exactly one of ``command`` or ``callback``.

    ``timeout`` unset means 5 s for a command and 30 s for a callback. ``env`` values are
    secrets: masked in every JSON dump, and never shown by a validation error.
    """

    # defer_build: the validator is built when the first hook is declared, not when the name
    # is imported (pydantic's schema build and its plugin scan of every installed package).
    model_config = ConfigDict(
        extra="forbid", arbitrary_types_allowed=True, frozen=False, defer_build=True
    )

    event: str = Field(description="A HookEvent value, for example 'user_prompt_submit'")
    command: str | list[str] | None = Field(
        default=None, description="Program and arguments (a string is split with shlex.split)"
    )
    callback: Callable[..., Any] | None = Field(
        default=None, exclude=True, description="Async Python hook (code only; not serialized)"
    )
    timeout: float | None = Field(
        default=None, gt=0, le=3600, description="Seconds the hook may run (5 command, 30 callback)"
    )
    priority: int = Field(default=0, description="Higher runs first")
    once: bool = Field(default=False, description="Run on the first matching event only")
    tag: str | None = Field(default=None, description="Group name for remove_by_tag()")
    fail_closed: bool = Field(
        default=False, description="An error or timeout blocks the action (blockable events)"
    )
    cwd: str | None = Field(default=None, description="Working directory of the command")
    env: dict[str, SecretText] = Field(
        default_factory=dict, description="Extra variables; ${VAR} resolved when the hook runs"
    )
    env_passthrough: list[str] = Field(
        default_factory=list, description="Host environment variables passed to the command"
    )
    max_output_bytes: int = Field(
        default=65536, gt=0, le=MAX_OUTPUT_LIMIT, description="Largest stdout accepted"
    )
    mode: Literal["sync", "async"] = Field(
        default="sync", description="'async' runs the hook in the background after the event"
    )
    matcher: dict[str, str | list[str]] | None = Field(
        default=None, description="Run only when these data fields match glob patterns"
    )
    name: str | None = Field(default=None, description="A readable name for catalogs and history")
    #: Where the declaration came from, for catalogs and history ("manifest" when a manifest
    #: declared it); None means "config". Set by the layer that built it, never serialized.
    _source: str | None = PrivateAttr(default=None)

    @field_validator("event")
    @classmethod
    def _known_event(cls, value: str) -> str:
        try:
            return parse_event(value).value
        except ValueError:
            raise ValueError(
                f"unknown hook event {value!r}; valid events are: {VALID_EVENT_VALUES}"
            ) from None

    @field_validator("timeout", "priority", "max_output_bytes", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any, info: ValidationInfo) -> Any:
        # A bool is an int to pydantic: ``timeout: yes`` would be one second (register() and
        # ShellHook refuse a bool too).
        if isinstance(value, bool):
            allowed = _NUMBERS[info.field_name or ""]
            raise ValueError(f"{info.field_name} must be {allowed}, got {value!r}")
        return value

    @field_validator("command")
    @classmethod
    def _non_empty_command(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None and (not value or (isinstance(value, str) and not value.strip())):
            raise ValueError("command must name a program, got an empty command")
        if isinstance(value, str):
            import shlex

            try:
                shlex.split(value)
            except ValueError as exc:  # e.g. an unmatched quote
                raise ValueError(
                    f"command {value!r} cannot be split like a shell would: {exc}"
                ) from None
        return value

    @field_validator("callback")
    @classmethod
    def _async_callback(cls, value: Any) -> Any:
        if value is not None:
            from ._hook import _callable_name, _is_async_callable

            if not _is_async_callable(value):
                raise TypeError(
                    f"callback {_callable_name(value)!r} must be an async function (async def) "
                    "or an object with an async __call__"
                )
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> HookConfig:
        if (self.command is None) == (self.callback is None):
            which = "both" if self.command is not None else "neither"
            raise ValueError(f"set exactly one of 'command' or 'callback' (got {which})")
        if self.mode == "async" and self.fail_closed:
            raise ValueError("mode 'async' cannot be fail_closed: a background hook cannot block")
        if self.matcher is not None:
            from ._matcher import Matcher

            Matcher.build(parse_event(self.event), dict(self.matcher))
        return self

    # Declared last, so it wraps every other validator (those declared after it run outside).
    @model_validator(mode="wrap")
    @classmethod
    def _errors_without_env(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            raise masked_errors(exc, _holds_env) from None


HookConfig.__module__ = "tether"
