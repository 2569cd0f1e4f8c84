"""``tether inject`` and ``tether ps``: talking to a running control API."""

from __future__ import annotations

import json
import re
from typing import Any, Final

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["APIClientError", "inject_event", "list_processes"]


_SENDABLE_TOKEN: Final = re.compile(r"[\x21-\x7e]+")
_HOST: Final = re.compile(r"[A-Za-z0-9._:-]+")  # a name (IDNA-encoded), IPv4 or IPv6


class APIClientError(Exception):
    """The API could not be reached or answered with an error."""


def _request(
    method: str,
    url: str,
    token: str | None,
    path: str,
    body: Any = None,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if token and not _SENDABLE_TOKEN.fullmatch(token):
        # Never echoed: it is a credential, if a mistyped one.
        raise APIClientError(
            "--token (or TETHER_API_TOKEN) must be printable ASCII without spaces; "
            "an Authorization header cannot carry this one"
        )
    _check_url(url)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = url.rstrip("/")
    query = {k: v for k, v in (params or {}).items() if v is not None}
    try:
        with httpx.Client(timeout=30) as client:
            response = client.request(
                method, f"{base}/api/v1{path}", json=body, headers=headers, params=query
            )
    except httpx.InvalidURL as exc:
        raise APIClientError(f"--url {url!r} is not a valid URL: {exc}") from None
    except httpx.HTTPError as exc:
        raise APIClientError(
            f"cannot reach the tether API at {base}: {exc} (is `tether serve` running?)"
        ) from None
    try:
        data = response.json()
    except ValueError:
        raise APIClientError(
            f"{base} answered HTTP {response.status_code} without JSON; is it a tether API?"
        ) from None
    if response.is_error:
        error = data.get("error", {}) if isinstance(data, dict) else {}
        code = error.get("code", response.status_code)
        raise APIClientError(f"{code}: {error.get('message', response.reason_phrase)}")
    if not isinstance(data, dict):
        raise APIClientError(f"{base} answered with unexpected JSON")
    return data


def _check_url(url: str) -> None:
    """An http(s) URL with a host and a port in range (a socket would wrap 99999 around)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise APIClientError(f"--url {url!r} is not a valid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        problem = "use http:// or https://"
    elif not parsed.host:
        problem = "it names no host"
    elif not _HOST.fullmatch(parsed.raw_host.decode("ascii", "replace")):
        problem = f"host {parsed.host!r} is not a host name or address"
    elif parsed.port is not None and not 1 <= parsed.port <= 65535:
        problem = f"port {parsed.port} is not 1-65535"
    else:
        return
    raise APIClientError(f"--url {url!r} is not a valid URL: {problem}")


def inject_event(url: str, token: str | None, name: str, payload: Any, trigger_id: str) -> int:
    from urllib.parse import quote

    answer = _request(
        "POST",
        url,
        token,
        f"/processes/{quote(name, safe='')}/inject",
        {"payload": payload, "trigger_id": trigger_id},
    )
    console = Console(soft_wrap=True, highlight=False)
    if answer.get("status") == "dead_lettered":
        console.print(
            f"event {answer['event_id']} [red]dead-lettered[/] by {escape(name)}: "
            f"{escape(str(answer.get('reason')))}"
            + (f" ({escape(str(answer['error']))})" if answer.get("error") else "")
        )
        return 1
    console.print(f"event {answer['event_id']} queued for {escape(name)}")
    return 0


def list_processes(url: str, token: str | None, *, as_json: bool) -> int:
    answer = _request("GET", url, token, "/processes")
    processes = answer.get("processes", [])
    console = Console(soft_wrap=True, highlight=False)
    if as_json:
        console.print_json(json.dumps(processes))
        return 0
    if not processes:
        console.print("no processes")
        return 0
    clustered = "host" in answer  # a cluster's host lists them all, with where each runs
    table = Table(box=None, pad_edge=False)
    columns = ("NAME", "HOST", "STATE") if clustered else ("NAME", "STATE")
    for column in (*columns, "RUNS", "QUEUED", "DEAD LETTERS", "HOOKS", "UPTIME"):
        table.add_column(column)
    for p in processes:
        uptime = p.get("uptime_s")
        where = [escape(str(p.get("host") or "-"))] if clustered else []
        table.add_row(
            escape(str(p.get("name"))),
            *where,
            str(p.get("state")),
            str(p.get("invocation_count")),
            str(p.get("queue_size")),
            str(p.get("dead_letter_count")),
            str(p.get("hook_count")),
            f"{uptime:.0f}s" if isinstance(uptime, int | float) else "-",
        )
    console.print(table)
    return 0
