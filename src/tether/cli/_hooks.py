"""``tether hooks events|list|runs|enable|disable|dry-run``: hooks of a running runtime.

Each command is one or a few requests to the control API, rendered as a table (``--json``
prints the API's answer instead). ``runs --follow`` polls until Ctrl-C.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import quote

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._client import _request
from ._console import console

__all__ = [
    "dry_run",
    "list_hooks",
    "parse_since",
    "set_enabled",
    "show_events",
    "show_runs",
]

_STYLE: Final = {
    "blocked": "bold red",
    "failed": "red",
    "timed_out": "red",
    "dropped": "red",
    "applied": "yellow",
    "passed": "green",
    "skipped": "dim",
}
#: How far back each --follow poll looks again: a long dispatch is recorded when it ends, with
#: the time it started, so its runs can arrive after later ones were already shown.
FOLLOW_LOOKBACK: Final = 120.0
_RELATIVE: Final = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _console() -> Console:
    return console()


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in columns:
        table.add_column(column)
    return table


def _print_json(console: Console, value: Any) -> None:
    console.print_json(json.dumps(value))


def _name(name: str) -> str:
    return quote(name, safe="")


def _command(command: Any) -> str:
    if command is None:
        return "-"
    return command if isinstance(command, str) else shlex.join(str(part) for part in command)


def _matcher(matcher: dict[str, list[str]] | None) -> str:
    if not matcher:
        return "-"
    return " ".join(f"{key}={'|'.join(patterns)}" for key, patterns in matcher.items())


def _outcome(outcome: str) -> str:
    style = _STYLE.get(outcome)
    return f"[{style}]{escape(outcome)}[/]" if style else escape(outcome)


def _clock(iso: str) -> str:
    """The local time of day of an ISO timestamp, to the millisecond."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%H:%M:%S.%f")[:-3]
    except ValueError:
        return iso


def _timestamp(iso: str) -> float:
    """An ISO time as a POSIX timestamp; without an offset it is UTC (as the API reads it)."""
    when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def parse_since(text: str | None) -> str | None:
    """``--since``: an ISO 8601 time, or a duration ago (``30s``, ``10m``, ``2h``, ``1d``)."""
    if text is None:
        return None
    found = _RELATIVE.match(text.strip())
    if found is None:
        return text  # the API checks it and names the parameter when it is not ISO 8601
    ago = float(found.group(1)) * _UNITS[found.group(2)]
    try:
        return (datetime.now(UTC) - timedelta(seconds=ago)).isoformat()
    except OverflowError:  # before the year 1
        raise click.UsageError(f"--since {text!r} is too far back") from None


# -- events and the catalog --------------------------------------------------------------------


def show_events(*, blockable: bool | None, as_json: bool, family: str | None = None) -> int:
    """The event table, read here: no server is needed."""
    from ..hooks import FAMILIES, describe_events

    if family is not None and family not in FAMILIES:
        raise click.UsageError(
            f"--family {family!r} is not a family; families: {', '.join(FAMILIES)}"
        )
    events = describe_events(blockable=blockable, family=family)
    out = _console()
    if as_json:
        _print_json(out, events)
        return 0
    table = _table("EVENT", "FAMILY", "BLOCKABLE", "MATCHERS", "WHAT A BLOCK DOES")
    for e in events:
        table.add_row(
            escape(e["event"]),
            escape(e["family"]),
            "yes" if e["blockable"] else "no",
            escape(", ".join(e["matcher_fields"]) or "-"),
            escape(e["block_effect"] or "-"),
        )
    out.print(table)
    return 0


def list_hooks(
    url: str,
    token: str | None,
    *,
    process: str | None,
    event: str | None,
    source: str | None,
    mode: str | None,
    as_json: bool,
) -> int:
    params = {"process": process, "event": event, "source": source, "mode": mode}
    hooks = _request("GET", url, token, "/hooks/catalog", params=params)["hooks"]
    console = _console()
    if as_json:
        _print_json(console, hooks)
        return 0
    if not hooks:
        console.print("no hooks")
        return 0
    table = _table(
        "PROCESS",
        "EVENT",
        "#",
        "ID",
        "NAME",
        "SOURCE",
        "MODE",
        "KIND",
        "PRIORITY",
        "TIMEOUT",
        "FLAGS",
        "MATCHER",
        "ENABLED",
        "COMMAND",
    )
    table.columns[-1].overflow = "fold"  # a long command is folded, never cut short
    for h in hooks:
        flags = [flag for flag in ("fail_closed", "once") if h[flag]]
        if h["tag"]:
            flags.append(f"tag={h['tag']}")
        timeout = h["timeout"]
        table.add_row(
            escape(h["process"]),
            escape(h["event"]),
            str(h["order"]),
            escape(h["hook_id"]),
            escape(h["name"]),
            escape(h["source"]),
            escape(h["mode"]),
            escape(h["executor_kind"]),
            str(h["priority"]),
            f"{timeout:g}s" if isinstance(timeout, int | float) else "-",
            escape(",".join(flags) or "-"),
            escape(_matcher(h["matcher"])),
            "yes" if h["enabled"] else "[red]no[/]",
            escape(_command(h["command"])),
        )
    console.print(table)
    return 0


