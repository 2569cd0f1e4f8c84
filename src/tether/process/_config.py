"""ProcessConfig: everything one agent process is made of, as validated data."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from ..agent import BudgetConfig, ContextConfig, GuardrailConfig, ModelPrice, Tool
from ..approval import ApprovalPolicy
from ..hooks import HookConfig, SecretText, masked_errors
from ._mcp import McpServers, repr_args

__all__ = [
    "MISSION_MAX_CHARS",
    "CronTrigger",
    "EventTrigger",
    "FileWatchTrigger",
    "OpenModeConfig",
    "ProcessConfig",
    "RestartPolicy",
    "TriggerConfig",
    "WebhookTrigger",
    "check_base_url",
    "check_mission",
    "split_zone",
]


#: The longest mission accepted: a standing goal, not a second set of instructions.
MISSION_MAX_CHARS: Final = 2000


def check_base_url(value: str | None) -> str | None:
    """A model endpoint as kept: an http(s) URL with a host; else ValueError saying so."""
    if value is None:
        return None
    from urllib.parse import urlsplit

    from .._urls import masked_url

    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"base_url {masked_url(value)!r} is not an http(s) URL; give one like "
            "http://127.0.0.1:8781/v1"
        )
    return text


def check_mission(value: object) -> str | None:
    """A mission as it is kept (surrounding whitespace removed), or ValueError saying why not."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"mission must be a string (or None to clear it), got {value!r}")
    text = value.strip()
    if not text:
        raise ValueError("mission must not be blank; pass None to clear it")
    if len(text) > MISSION_MAX_CHARS:
        raise ValueError(
            f"mission is {len(text)} characters long; at most {MISSION_MAX_CHARS} are allowed"
        )
    return text


#: A field whose location says it may hold a secret: its value is never shown in an error.
_PLAIN: Final = (str, int, float, bool, type(None))
_SECRETISH = re.compile(r"secret|env|header|token|password|passwd|key|auth|url", re.IGNORECASE)


def secrets_masked(exc: ValidationError) -> ValidationError:
    """``exc`` with the value of each field that may hold a secret (by its name, or being
    unknown: a misspelt ``secret=``) or that is no plain value (a mapping, a list, an object,
    which may hold one) shown as ``'<not shown>'``; every other error keeps its value."""
    return masked_errors(exc, _may_be_secret)


def _may_be_secret(loc: tuple[Any, ...], value: Any, kind: str) -> bool:
    return (
        kind == "extra_forbidden"
        or type(value) not in _PLAIN  # a mapping, a list, an object: it may hold one
        or _SECRETISH.search(".".join(str(part) for part in loc)) is not None
    )


class _Trigger(BaseModel):
    model_config = ConfigDict(defer_build=True, extra="forbid")

    id: str | None = Field(default=None, description="trigger_id of its events (default: type-N)")

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value != value.strip()):
            raise ValueError(
                f"id {value!r} is not allowed: give a name without surrounding spaces, or leave "
                "it out for the default <type>-<index>"
            )
        return value

    @field_validator("webhook_port", "debounce_ms", mode="before", check_fields=False)
    @classmethod
    def _not_a_flag(cls, value: Any) -> Any:
        # YAML reads on/yes/true as flags, and pydantic would take one as the number 1.
        if isinstance(value, bool):
            raise ValueError(f"expected a number, got a flag ({str(value).lower()})")
        return value


#: How an expression names the time zone it is read in: ``CRON_TZ=Europe/Berlin 0 9 * * *``
#: (as cronie and Kubernetes write it; ``TZ=`` too).
_ZONE_PREFIXES: Final = ("CRON_TZ=", "TZ=")


def split_zone(expression: str) -> tuple[str, str]:
    """The time zone an expression is read in (``UTC`` unless it starts with ``CRON_TZ=<zone>``
    or ``TZ=<zone>``), and the schedule after it."""
    text = expression.strip()
    for prefix in _ZONE_PREFIXES:
        if text.startswith(prefix):
            zone, _, rest = text[len(prefix) :].partition(" ")
            return zone, rest.strip()
    return "UTC", text


