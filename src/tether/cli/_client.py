"""``tether inject`` and ``tether ps``: talking to a running control API."""

from __future__ import annotations

import json
import re
from typing import Any, Final

import httpx
from rich.markup import escape
from rich.table import Table

from ..errors import TetherError
from ._console import console

__all__ = ["APIClientError", "api_request", "inject_event", "list_processes", "publish_event"]


_SENDABLE_TOKEN: Final = re.compile(r"[\x21-\x7e]+")
_HOST: Final = re.compile(r"[A-Za-z0-9._:-]+")  # a name (IDNA-encoded), IPv4 or IPv6


class APIClientError(TetherError):
    """The API could not be reached or answered with an error."""


def _request(
    method: str,
    url: str,
    token: str | None,
    path: str,
    body: Any = None,
    params: dict[str, Any] | None = None,
    *,
    timeout: float = 30.0,
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
        with httpx.Client(timeout=timeout) as client:
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


def api_request(
    method: str, url: str, token: str | None, path: str, body: Any = None
) -> dict[str, Any]:
    """The JSON answer of ``method path`` of the API at ``url``; APIClientError when it
    cannot be reached or answers an error."""
    return _request(method, url, token, path, body)


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


def inject_event(
    url: str,
    token: str | None,
    name: str,
    payload: Any,
    trigger_id: str | None,
    *,
    traceparent: str | None = None,
    as_json: bool = False,
    wait: float = 0.0,
) -> int:
    """Inject one event; with ``trigger_id``, as an event of that trigger of the process (its
    type too), which must exist. ``wait``: seconds to wait for its outcome. Exit status 1 when
    the event was dead-lettered (at once, or within ``wait``: refused by a user_prompt_submit
    hook, a guardrail, a budget, or failed for good)."""
    from urllib.parse import quote

    path = f"/processes/{quote(name, safe='')}"
    body: dict[str, Any] = {"payload": payload, "trigger_id": "cli"}
    if trigger_id is not None:
        triggers = _request("GET", url, token, path).get("triggers", [])
        found = [t for t in triggers if isinstance(t, dict) and t.get("id") == trigger_id]
        if not found:
            known = ", ".join(sorted(str(t.get("id")) for t in triggers)) or "none"
            raise APIClientError(
                f"--trigger-id: process {name!r} has no trigger {trigger_id!r} (its triggers: "
                f"{known}); leave --trigger-id out to inject a manual event"
            )
        body.update(trigger_id=trigger_id, trigger_type=str(found[0].get("type", "manual")))
    if traceparent is not None:
        body["traceparent"] = traceparent
    if wait > 0:
        body["wait"] = wait
    answer = _request("POST", url, token, f"{path}/inject", body, timeout=wait + 30.0)
    out = console()
    dead = answer.get("status") == "dead_lettered"
    if as_json:
        out.print_json(json.dumps(answer))
        return 1 if dead else 0
    if dead:
        out.print(
            f"event {answer['event_id']} [red]dead-lettered[/] by {escape(name)}: "
            f"{escape(str(answer.get('reason')))}"
            + (f" ({escape(str(answer['error']))})" if answer.get("error") else "")
        )
        return 1
    if answer.get("status") == "done":
        outcome = escape(str(answer.get("outcome")))
        out.print(f"event {answer['event_id']} done by {escape(name)}: {outcome}")
        return 0
    later = f" (not decided within {wait:g} s)" if wait > 0 else ""
    out.print(f"event {answer['event_id']} queued for {escape(name)}{later}")
    return 0


def publish_event(
    url: str, token: str | None, event_type: str, payload: Any, *, as_json: bool = False
) -> int:
    """Publish a runtime event to the processes with an event trigger of ``event_type``."""
    answer = _request("POST", url, token, "/events", {"event_type": event_type, "payload": payload})
    out = console()
    if as_json:
        out.print_json(json.dumps(answer))
        return 0
    ids = answer.get("event_ids", [])
    if not ids:
        out.print(f"no event trigger listens for {escape(event_type)!r}: nothing was queued")
        return 0
    for event_id in ids:
        out.print(f"event {event_id} queued ({escape(event_type)})")
    return 0


def list_processes(url: str, token: str | None, *, as_json: bool) -> int:
    """The processes; HOOKS counts every hook of a process's resolved chain, as
    ``tether hooks list`` lists them (shared and inherited ones included, and said)."""
    answer = _request("GET", url, token, "/processes")
    processes = answer.get("processes", [])
    out = console()
    if as_json:
        out.print_json(json.dumps(processes))
        return 0
    if not processes:
        out.print("no processes")
        return 0
    clustered = "host" in answer  # a cluster's host lists them all, with where each runs
    catalog = _request("GET", url, token, "/hooks/catalog").get("hooks", [])
    table = Table(box=None, pad_edge=False)
    columns = ("NAME", "HOST", "STATE") if clustered else ("NAME", "STATE")
    for column in (*columns, "RUNS", "QUEUED", "DEAD LETTERS", "HOOKS", "TOKENS", "COST", "UPTIME"):
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
            _hook_count([h for h in catalog if h.get("process") == p.get("name")]),
            *_usage(p.get("usage")),
            f"{uptime:.0f}s" if isinstance(uptime, int | float) else "-",
        )
    out.print(table)
    return 0


def _usage(usage: Any) -> tuple[str, str]:
    """TOKENS and COST of a process's model calls: ``2052`` and ``0.0312`` (``+2 unpriced``
    when some calls' model has no price); ``-`` before any call."""
    if not isinstance(usage, dict) or not usage.get("model_calls"):
        return "-", "-"
    cost = f"{usage.get('cost', 0.0):.4f}"
    if usage.get("unpriced_calls"):
        cost += f" +{usage['unpriced_calls']} unpriced"
    return str(usage.get("total_tokens", 0)), cost


def _hook_count(hooks: list[dict[str, Any]]) -> str:
    """``5`` or ``5 (2 shared, 1 inherited)``."""
    kinds = [
        f"{n} {source}"
        for source in ("shared", "inherited")
        if (n := sum(1 for h in hooks if h.get("source") == source))
    ]
    return f"{len(hooks)} ({', '.join(kinds)})" if kinds else str(len(hooks))
