"""Request plumbing shared by the control API and the webhook server: bodies, JSON, auth."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Any, Final
from urllib.parse import urlsplit

from starlette.requests import Request

from .._json import loads_strict
from ._errors import APIError

__all__ = [
    "DEFAULT_MAX_BODY",
    "MAX_JSON_DEPTH",
    "bad_query",
    "check_bearer",
    "foreign_origin",
    "host_port",
    "hostname",
    "is_loopback",
    "parse_json",
    "query_params",
    "read_body",
]

DEFAULT_MAX_BODY: Final = 1024 * 1024
#: How deeply objects and arrays of a JSON body may nest. Deeper data is refused where it
#: arrives: hooks, views and copies walk it recursively and would run out of stack.
MAX_JSON_DEPTH: Final = 100


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def hostname(host: str) -> str:
    """The name or address of a Host header or an origin's authority, without its port."""
    host = host.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_port(host: str | None, default: int | None) -> int | None:
    """The port a ``Host`` header names (80 when it names none), ``default`` without one."""
    if not host:
        return default
    try:
        return urlsplit(f"http://{host.strip()}").port or 80
    except ValueError:
        return default


def foreign_origin(request_headers: list[tuple[bytes, bytes]], port: int | None) -> str | None:
    """The first ``Origin`` header (of all those sent) naming a page of another origin than
    the server's own: not on this machine, or (``port`` given: the port the request was sent
    to, from its ``Host``) on this machine but on another port, as a local development
    server's page (``localhost:3000``) is.

    Every one is read, not the last only: a foreign origin listed first must not hide behind a
    loopback one listed after it. A browser sends one with every cross-site POST; other
    clients (a webhook provider, curl) send none.
    """
    for name, value in request_headers:
        if name.lower() == b"origin":
            origin = value.decode("latin-1")
            if not _own_origin(origin, port):
                return origin
    return None


def _own_origin(origin: str, port: int | None) -> bool:
    try:
        parts = urlsplit(origin.strip())
        given = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:  # a port out of range, say
        return False
    return is_loopback(parts.hostname or "") and (port is None or given == port)


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


async def read_body(request: Request, limit: int) -> bytes:
    """The request body; 413 BODY_TOO_LARGE past ``limit`` bytes (checked while reading)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise APIError(400, "BAD_REQUEST", "Content-Length is not a number") from None
        if size > limit:
            raise _too_large(limit)
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> APIError:
    return APIError(413, "BODY_TOO_LARGE", f"the request body is larger than {limit} bytes")


def parse_json(body: bytes) -> Any:
    """Decode a JSON body; 400 INVALID_JSON for anything else: NaN and Infinity, a number out
    of a float's range (1e400), nesting deeper than MAX_JSON_DEPTH."""
    if not body.strip():
        raise APIError(400, "INVALID_JSON", "the request body is empty; expected JSON")
    try:
        data = loads_strict(body)
    except RecursionError:
        data = _TOO_DEEP
    except (ValueError, UnicodeDecodeError) as exc:
        raise APIError(400, "INVALID_JSON", f"the request body is not valid JSON: {exc}") from None
    if data is _TOO_DEEP or _too_deep(data):
        raise APIError(
            400,
            "INVALID_JSON",
            f"the JSON body is nested too deeply (more than {MAX_JSON_DEPTH} levels)",
        )
    return data


_TOO_DEEP: Final = object()


def _too_deep(data: Any) -> bool:
    """Whether objects and arrays in ``data`` nest deeper than MAX_JSON_DEPTH (no recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_bearer(header: str | None, token: str) -> None:
    """Raise 401 unless ``header`` is ``Bearer <token>`` (compared in constant time)."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if not header:
        raise APIError(
            401,
            "UNAUTHORIZED",
            "this API needs an 'Authorization: Bearer <token>' header",
            headers=challenge,
        )
    scheme, _, given = header.partition(" ")
    # Digests of both, so the comparison takes as long whatever the length of the guess
    # (compare_digest returns at once on a length mismatch, which would tell the length).
    given_digest = hashlib.sha256(given.strip().encode("utf-8", "surrogateescape")).digest()
    token_digest = hashlib.sha256(token.encode("utf-8")).digest()
    if scheme.lower() != "bearer" or not hmac.compare_digest(given_digest, token_digest):
        raise APIError(401, "UNAUTHORIZED", "the bearer token is not valid", headers=challenge)


def bad_query(name: str, message: str) -> APIError:
    """A 400 INVALID_QUERY naming the parameter (``details[0].path`` is ``query.<name>``)."""
    return APIError(
        400, "INVALID_QUERY", f"{name}: {message}", [{"path": f"query.{name}", "message": message}]
    )


#: Where a request's scope holds the query parameters its route declares (see _routes).
DECLARED_QUERY: Final = "tether.query"


def query_params(request: Request) -> dict[str, str]:
    """The query parameters, each given at most once and each one the route table declares
    for the request's operation (else 400): a misspelled filter must not silently widen an
    answer, and what is taken is what the OpenAPI document lists."""
    allowed: tuple[str, ...] = request.scope.get(DECLARED_QUERY, ())
    found: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            choices = ", ".join(allowed) if allowed else "none"
            raise bad_query(name, f"unknown query parameter; allowed: {choices}")
        if name in found:
            raise bad_query(name, "given more than once")
        found[name] = value
    return found
