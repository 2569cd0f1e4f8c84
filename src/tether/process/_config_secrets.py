"""The secret values of a process's configuration, which its redactor declares."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from .._urls import url_password
from ..hooks import HookError

if TYPE_CHECKING:
    from ._config import ProcessConfig, TriggerConfig

__all__ = ["config_secrets", "resolve_secrets", "server_secrets"]


def resolve_secrets(config: ProcessConfig) -> list[tuple[str, str]]:
    """(name, value) of each secret, ``${VAR}``/``${VAR:-default}`` read from the environment
    now (a manifest's ``secrets:`` keeps its references until the process is made)."""
    from ..hooks import resolve_refs

    values = []
    for name, secret in config.secrets.items():
        try:
            values.append((name, resolve_refs(secret.get_secret_value(), os.environ, "")))
        except HookError as exc:
            raise ValueError(f"secrets.{name}: {str(exc).lstrip(': ')}") from None
    return values


def config_secrets(
    triggers: Iterable[TriggerConfig], config: ProcessConfig
) -> list[tuple[str, str]]:
    """(name, value) of the secrets held in the configuration besides ``secrets``: a webhook
    trigger's HMAC key, an MCP server's ``headers`` and ``env`` values (SecretStr by type) and
    the password of its ``url``, if it has one, and the password of ``base_url``.
    They are redacted as declared secrets are: from event data as well as records and logs."""
    found = []
    for trigger in triggers:
        secret = getattr(trigger, "secret", None)
        if isinstance(secret, SecretStr) and secret.get_secret_value():
            found.append(("webhook_secret", secret.get_secret_value()))
    for server in config.mcp_servers:
        found += server_secrets(server)
    password = url_password(config.base_url or "")  # a proxy's http://user:pw@host
    if password:
        found.append(("base_url_password", password))
    return found


def server_secrets(server: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, value) of the secrets of one ``mcp_servers`` entry (see config_secrets)."""
    found = []
    name = server.get("name", "mcp")
    password = url_password(str(server.get("url") or ""))  # http://user:pw@host
    if password:
        found.append((f"mcp.{name}.url_password", password))
    for field in ("headers", "env"):
        for key, value in (server.get(field) or {}).items():
            text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
            if text:
                found.append((f"mcp.{name}.{key}", text))
    return found