# -- run history ---------------------------------------------------------------------------------

_RUN_COLUMNS: Final = ("TIME", "EVENT", "HOOK", "ID", "SOURCE", "MODE", "OUTCOME", "MS", "ERROR")
#: Widths of the --follow lines (the last column takes what is left).
_WIDTHS: Final = (12, 18, 28, 9, 9, 5, 9, 8)


def _changes(run: dict[str, Any], width: int | None = 60) -> str:
    """A run's changes (``--show-changes``): ``key: before -> after`` for each key it changed;
    each value cut at ``width`` characters (None: whole, as piped output is)."""
    parts = []
    for key, change in (run.get("changes") or {}).items():
        before = _short(change["before"], width) if "before" in change else "(absent)"
        after = _short(change["after"], width) if "after" in change else "(removed)"
        parts.append(f"{key}: {before} -> {after}")
    return "; ".join(parts)


def _short(value: Any, width: int | None) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = repr(text) if isinstance(value, str) else text
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def _run_cells(run: dict[str, Any], show_changes: bool = False) -> list[str]:
    cells = _plain_cells(run)
    if show_changes:  # cut on a terminal only: piped output is whole
        cells.append(_changes(run, 60 if sys.stdout.isatty() else None))
    return cells


def _plain_cells(run: dict[str, Any]) -> list[str]:
    return [
        _clock(run["recorded_at"]),
        run["event"],
        run["hook_name"],
        run["hook_id"],
        run["source"],
        run["mode"],
        run["outcome"],
        # "~": an even share of the time of hooks timed together (duration_shared)
        f"{'~' if run.get('duration_shared') else ''}{run['duration_ms']:.1f}",
        run["error"] or "",
    ]


def _run_key(run: dict[str, Any]) -> tuple[Any, ...]:
    return (run["recorded_at"], run["hook_id"], run["dispatch_id"], run["event"], run["outcome"])


def _line(cells: list[str], outcome: str | None = None) -> str:
    parts = []
    for i, cell in enumerate(cells):
        width = _WIDTHS[i] if i < len(_WIDTHS) else 0
        text = escape(cell.ljust(width) if width else cell)
        if outcome is not None and i == 6:
            style = _STYLE.get(outcome)
            text = f"[{style}]{text}[/]" if style else text
        parts.append(text)
    return " ".join(parts).rstrip()


def show_runs(
    url: str,
    token: str | None,
    name: str,
    *,
    event: str | None,
    outcome: str | None,
    hook: str | None,
    since: str | None,
    last: int | None,
    follow: bool,
    interval: float,
    as_json: bool,
    show_changes: bool = False,
) -> int:
    path = f"/processes/{_name(name)}/hooks/runs"
    filters = {"event": event, "outcome": outcome, "hook": hook}
    since = parse_since(since)
    runs = _request("GET", url, token, path, params={**filters, "since": since, "last": last})[
        "runs"
    ]
    console = _console()
    if not follow:
        if as_json:
            _print_json(console, runs)
        elif not runs:
            console.print(f"no hook runs recorded for {escape(name)}")
        else:
            table = _table(*_RUN_COLUMNS, *(("CHANGES",) if show_changes else ()))
            for run in runs:
                cells = [escape(c) for c in _run_cells(run, show_changes)]
                cells[6] = _outcome(run["outcome"])
                table.add_row(*cells)
            console.print(table)
        return 0
    return _follow(
        console,
        url,
        token,
        path,
        filters,
        since,
        runs,
        interval,
        as_json,
        primed=last is not None,
        show_changes=show_changes,
    )


