"""What every hook declaration has: the fields and checks each kind's config shares.

A kind's config (kinds/_command.py's CommandHookConfig, …) derives from
:class:`BaseHookConfig` and adds its own fields and ``executor()``; kinds/_registry.py lists
the kinds and builds the public ``HookConfig`` from them. Nothing here knows which kinds exist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

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
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from .._events import VALID_EVENT_VALUES, parse_event
from .._limits import (
    DEFAULT_OUTPUT_BYTES,
    MAX_OUTPUT_LIMIT,
    MAX_TIMEOUT,
    OUTPUT_ALLOWED,
    TIMEOUT_ALLOWED,
)

if TYPE_CHECKING:
    from .._executor import Executor
    from .._hook import Engine

__all__ = [
    "BaseHookConfig",
    "NotThisKind",
    "SecretText",
    "masked_errors",
    "not_a_bool",
    "not_exactly_one",
    "not_this_kind",
    "output_limit",
]


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

#: What each number field of a hook declaration takes, for the message refusing a bool there.
_NUMBERS = {
    "timeout": TIMEOUT_ALLOWED,
    "priority": "an int",
    "max_output_bytes": OUTPUT_ALLOWED,
}


#: The type of a field another kind selects by (a command's ``callback``): always None. The
#: reference documents HookConfig as one table, so every kind reads ``command`` and
#: ``callback``; it is never serialized nor in the JSON schema.
NotThisKind = SkipJsonSchema[None]


def not_this_kind() -> Any:
    """The field of a ``NotThisKind`` key: None, excluded from dumps."""
    return Field(default=None, exclude=True)


def output_limit(what: str) -> Any:
    """The ``max_output_bytes`` field of a kind that reads an answer (``what`` it bounds)."""
    return Field(default=DEFAULT_OUTPUT_BYTES, gt=0, le=MAX_OUTPUT_LIMIT, description=what)


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
    is every field) or of ``env`` (or an HTTP hook's ``headers``) as a whole. (An env value of
    another type than text is already a NotShown, its type alone.)"""
    return not loc or (loc[0] in ("env", "headers") and isinstance(value, dict | list | tuple))


class BaseHookConfig(BaseModel):
    """A hook declaration: the fields below are every kind's; a kind adds the field that
    selects it (``command``, ``callback``, ``url``, ``prompt``) and its own.

    ``timeout`` unset means 5 s for a command and 30 s for a callback. ``env`` values are
    secrets: masked in every JSON dump, and never shown by a validation error.
    """

    # defer_build: the validators are built at the first declaration, not when the name is
    # imported (pydantic's schema build, and its scan of every installed package's plugins).
    model_config = ConfigDict(
        extra="forbid",
        arbitrary_types_allowed=True,
        frozen=False,
        title="HookConfig",
        defer_build=True,
    )

    #: The executor kind this class declares (HookInfo.executor_kind) and the field whose
    #: presence selects it; set by each kind's class.
    kind: ClassVar[str] = ""
    key: ClassVar[str] = ""
    #: The timeout of a hook of this kind declared without one.
    default_timeout: ClassVar[float] = 30.0

    event: str = Field(description="A HookEvent value, for example 'user_prompt_submit'")
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description="Seconds the hook may run (5 command, 30 callback)",
    )
    priority: int = Field(default=0, description="Higher runs first")
    once: bool = Field(default=False, description="Run on the first matching event only")
    tag: str | None = Field(default=None, description="Group name for remove_by_tag()")
    fail_closed: bool = Field(
        default=False, description="An error or timeout blocks the action (blockable events)"
    )
    mode: Literal["sync", "async"] = Field(
        default="sync", description="'async' runs the hook in the background after the event"
    )
    matcher: dict[str, str | list[str]] | None = Field(
        default=None, description="Run only when these data fields match glob patterns"
    )
    name: str | None = Field(default=None, description="A readable name for catalogs and history")
    before: list[str] = Field(
        default_factory=list, description="Names of hooks this one runs ahead of"
    )
    after: list[str] = Field(
        default_factory=list, description="Names of hooks this one runs behind"
    )
    #: Where the declaration came from, for catalogs and history ("manifest" when a manifest
    #: declared it); None means "config". Set by the layer that built it, never serialized.
    _source: str | None = PrivateAttr(default=None)
    #: What the Claude Code loader knows of a hook it read (its Claude Code event, matcher,
    #: group, CLAUDE_* folders, environment options); empty for any other hook.
    _claude: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def claude_origin(self) -> dict[str, Any]:
        """What the Claude Code loader recorded of this hook (a copy; empty when it was not
        loaded from a Claude Code file)."""
        return dict(self._claude)

    @property
    def claude_event(self) -> str | None:
        """The Claude Code event a hook loaded from a Claude Code settings file was declared
        for (its ``hook_event_name``); ``None`` for a hook not loaded from one."""
        event = self._claude.get("event")
        return event if isinstance(event, str) else None

    @classmethod
    def selects(cls, data: dict[str, Any]) -> bool:
        """Whether ``data``, which sets this kind's ``key``, is of this kind (a refinement
        sharing a key with another kind says when it applies)."""
        return True

    def executor(self, manager: Engine) -> Executor:
        """Build the executor that runs this hook in ``manager``."""
        raise NotImplementedError  # pragma: no cover - every kind's class defines it

    @field_validator("event")
    @classmethod
    def _known_event(cls, value: str) -> str:
        try:
            return parse_event(_snake(value)).value
        except ValueError:
            import difflib

            close = difflib.get_close_matches(_snake(value), VALID_EVENT_VALUES.split(", "), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"unknown hook event {value!r}{hint}; valid events are: {VALID_EVENT_VALUES}"
            ) from None

    @field_validator("timeout", "priority", mode="before")
    @classmethod
    def _not_a_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return not_a_bool(value, info)

    @field_validator("before", "after")
    @classmethod
    def _hook_names(cls, value: list[str], info: ValidationInfo) -> list[str]:
        for name in value:
            if not name.strip():
                raise ValueError(f"{info.field_name} must hold hook names, got an empty one")
        return value

    @model_validator(mode="after")
    def _whole(self) -> BaseHookConfig:
        if self.mode == "async" and self.fail_closed:
            raise ValueError("mode 'async' cannot be fail_closed: a background hook cannot block")
        if self.matcher is not None:
            from .._matcher import Matcher

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


def not_a_bool(value: Any, info: ValidationInfo) -> Any:
    """Refuse a bool where a number goes: a bool is an int to pydantic, so ``timeout: yes``
    would be one second (register() and ShellHook refuse a bool too)."""
    if isinstance(value, bool):
        allowed = _NUMBERS[info.field_name or ""]
        raise ValueError(f"{info.field_name} must be {allowed}, got {value!r}")
    return value


def not_exactly_one(keys: list[str], given: list[str]) -> ValidationError:
    """The error of a declaration naming no executor kind, or several: its input (every
    field, ``env`` values too) is not shown."""
    quoted = [repr(k) for k in keys]
    names = " or ".join(quoted) if len(keys) <= 2 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    which = "neither" if not given else "both" if len(given) == 2 else ", ".join(given)
    error = ValueError(f"set exactly one of {names} (got {which})")
    return ValidationError.from_exception_data(
        "HookConfig",
        [{"type": "value_error", "loc": (), "input": "<not shown>", "ctx": {"error": error}}],
    )


def _snake(name: str) -> str:
    """``UserPromptSubmit`` (Claude Code's spelling) as ``user_prompt_submit``; a name with
    no capital as it is."""
    if name.islower() or not name.isidentifier():
        return name
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
