"""The HTTP kind (key ``url``): HttpHook POSTs the hook envelope to a URL; the answer body
follows the command-hook rules. Its declaration (HttpHookConfig), runtime object (HttpHook)
and executor (HttpExecutor) are all here.

The request body is exactly the JSON envelope a command hook gets on stdin. A 2xx answer with
an empty body is success with nothing changed; a JSON object answers as a command hook's stdout
does (``block``, ``reason``, ``data``, ``log``). Anything else is the hook's error: the service
unreachable, a non-2xx status (a redirect is never followed), a body that is not a JSON object
or longer than ``max_output_bytes``, or no answer within ``timeout``.

``headers`` values are secrets: ``${VAR}`` references are resolved from the host environment
each time the hook runs, and no value is ever shown (repr, errors, catalogs). With a ``secret``
the request carries ``X-Tether-Timestamp`` (Unix seconds) and ``X-Tether-Signature``:
``sha256=`` and the hex HMAC-SHA256, keyed by the secret, of ``<timestamp>.<body>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import re
import socket
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator

from .._context import HookContext
from .._errors import CommandHookError, HttpHookError, HttpHookTimeoutError
from .._events import HookEvent
from .._executor import HookObjectExecutor
from .._hook import _bump
from .._limits import check_output_limit, check_timeout
from .._resources import on_close, redactor_of
from .._shell import (
    STDERR_IN_MESSAGE,
    ShellHookResult,
    _secret_value,
    apply_answer,
    parse_answer,
    resolve_refs,
)
from ._base import BaseHookConfig, NotThisKind, SecretText, not_a_bool, not_this_kind, output_limit

if TYPE_CHECKING:
    import httpx
    from pydantic import SecretStr

    from .._executor import Executor
    from .._hook import Engine

__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "HttpClients",
    "HttpExecutor",
    "HttpHook",
    "HttpHookConfig",
    "pool_of",
    "sign",
]

SIGNATURE_HEADER: Final = "X-Tether-Signature"
TIMESTAMP_HEADER: Final = "X-Tether-Timestamp"
#: Headers tether sets itself, which ``headers`` may not replace (lowercase).
RESERVED_HEADERS: Final = frozenset(
    {
        "content-type",
        "content-length",
        "content-encoding",
        "transfer-encoding",
        "host",
        "connection",
        SIGNATURE_HEADER.lower(),
        TIMESTAMP_HEADER.lower(),
        "x-tether-event",
        "user-agent",
    }
)
USER_AGENT: Final = "tether-hook"
#: What a service may read and answer: tether's envelope, or Claude Code's hook input.
PROTOCOLS: Final = ("tether", "claude-code")
#: The block reason of a service that answered {"block": true} without a "reason".
NO_REASON: Final = "blocked by an HTTP hook (it gave no reason)"
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def sign(secret: str | bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Tether-Signature`` value of ``body`` sent at ``timestamp`` (what a receiver
    recomputes and compares with ``hmac.compare_digest``)."""
    key = secret.encode() if isinstance(secret, str) else secret
    digest = hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class HttpClients:
    """The pooled connections the HTTP hooks of one manager share: an httpx transport (a
    connection pool, keep-alive), made on first use.

    Requests go to the transport itself, without httpx's client layer: no redirect is ever
    followed, no cookie a service sets is kept and sent again (no state between events), and
    the host environment is not trusted (no proxy or ``.netrc`` credentials picked up from
    it); it also costs ~40% less per request. A pool belongs to one event loop: used from
    another, a new one is made.
    """

    __slots__ = ("_loop", "_transport")

    def __init__(self) -> None:
        self._transport: httpx.AsyncHTTPTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        transport = self._transport
        if transport is None or self._loop is not loop:
            import httpx

            transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
                trust_env=False,
                # Headers and body go out as two writes: with Nagle's algorithm the body waits
                # for the server's delayed ACK (~40 ms a request on Linux).
                socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            )
            self._transport, self._loop = transport, loop
        return transport

    async def aclose(self) -> None:
        """Close the pooled connections (a later request opens new ones)."""
        transport, self._transport, self._loop = self._transport, None, None
        if transport is not None:
            await transport.aclose()