def _follow(
    console: Console,
    url: str,
    token: str | None,
    path: str,
    filters: dict[str, Any],
    since: str | None,
    first: list[dict[str, Any]],
    interval: float,
    as_json: bool,
    *,
    primed: bool = False,
    show_changes: bool = False,
) -> int:
    """Print runs as they are recorded until Ctrl-C (then exit 0).

    ``primed`` (``--last``): ``first`` is only the tail of what was recorded, so the older runs
    of the first poll's look-back window are noted as seen without being printed.
    """
    seen: dict[tuple[Any, ...], float] = {}
    floor = _timestamp(since) if since else None

    def window() -> dict[str, Any]:
        newest = max(seen.values(), default=time.time())
        start = newest - FOLLOW_LOOKBACK
        if floor is not None:
            start = max(start, floor)
        for key in [k for k, at in seen.items() if at < start]:
            del seen[key]
        return {**filters, "since": datetime.fromtimestamp(start, UTC).isoformat()}

    def show(runs: list[dict[str, Any]]) -> None:
        for run in runs:
            key = _run_key(run)
            if key in seen:
                continue
            seen[key] = _timestamp(run["recorded_at"])
            if as_json:
                console.print(json.dumps(run), markup=False)
            else:
                console.print(_line(_run_cells(run, show_changes), run["outcome"]))

    try:
        if not as_json:
            columns = [*_RUN_COLUMNS, *(("CHANGES",) if show_changes else ())]
            console.print(f"[bold]{_line(columns)}[/]")
        show(first)
        if primed:
            # Runs recorded since the first answer (newer than its newest) are still shown.
            shown = max(seen.values(), default=time.time())
            for run in _request("GET", url, token, path, params=window())["runs"]:
                at = _timestamp(run["recorded_at"])
                if at <= shown:
                    seen.setdefault(_run_key(run), at)
        while True:
            time.sleep(interval)
            show(_request("GET", url, token, path, params=window())["runs"])
    except KeyboardInterrupt:
        return 0


# -- enable / disable / dry-run ------------------------------------------------------------------


def set_enabled(url: str, token: str | None, name: str, selector: str, *, enabled: bool) -> int:
    verb = "enable" if enabled else "disable"
    answer = _request(
        "POST", url, token, f"/processes/{_name(name)}/hooks/{_name(selector)}/{verb}"
    )
    console = _console()
    for h in answer["hooks"]:
        where = "" if h["source"] not in ("shared", "inherited") else f", {h['source']}"
        console.print(
            f"{verb}d {escape(h['hook_id'])} ({escape(h['name'])}, {escape(h['event'])}"
            f"{escape(where)}) on {escape(name)}"
        )
    return 0


def _changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None or after is None:
        return "-"
    keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return ", ".join(keys) or "-"


def dry_run(
    url: str, token: str | None, name: str, event: str, data: dict[str, Any], *, as_json: bool
) -> int:
    answer = _request(
        "POST",
        url,
        token,
        f"/processes/{_name(name)}/hooks/dry-run",
        {"event": event, "data": data},
    )
    console = _console()
    if as_json:
        _print_json(console, answer)
        return 0
    if answer["blocked"]:
        decision = f"[bold red]BLOCKED[/] ({escape(str(answer['reason']))})"
    else:
        decision = "[green]passed[/]"
    console.print(
        f"dry run of {escape(answer['event'])} on {escape(name)}: {decision}; "
        f"{answer['fired']} hook(s) ran, nothing was queued"
    )
    if answer["trace"]:
        table = _table("#", "HOOK", "ID", "SOURCE", "MODE", "OUTCOME", "MS", "CHANGED", "ERROR")
        for i, run in enumerate(answer["trace"], 1):
            table.add_row(
                str(i),
                escape(run["hook_name"]),
                escape(run["hook_id"]),
                escape(run["source"]),
                escape(run["mode"]),
                _outcome(run["outcome"]),
                f"{run['duration_ms']:.1f}",
                escape(_changed(run["data_before"], run["data_after"])),
                escape(run["error"] or ""),
            )
        console.print(table)
    else:
        console.print("no hook of the chain runs for this event")
    withheld = answer.get("withheld") or []
    if withheld:
        console.print("[bold]withheld[/] (what plugins would have kept; a dry run keeps nothing)")
        table = _table("HOOK", "ACTION", "TASK", "WHAT")
        for note in withheld:
            what = note.get("message") or note.get("artifact") or ""
            table.add_row(
                escape(str(note.get("hook_name", ""))),
                escape(str(note.get("action", ""))),
                escape(str(note.get("task_id", ""))),
                escape(str(what)),
            )
        console.print(table)
    console.print("[bold]data after the chain[/]")
    console.print(escape(json.dumps(answer["data"], indent=2, default=str)))
    return 0