class CronTrigger(_Trigger):
    """Fires on a cron schedule: UTC, or the time zone a ``CRON_TZ=<zone>`` prefix names."""

    type: Literal["cron"] = "cron"
    cron_expression: str = Field(
        description="Five-field cron expression, e.g. '*/5 * * * *' (UTC), or "
        "'CRON_TZ=Europe/Berlin 0 9 * * 1-5' to read it in an IANA time zone"
    )
    payload: dict[str, Any] = Field(default_factory=dict, description="Payload of each event")

    @field_validator("cron_expression")
    @classmethod
    def _parses(cls, value: str) -> str:
        from datetime import UTC, datetime
        from zoneinfo import ZoneInfo

        from croniter import CroniterError, croniter

        zone, schedule = split_zone(value)
        try:  # (ZoneInfoNotFoundError is a KeyError; a malformed key is a ValueError)
            ZoneInfo(zone)
        except (KeyError, ValueError, OSError):
            raise ValueError(
                f"cron_expression {value!r}: time zone {zone!r} is not a known IANA time zone; "
                "use a name such as 'UTC', 'Europe/Berlin' or 'America/New_York' "
                "(e.g. 'CRON_TZ=Europe/Berlin 0 9 * * *')"
            ) from None
        fields = schedule.split()
        # croniter also reads a 6th (seconds) and 7th (year) field: '* * * * * *' would fire
        # every second. A nickname (@hourly, @daily, ...) is one field.
        form = len(fields) == 5 or (len(fields) == 1 and schedule.startswith("@"))
        if not form or not croniter.is_valid(schedule):
            raise ValueError(
                f"cron_expression {value!r} does not parse; expected five fields "
                "(minute hour day-of-month month day-of-week), e.g. '*/5 * * * *'"
            )
        try:  # a date that never comes ('0 0 31 2 *') would end the trigger at its first wait
            croniter(schedule, datetime.now(UTC)).get_next(datetime)
        except CroniterError:
            raise ValueError(
                f"cron_expression {value!r} never fires: no date matches it "
                "(e.g. February 30th or 31st, April 31st)"
            ) from None
        return value


