"""The url kind: the event POSTed to an HTTP service (see HttpHook)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from ._config import MAX_OUTPUT_LIMIT, HookConfig, SecretText, not_a_bool
from ._http_hook import HttpExecutor, HttpHook, check_headers, check_url, pool_of
from ._resources import redactor_of

if TYPE_CHECKING:
    from ._executor import Executor
    from ._manager import HookManager

__all__ = ["UrlHookConfig"]


class UrlHookConfig(HookConfig):
    """A hook answered by an HTTP service: the event envelope POSTed as JSON, the answer body
    read as a command's stdout. ``headers`` and ``secret`` are secrets (never shown)."""

    kind: ClassVar[str] = "url"
    key: ClassVar[str] = "url"
    default_timeout: ClassVar[float] = 5.0

    url: str = Field(description="http(s) URL the event is POSTed to (no credentials in it)")
    headers: dict[str, SecretText] = Field(
        default_factory=dict,
        description="Request headers (secret values); ${VAR} resolved when the hook runs",
    )
    secret: SecretText | None = Field(
        default=None,
        description="HMAC-SHA256 key: X-Tether-Signature signs '<X-Tether-Timestamp>.<body>'",
    )
    max_output_bytes: int = Field(
        default=65536, gt=0, le=MAX_OUTPUT_LIMIT, description="Largest answer body accepted"
    )
    protocol: Literal["tether", "claude-code"] = Field(
        default="tether",
        description="What the service reads and answers: tether's envelope, or Claude Code's "
        "hook input and answer rules",
    )

    @field_validator("max_output_bytes", mode="before")
    @classmethod
    def _bytes_not_a_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return not_a_bool(value, info)

    @field_validator("url")
    @classmethod
    def _an_http_url(cls, value: str) -> str:
        return check_url(value)

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_headers(value)
        return value

    @field_validator("secret")
    @classmethod
    def _not_empty(cls, value: Any) -> Any:
        if value is not None and not value.get_secret_value():
            raise ValueError("secret must not be empty (leave it unset to send no signature)")
        return value

    def executor(self, manager: HookManager) -> Executor:
        hook = HttpHook.from_config(self, clients=pool_of(manager))
        hook.redact = redactor_of(manager)
        hook.claude_event = self.claude_event
        hook.claude_matcher = self.claude_origin.get("matcher")
        if hook.claude_event == "Notification":  # told of hook errors too
            from ._claude_notification import tell_hook_errors

            tell_hook_errors(manager)
        return HttpExecutor(hook)
