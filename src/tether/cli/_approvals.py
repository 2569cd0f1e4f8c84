"""``tether approvals list / approve / deny``: the pending approvals of a running API's
processes, answered from the shell (see docs/processes.md, durable approvals)."""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import quote

import typer

__all__ = ["approvals_app"]

approvals_app = typer.Typer(
    help="The tool calls waiting for an approval, and an operator's answer.",
    no_args_is_help=True,
)

Url = Annotated[
    str,
    typer.Option("--url", envvar="TETHER_URL", help="Base URL of a running control API."),
]
Token = Annotated[
    str | None,
    typer.Option("--token", envvar="TETHER_API_TOKEN", help="Bearer token of the API."),
]
Process = Annotated[str, typer.Argument(help="The process whose runs wait.")]
RequestId = Annotated[str, typer.Argument(help="The request's id (see 'approvals list').")]
Reason = Annotated[str | None, typer.Option(help="Why (the model reads it).")]
Reviewer = Annotated[str | None, typer.Option(help="Who decides (default: operator).")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the API's JSON answer.")]
DEFAULT_URL = "http://127.0.0.1:9781"


@approvals_app.command("list")
def list_approvals(
    process: Process, url: Url = DEFAULT_URL, token: Token = None, as_json: AsJson = False
) -> None:
    """The pending approvals of a process, oldest first."""
    from rich.markup import escape
    from rich.table import Table

    from ._client import api_request
    from ._console import console

    answer = api_request("GET", url, token, f"/processes/{quote(process, safe='')}/approvals")
    pending: list[dict[str, Any]] = answer.get("approvals", [])
    out = console()
    if as_json:
        out.print_json(json.dumps(pending))
        return
    if not pending:
        out.print(f"no approval pending for {escape(process)}")
        return
    table = Table(box=None, pad_edge=False)
    for column in ("REQUEST", "TOOL", "ARGUMENTS", "EVENT", "REASON"):
        table.add_column(column)
    for p in pending:
        table.add_row(
            escape(str(p.get("request_id"))),
            escape(str(p.get("tool_name"))),
            escape(json.dumps(p.get("arguments"), default=str)),
            escape(str(p.get("event_id") or "-")),
            escape(str(p.get("reason") or "-")),
        )
    out.print(table)


def _answer(
    process: str,
    request_id: str,
    approved: bool,
    reason: str | None,
    reviewer: str | None,
    url: str,
    token: str | None,
    as_json: bool,
) -> None:
    from rich.markup import escape

    from ._client import api_request
    from ._console import console

    path = f"/processes/{quote(process, safe='')}/approvals/{quote(request_id, safe='')}"
    body = {"approved": approved, "reason": reason, "reviewer": reviewer}
    answer = api_request("POST", url, token, path, body)
    out = console()
    if as_json:
        out.print_json(json.dumps(answer))
        return
    asked = answer.get("request", {})
    verb = "approved" if approved else "denied"
    out.print(f"{verb} {escape(str(asked.get('tool_name')))} ({escape(request_id)})")


@approvals_app.command()
def approve(
    process: Process,
    request_id: RequestId,
    reason: Reason = None,
    reviewer: Reviewer = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Approve a pending tool call: the run waiting on it goes on."""
    _answer(process, request_id, True, reason, reviewer, url, token, as_json)


@approvals_app.command()
def deny(
    process: Process,
    request_id: RequestId,
    reason: Reason = None,
    reviewer: Reviewer = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Refuse a pending tool call: the model reads the refusal (and the reason)."""
    _answer(process, request_id, False, reason, reviewer, url, token, as_json)