class HttpHook:
    """A hook answered by an HTTP service; ``callback`` registers it with a HookManager.

    ``clients`` is the pool to send through (a HookManager gives every HTTP hook it builds its
    own pool); without one the hook keeps a pool of its own, closed by :meth:`aclose`.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str | SecretStr] | None = None,
        secret: str | SecretStr | None = None,
        timeout: float = 5.0,
        max_output_bytes: int = 65536,
        clients: HttpClients | None = None,
        protocol: str = "tether",
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(
                f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}, got {protocol!r}"
            )
        self.protocol = protocol
        self.url = check_url(url)
        self.headers: dict[str, str | SecretStr] = dict(check_headers(headers or {}))
        if secret is not None and not _secret_value(secret):
            raise ValueError("secret must not be empty (leave it unset to send no signature)")
        self.secret = secret
        check_timeout(timeout)
        check_output_limit(max_output_bytes)
        self.timeout = float(timeout)
        self.max_output_bytes = max_output_bytes
        self._own_clients = clients is None
        self.clients = clients if clients is not None else HttpClients()
        #: Applied to the service's ``log`` text before it is logged (set by the manager).
        self.redact: Callable[[str], str] | None = None
        self.display_name = shown_url(self.url)
        #: For a hook loaded from a Claude Code file: the event it was declared for, and its
        #: group's matcher (checked by this hook for a Notification, see _claude_notification).
        self.claude_event: str | None = None
        self.claude_matcher: str | None = None
        # Every secret value a run has sent (header values, the signing key): name by value.
        self._handed: dict[str, str] = {}

    @classmethod
    def from_config(cls, config: HttpHookConfig, clients: HttpClients | None = None) -> HttpHook:
        """The HttpHook a HookConfig with a ``url`` describes."""
        return cls(
            config.url,
            headers=config.headers,
            secret=config.secret,
            timeout=config.timeout if config.timeout is not None else 5.0,
            max_output_bytes=config.max_output_bytes,
            clients=clients,
            protocol=config.protocol,
        )

    def __repr__(self) -> str:
        return f"HttpHook({self.display_name!r}, timeout={self.timeout:g})"

    # -- secrets ---------------------------------------------------------------------------

    def secrets(self) -> list[tuple[str, str]]:
        """(name, value) of every value this hook sends that may be a credential, for a
        redactor: each header value (resolved now; one that cannot be resolved is skipped),
        the signing secret, and every such value a run already sent."""
        found: list[tuple[str, str]] = []
        for name, raw in self.headers.items():
            try:
                value = resolve_refs(_secret_value(raw), os.environ, "")
            except CommandHookError:
                continue
            if value:
                found.append((f"header {name}", value))
        if self.secret is not None:
            with contextlib.suppress(CommandHookError):
                found.append(("secret", resolve_refs(_secret_value(self.secret), os.environ, "")))
        known = {value for _, value in found}
        found += [(name, value) for value, name in self._handed.items() if value not in known]
        return found

    def _note(self, name: str, value: str) -> None:
        if value and value not in self._handed:
            self._handed[value] = name
            _bump()  # a value not listed yet: caches of secrets() look again

    def build_headers(self, body: bytes, event: str) -> dict[str, str]:
        """The request headers for ``body``: ``headers`` resolved, the signature if any."""
        out = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "x-tether-event": event,
        }
        for name, raw in self.headers.items():
            value = self._resolved(raw, f"header {name!r}")
            if any(c in value for c in "\r\n\0") or not value.isascii():
                raise HttpHookError(
                    f"HTTP hook {self.display_name!r}: header {name!r} has a value (not shown) "
                    "with a line break, a NUL or a non-ASCII character"
                )
            self._note(f"header {name}", value)  # every header value may be a credential
            out[name] = value
        if self.secret is not None:
            key = self._resolved(self.secret, "secret")
            if not key:
                raise HttpHookError(f"HTTP hook {self.display_name!r}: the secret resolved empty")
            self._note("secret", key)
            stamp = str(int(time.time()))
            out[TIMESTAMP_HEADER] = stamp
            out[SIGNATURE_HEADER] = sign(key, stamp, body)
        return out

    def _resolved(self, raw: str | SecretStr, where: str) -> str:
        try:
            return resolve_refs(_secret_value(raw), os.environ, where)
        except CommandHookError as exc:
            raise HttpHookError(f"HTTP hook {self.display_name!r}: {exc}") from None

    # -- running ---------------------------------------------------------------------------

    async def run(self, ctx: HookContext) -> ShellHookResult:
        """POST the event and return the parsed answer without applying it (tether's rules).

        Raises HttpHookError (a RuntimeError) for every hook error, HttpHookTimeoutError (also
        a TimeoutError) when no answer came within ``timeout``.
        """
        raw = await self.exchange(ctx, ctx.envelope())
        try:
            return parse_answer(raw, f"HTTP hook {self.display_name!r}", "answered a body")
        except CommandHookError as exc:
            raise HttpHookError(str(exc)) from None

    async def exchange(self, ctx: HookContext, payload: dict[str, Any]) -> str:
        """POST ``payload`` for ``ctx``'s event; return the 2xx answer's body text."""
        body = json.dumps(payload, default=str).encode("utf-8")
        headers = self.build_headers(body, ctx.event.value)
        # The request runs in a task of its own: httpx's transport (anyio) cancels and
        # uncancels the task it runs in, which must not be the dispatching one. A cancellation
        # of this hook reaches that task too (awaiting a task cancels it with the awaiter).
        return await asyncio.create_task(
            self._post(body, headers), name=f"HTTP hook {self.display_name}"
        )

    async def _post(self, body: bytes, headers: dict[str, str]) -> str:
        import httpx

        name = self.display_name
        transport = self.clients.get()
        try:
            # The whole exchange, connecting to the last byte, is bounded by the hook's timeout.
            async with asyncio.timeout(self.timeout):
                request = httpx.Request("POST", self.url, content=body, headers=headers)
                resp = await transport.handle_async_request(request)
                try:
                    answer = bytearray()
                    async for chunk in resp.aiter_bytes():
                        answer += chunk
                        if len(answer) > self.max_output_bytes:
                            raise HttpHookError(
                                f"HTTP hook {name!r} answered more than max_output_bytes="
                                f"{self.max_output_bytes} bytes"
                            )
                    status, phrase = resp.status_code, resp.reason_phrase
                finally:
                    await resp.aclose()
        except TimeoutError:
            raise HttpHookTimeoutError(
                f"HTTP hook {name!r} gave no answer within {self.timeout:g}s"
            ) from None
        except httpx.HTTPError as exc:
            said = str(exc).replace(self.url, name) or type(exc).__name__
            raise HttpHookError(
                f"HTTP hook {name!r} could not be reached: {type(exc).__name__}: {said}"
            ) from None
        text = answer.decode("utf-8", errors="replace")
        if not 200 <= status < 300:
            hint = " (redirects are not followed)" if 300 <= status < 400 else ""
            said = f": {text.strip()[:STDERR_IN_MESSAGE]}" if text.strip() else ""
            raise HttpHookError(f"HTTP hook {name!r} answered {status} {phrase}{hint}{said}")
        try:
            return answer.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HttpHookError(
                f"HTTP hook {name!r} answered a body that is not UTF-8: {exc}"
            ) from None

    def as_executor(self) -> HttpExecutor:
        """What runs this hook when its ``callback`` is registered in code (its kind, its own
        timeout and the secrets it sends, for the catalog and the redactor)."""
        return HttpExecutor(self)

    async def callback(self, ctx: HookContext) -> None:
        """POST the event and apply the answer: block, replace the data, log (tether's rules),
        or, with ``protocol="claude-code"``, Claude Code's hook input and answer rules."""
        if self.protocol == "claude-code":
            await self._claude_code(ctx)
            return
        result = await self.run(ctx)
        apply_answer(result, ctx, f"HTTP hook {self.display_name}", self.redact, NO_REASON)

    async def _claude_code(self, ctx: HookContext) -> None:
        """Claude Code's HTTP hook: its input POSTed; a 2xx body read as a command's stdout
        after exit 0 (a JSON object by its rules, other text as context)."""
        from .._claude_answer import add_context
        from .._claude_answer import apply_answer as apply_claude_answer
        from .._claude_code import claude_event_name, claude_input, claude_matches

        notice = self.claude_event == "Notification"
        name = "Notification" if notice else claude_event_name(ctx, None)
        sent = claude_input(ctx, name, os.getcwd())
        if notice and not claude_matches(name, self.claude_matcher, sent):
            return
        raw = await self.exchange(ctx, sent)
        if notice or not raw.strip():  # a notice's answer changes nothing
            return
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            if ctx.event is HookEvent.USER_PROMPT_SUBMIT:
                add_context(ctx, raw.strip())
            return
        apply_claude_answer(ctx, answer, shown=self.display_name)

    async def aclose(self) -> None:
        """Close this hook's own connection pool (a shared one is its manager's to close)."""
        if self._own_clients:
            await self.clients.aclose()


def check_url(url: object) -> str:
    """``url`` if it is an http(s) URL with a host and no credentials; else ValueError."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a string, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise ValueError(f"url {shown_url(url)!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"url {shown_url(url)!r} must start with http:// or https:// "
            f"(got scheme {parts.scheme!r})"
        )
    if not parts.hostname:
        raise ValueError(f"url {shown_url(url)!r} names no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"url {shown_url(url)!r} must not carry credentials (user:password@); "
            "send them in headers, whose values are kept secret"
        )
    if any(c.isspace() for c in url):
        raise ValueError(f"url {shown_url(url)!r} contains whitespace")
    return url


def check_headers(headers: Mapping[str, Any]) -> Mapping[str, Any]:
    """``headers`` if every name is an HTTP token tether does not set itself; else ValueError.
    No value is shown."""
    for name in headers:
        if not isinstance(name, str) or not _TOKEN.match(name):
            raise ValueError(f"headers: {name!r} is not a valid HTTP header name")
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(
                f"headers: {name!r} is set by tether itself; the headers it sets are "
                f"{', '.join(sorted(RESERVED_HEADERS))}"
            )
        value = headers[name]
        if not isinstance(value, str) and not callable(getattr(value, "get_secret_value", None)):
            raise TypeError(
                f"headers: the value of {name!r} must be a string or a SecretStr "
                f"(got a {type(value).__name__}, not shown)"
            )
    return headers


def shown_url(url: str) -> str:
    """``url`` as errors and catalogs show it: no credentials, no query (it may hold a token)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "<invalid url>"
    if ":" in host:
        host = f"[{host}]"
    query = "?…" if parts.query else ""
    return f"{parts.scheme}://{host}{port}{parts.path}{query}"


HttpHook.__module__ = "tether"
HttpClients.__module__ = "tether"


# -- the executor kind -------------------------------------------------------------------------


class HttpExecutor(HookObjectExecutor):
    """Runs an HttpHook: the request is bounded by the hook's own timeout, the engine's bound
    allows ``backstop`` seconds more."""

    __slots__ = ()
    kind: ClassVar[str] = "url"
    backstop: ClassVar[float] = 1.0


_POOLS: weakref.WeakKeyDictionary[object, HttpClients] = weakref.WeakKeyDictionary()


def pool_of(manager: object) -> HttpClients:
    """The connection pool the HTTP hooks of ``manager`` share (closed with the manager)."""
    pool = _POOLS.get(manager)
    if pool is None:
        pool = _POOLS[manager] = HttpClients()
        on_close(manager, pool.aclose)
    return pool


# -- the declaration ---------------------------------------------------------------------------


class HttpHookConfig(BaseHookConfig):
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
    max_output_bytes: int = output_limit("Largest answer body accepted")
    protocol: Literal["tether", "claude-code"] = Field(
        default="tether",
        description="What the service reads and answers: tether's envelope, or Claude Code's "
        "hook input and answer rules",
    )
    command: NotThisKind = not_this_kind()
    callback: NotThisKind = not_this_kind()

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

    def executor(self, manager: Engine) -> Executor:
        hook = HttpHook.from_config(self, clients=pool_of(manager))
        hook.redact = redactor_of(manager)
        hook.claude_event = self.claude_event
        hook.claude_matcher = self.claude_origin.get("matcher")
        if hook.claude_event == "Notification":  # told of hook errors too
            from .._claude_notification import tell_hook_errors

            tell_hook_errors(manager)
        return HttpExecutor(hook)