class WebhookTrigger(_Trigger):
    """Fires on an HTTP POST to ``webhook_path`` on ``webhook_port``."""

    type: Literal["webhook"] = "webhook"
    webhook_path: str = Field(description="URL path, e.g. /tickets")
    webhook_port: int = Field(default=9090, ge=1, le=65535, description="Port to listen on")
    webhook_host: str = Field(default="127.0.0.1", description="Interface to listen on")
    secret: SecretText | None = Field(
        default=None,
        description=(
            "HMAC-SHA256 key; requests must carry X-Tether-Timestamp and X-Tether-Signature"
        ),
    )

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError(
                "secret must not be empty or blank (anyone could sign with an empty key); "
                "leave it out for an unsigned webhook"
            )
        return value

    @field_validator("webhook_path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or any(c in value for c in " ?#\\") or "//" in value:
            raise ValueError(f"webhook_path must be a URL path starting with '/', got {value!r}")
        return value


class FileWatchTrigger(_Trigger):
    """Fires when files under ``watch_path`` matching ``patterns`` change."""

    type: Literal["file_watch"] = "file_watch"
    watch_path: str = Field(description="Folder to watch")
    patterns: list[str] = Field(default_factory=lambda: ["*"], description="Glob filters")
    recursive: bool = Field(default=True, description="Watch sub-folders too")
    debounce_ms: int = Field(
        default=200,
        ge=0,
        le=60_000,
        description="Quiet time that ends a batch of changes (ms); each file fires once per batch",
    )

    @field_validator("watch_path")
    @classmethod
    def _watch_path(cls, value: str) -> str:
        if not value.strip() or "\x00" in value:
            raise ValueError(
                f"watch_path {value!r} is no path: give the folder (or file) to watch, e.g. "
                "'./inbox'"
            )
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        if not value or any(not p.strip() for p in value):
            raise ValueError(
                f"patterns {value!r} would match no file: give one or more glob patterns such "
                "as '*.txt' (the default ['*'] matches every file)"
            )
        return value


class EventTrigger(_Trigger):
    """Fires when the runtime publishes an event of ``event_type``."""

    type: Literal["event"] = "event"
    event_type: str = Field(description="Name of the runtime event to react to")

    @field_validator("event_type")
    @classmethod
    def _event_type(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                f"event_type {value!r} is empty: name the runtime event to react to, e.g. "
                "'deploy' (the type given to AgentRuntime.publish)"
            )
        return value


TriggerConfig = Annotated[
    CronTrigger | WebhookTrigger | FileWatchTrigger | EventTrigger, Field(discriminator="type")
]


class OpenModeConfig(BaseModel):
    """What an open-mode agent may do to itself."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    allow_spawn: bool = Field(default=True, description="Offer the spawn_process tool")
    allow_self_modify: bool = Field(
        default=True, description="Offer update_instructions and add_trigger"
    )
    allow_host_triggers: bool = Field(
        default=False,
        description="Let the agent add file-watch and webhook triggers (host paths and ports); "
        "without it the agent may add cron and event triggers only",
    )
    allow_tool_creation: bool = Field(
        default=False, description="Let the agent define tools (refused over the API by default)"
    )
    max_children: int = Field(default=5, ge=0, le=100, description="Spawned processes at most")


class RestartPolicy(BaseModel):
    """When a failed process restarts by itself."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    policy: Literal["never", "on_failure"] = Field(default="on_failure")
    max_restarts: int = Field(default=3, ge=0, le=1000)
    backoff: float = Field(default=1.0, ge=0, le=3600, description="First delay; doubles")
    backoff_max: float = Field(default=60.0, ge=0, le=86400)
    max_consecutive_failures: int = Field(
        default=5, ge=1, le=10_000, description="Failed runs in a row that count as a crash"
    )


class ProcessConfig(BaseModel):
    """One agent process: model, instructions, tools, triggers, hooks and limits."""

    model_config = ConfigDict(defer_build=True, extra="forbid", arbitrary_types_allowed=True)

    model: Any = Field(default="openai:gpt-5-mini", description="'openai:<name>', 'scripted'")
    model_timeout: float = Field(default=60.0, gt=0, le=3600, description="Seconds per request")
    model_max_retries: int = Field(default=2, ge=0, le=10, description="Retries per request")
    base_url: str | None = Field(
        default=None,
        description="Endpoint of an 'openai:' model, e.g. http://127.0.0.1:8781/v1 (default: "
        "OPENAI_BASE_URL, then OpenAI's)",
    )
    instructions: str = Field(default="", description="System instructions of the agent")
    mission: str | None = Field(
        default=None,
        description="A standing goal, given to the model after the instructions (at most "
        f"{MISSION_MAX_CHARS} characters)",
    )
    tools: list[Callable[..., Any] | Tool | str] = Field(
        default_factory=list,
        exclude=True,
        description="Async tool functions or Tools (code), or import paths "
        "'package.module:function' (imported when the process is created)",
    )
    hooks: list[HookConfig] = Field(default_factory=list, description="Lifecycle hooks")
    plugins: list[Any] = Field(default_factory=list, exclude=True, description="Hook plugins")
    triggers: list[TriggerConfig] = Field(default_factory=list, description="What starts runs")
    approval: ApprovalPolicy | None = Field(default=None, description="Tools needing approval")
    budget: BudgetConfig | None = Field(default=None, description="Spending limits")
    pricing: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="Model prices per million tokens, by model name ('gpt-4o-mini' or "
        "'openai:gpt-4o-mini'); a model not named here costs None",
    )
    context: ContextConfig = Field(default_factory=ContextConfig)
    guardrails: GuardrailConfig = Field(default_factory=GuardrailConfig)
    execution_mode: Literal["strict", "open"] = Field(default="strict")
    open_mode: OpenModeConfig = Field(default_factory=OpenModeConfig)
    mcp_servers: McpServers = Field(
        default_factory=list, description="MCP servers, connected while it runs (docs/mcp.md)"
    )
    secrets: dict[str, SecretText] = Field(default_factory=dict, description="Redacted everywhere")
    max_turns: int = Field(default=10, ge=1, le=1000, description="Model turns per run")
    max_continuations: int = Field(
        default=3,
        ge=0,
        le=100,
        description="Times an agent_stop hook may send a run back to the model (a further "
        "block is recorded and ignored)",
    )
    tool_timeout: float = Field(
        default=120.0, gt=0, le=3600, description="Seconds one tool call may run"
    )
    concurrency: int = Field(default=1, ge=1, le=256, description="Runs at once")
    max_queue_size: int = Field(default=1000, ge=1, le=1_000_000, description="Queued events")
    max_retries: int = Field(default=2, ge=0, le=100, description="Retries of a failed run")
    retry_backoff: float = Field(default=0.5, ge=0, le=3600, description="First retry delay")
    retry_backoff_max: float = Field(default=30.0, ge=0, le=86400)
    restart: RestartPolicy = Field(default_factory=RestartPolicy)
    journal_path: str | None = Field(default=None, description="SQLite journal (opt-in)")
    durable_steps: bool = Field(
        default=True,
        description="With a journal: journal each run's steps, conversation and state, so a "
        "run cut off by a crash resumes from its last finished step",
    )
    artifacts_dir: str | None = Field(default=None, description="Where plugin artifacts go")
    stop_timeout: float = Field(default=10.0, ge=0, le=3600, description="Grace for runs at stop")
    hook_timeout: float = Field(default=30.0, gt=0, le=3600, description="Default hook timeout")

    @field_validator("model")
    @classmethod
    def _model(cls, value: Any) -> Any:
        if isinstance(value, str):
            name = value[7:]
            if value != "scripted" and not (
                value.startswith("openai:") and name and name == name.strip()
            ):
                raise ValueError(
                    f"model {value!r} is not supported; use 'openai:<name>' (no spaces around "
                    "the name) or 'scripted' (or pass a model object in code)"
                )
        elif not hasattr(value, "complete"):
            raise ValueError(f"model must be a string or an object with complete(), got {value!r}")
        return value

    @field_validator("mission")
    @classmethod
    def _mission(cls, value: str | None) -> str | None:
        return check_mission(value)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        return check_base_url(value)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        return repr_args(super().__repr_args__())

    @field_validator("journal_path")
    @classmethod
    def _journal_path(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or value == ":memory:"):
            raise ValueError(
                f"journal_path {value!r} is no file: a journal must outlive the process to "
                "recover its events; give a file path, or None for no journal"
            )
        return value

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: list[Any]) -> list[Any]:
        import inspect

        from ..agent import check_import_path

        for index, fn in enumerate(value):
            if isinstance(fn, str):
                try:
                    check_import_path(fn)
                except ValueError as exc:
                    raise ValueError(f"tools[{index}]: {exc}") from None
                continue
            target = getattr(fn, "fn", fn)
            if not inspect.iscoroutinefunction(target):
                name = getattr(target, "__name__", repr(target))
                raise TypeError(f"tool {name!r} must be an async function")
        return value

    @model_validator(mode="after")
    def _unique_triggers(self) -> ProcessConfig:
        seen: set[str] = set()
        for index, trigger in enumerate(self.triggers):
            trigger_id = trigger.id or f"{trigger.type}-{index}"  # as the process names it
            if trigger_id in seen:
                raise ValueError(
                    f"two triggers share the id {trigger_id!r} (triggers[{index}]; a trigger "
                    "without an id is named <type>-<index>)"
                )
            seen.add(trigger_id)
        return self

    # Declared last, so it wraps every other validator (those declared after it run outside).
    @model_validator(mode="wrap")
    @classmethod
    def _errors_without_secrets(cls, data: Any, handler: Any) -> Any:
        """An error names the field, the value and what it allows; but not the value of a field
        that may hold a secret (secrets, a hook's env, a url) or of an unknown field."""
        try:
            return handler(data)
        except ValidationError as exc:
            raise secrets_masked(exc) from None


for _cls in (
    CronTrigger,
    EventTrigger,
    FileWatchTrigger,
    OpenModeConfig,
    ProcessConfig,
    RestartPolicy,
    WebhookTrigger,
):
    _cls.__module__ = "tether"
