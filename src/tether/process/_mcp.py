"""MCP server entries: what ``add_mcp_server`` accepts, validated when it is added.

``ProcessConfig.mcp_servers`` holds the entries as plain dicts (the runtime declares them; it
does not connect to them). An entry added at run time is checked here first: a name to remove
it by, and a transport with what that transport needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializerFunctionWrapHandler,
    WrapSerializer,
    field_validator,
    model_serializer,
    model_validator,
)

from .._urls import masked_url
from ._names import NAME_RE

__all__ = [
    "MCP_TRANSPORTS",
    "McpServerConfig",
    "McpServers",
    "check_entries",
    "is_stdio",
    "masked_entries",
    "repr_args",
    "server_name",
]

MCP_TRANSPORTS: Final = ("stdio", "http", "sse", "streamable-http")
_STDIO_ONLY: Final = ("command", "args", "env", "cwd")


class McpServerConfig(BaseModel):
    """One MCP server: a program on this host (``stdio``) or a URL (the other transports).

    Without ``transport`` an entry with a ``command`` is ``stdio`` and one with a ``url`` is
    ``http``.
    """

    # Its values may hold credentials (headers, env, a url with a password): never echoed.
    model_config = ConfigDict(defer_build=True, extra="forbid", hide_input_in_errors=True)

    name: str = Field(description="Name of the server, unique in the process (1-64 characters)")
    transport: Literal["stdio", "http", "sse", "streamable-http"] | None = Field(
        default=None, description="How to reach it (default: stdio with a command, else http)"
    )
    command: str | list[str] | None = Field(default=None, description="Program (stdio only)")
    args: list[str] = Field(default_factory=list, description="Program arguments (stdio only)")
    env: dict[str, SecretStr] = Field(
        default_factory=dict, description="Extra environment of the program (stdio; masked)"
    )
    cwd: str | None = Field(default=None, description="Working directory (stdio only)")
    url: str | None = Field(default=None, description="http(s) URL (http, sse, streamable-http)")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="Request headers (masked in every dump)"
    )
    timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds per call")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.fullmatch(value):
            raise ValueError(
                f"name {value!r} is not allowed: use 1-64 letters, digits, '_', '-' or '.', "
                "starting with a letter or digit"
            )
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is not None and (not value or not all(value)):
            raise ValueError("command must name a program (a non-empty string or list)")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {masked_url(value)!r}")
        return value

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if self.transport is None:
            self.transport = "stdio" if self.command is not None else "http"
        if self.transport == "stdio":
            if self.command is None:
                raise ValueError("a stdio MCP server needs 'command' (the program to run)")
            if self.url is not None or self.headers:
                raise ValueError("a stdio MCP server takes no 'url' or 'headers'")
            return self
        if self.url is None:
            raise ValueError(f"an MCP server with transport {self.transport!r} needs 'url'")
        used = [key for key in _STDIO_ONLY if key in self.model_fields_set]
        if used:
            raise ValueError(
                f"{used[0]!r} is for stdio servers only; this one uses {self.transport!r}"
            )
        return self

    @model_serializer(mode="wrap")
    def _url_shown(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if isinstance(data.get("url"), str):
            data["url"] = masked_url(data["url"])
        return data

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, masked_url(value) if name == "url" and value else value

    def entry(self) -> dict[str, Any]:
        """The dict kept in ``ProcessConfig.mcp_servers`` (secret values stay SecretStr, the
        url is as given: a dump shows its password as ``****``, the entry keeps it)."""
        entry = self.model_dump(exclude_defaults=True)
        if self.url is not None:
            entry["url"] = self.url
        return entry


def check_entries(servers: list[dict[str, Any]], owner: str) -> None:
    """ValueError naming the entry, the field and what is wrong when an ``mcp_servers`` entry
    is no valid McpServerConfig or reuses a name (no value is echoed: one may be a secret)."""
    from pydantic import ValidationError

    names: dict[str, int] = {}
    for i, entry in enumerate(servers):
        try:
            server = McpServerConfig.model_validate(entry)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            where = f"mcp_servers[{i}]{f'.{field}' if field else ''}"
            reason = str(error["msg"]).removeprefix("Value error, ")
            raise ValueError(f"{owner}: {where}: {reason}") from None
        if server.name in names:
            raise ValueError(
                f"{owner}: mcp_servers[{i}].name: MCP server name {server.name!r} is already "
                f"used by mcp_servers[{names[server.name]}]"
            )
        names[server.name] = i


def server_name(entry: dict[str, Any]) -> str | None:
    name = entry.get("name")
    return name if isinstance(name, str) else None


def masked_entries(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``servers`` with the ``headers`` and ``env`` values of each entry as SecretStr, as
    ``McpServerConfig.entry()`` keeps them, so no repr, str or dump of a configuration shows
    them. An entry whose ``headers`` or ``env`` is no mapping is kept as it is (for its
    validation to report)."""
    out = []
    for entry in servers:
        if isinstance(entry, dict):
            entry = dict(entry)
            for field in ("headers", "env"):
                values = entry.get(field)
                if isinstance(values, dict):
                    entry[field] = {
                        k: SecretStr(v) if isinstance(v, str) else v for k, v in values.items()
                    }
        out.append(entry)
    return out


def repr_args(args: Iterable[tuple[str | None, Any]]) -> Iterator[tuple[str | None, Any]]:
    """A model's ``__repr_args__`` with the password of each MCP server's ``url`` shown as
    ``****`` (the url stays a plain string in the entry, which reads it)."""
    for name, value in args:
        if name == "mcp_servers" and isinstance(value, list):
            value = [_url_masked(entry) for entry in value]
        elif name == "base_url" and isinstance(value, str):
            value = masked_url(value)
        yield name, value


def _url_masked(entry: Any) -> Any:
    if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
        return entry
    return {**entry, "url": masked_url(entry["url"])}


def _urls_masked(servers: Any, handler: SerializerFunctionWrapHandler) -> Any:
    if isinstance(servers, list):
        servers = [_url_masked(entry) for entry in servers]
    return handler(servers)


#: A configuration's ``mcp_servers``: plain dicts, each ``url`` as given (whatever connects to
#: the server reads it from the entry), ``headers`` and ``env`` values SecretStr (see
#: masked_entries). Every dump, Python or JSON, shows a url's password as ``****``, as the
#: repr does: a dump is for showing and storing, never for connecting.
McpServers = Annotated[
    list[dict[str, Any]], AfterValidator(masked_entries), WrapSerializer(_urls_masked)
]


def is_stdio(entry: dict[str, Any]) -> bool:
    """Whether a declared entry runs a program on this host (as the deploy rules read it)."""
    transport = entry.get("transport", entry.get("type"))
    return transport == "stdio" or (transport is None and "command" in entry)


McpServerConfig.__module__ = "tether"
