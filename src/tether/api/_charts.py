"""Per-hook charts of the last hour, drawn on the server from the run history.

For each hook of a process: how many times it ran in each minute, its p50 and p95 durations
(over the hour, and per five minutes), and the share of its runs that blocked or failed
(``failed``, ``timed_out`` and ``dropped`` count as errors). A run skipped by its matcher did
not run and is not counted. Two small SVG charts per hook: its runs per minute as bars (the
blocked and failed ones in a colour of their own), and its p50 and p95 durations per five
minutes as two lines. The dashboard shows them as they are: they hold numbers and escaped text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final
from xml.sax.saxutils import escape

from ..hooks import HookRun

__all__ = ["BARS", "STEPS", "WINDOW_S", "duration_svg", "hook_stats", "runs_svg"]

#: The charts' span by default, in seconds; the bars of the runs chart (one a minute over an
#: hour) and the steps of the duration lines (one per five minutes over an hour).
WINDOW_S: Final = 3600
BARS: Final = 60
STEPS: Final = 12
_ERRORS: Final = frozenset({"failed", "timed_out", "dropped"})
#: The drawing's size in pixels (the bars share the width; the tallest bar fills the height).
_WIDTH: Final = 240
_HEIGHT: Final = 40


def percentile(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of ``values`` (None when there are none)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def hook_stats(
    runs: Iterable[HookRun], *, now: float, window: int = WINDOW_S
) -> list[dict[str, Any]]:
    """One entry per hook that ran in the ``window`` seconds before ``now``, in the order the
    hooks first ran: its runs and its problems (blocked or failed) in each of BARS slices of
    the window (oldest first), the totals, ``p50_ms`` / ``p95_ms``, ``block_rate`` and
    ``error_rate``, and its p50 / p95 in each of STEPS slices (None where it did not run)."""
    buckets, steps = BARS, STEPS
    start = now - window
    hooks: dict[str, dict[str, Any]] = {}
    durations: dict[str, list[float]] = {}
    stepped: dict[str, list[list[float]]] = {}
    for run in runs:
        if run.outcome == "skipped" or not start <= run.recorded_at <= now:
            continue
        entry = hooks.get(run.hook_id)
        if entry is None:
            entry = hooks[run.hook_id] = {
                "hook_id": run.hook_id,
                "hook_name": run.hook_name,
                "event": run.event,
                "runs": 0,
                "blocked": 0,
                "errors": 0,
                "per_bucket": [0] * buckets,
                "problems_per_bucket": [0] * buckets,
            }
            durations[run.hook_id] = []
            stepped[run.hook_id] = [[] for _ in range(steps)]
        slot = min(buckets - 1, int((run.recorded_at - start) * buckets // window))
        entry["runs"] += 1
        entry["per_bucket"][slot] += 1
        problem = run.outcome == "blocked" or run.outcome in _ERRORS
        entry["blocked"] += run.outcome == "blocked"
        entry["errors"] += run.outcome in _ERRORS
        entry["problems_per_bucket"][slot] += problem
        durations[run.hook_id].append(run.duration_ms)
        step = min(steps - 1, int((run.recorded_at - start) * steps // window))
        stepped[run.hook_id][step].append(run.duration_ms)
    for hook_id, entry in hooks.items():
        entry["p50_ms"] = percentile(durations[hook_id], 0.50)
        entry["p95_ms"] = percentile(durations[hook_id], 0.95)
        entry["p50_per_step"] = [percentile(d, 0.50) for d in stepped[hook_id]]
        entry["p95_per_step"] = [percentile(d, 0.95) for d in stepped[hook_id]]
        entry["block_rate"] = entry["blocked"] / entry["runs"]
        entry["error_rate"] = entry["errors"] / entry["runs"]
    return list(hooks.values())


def _svg(cls: str, title: str, body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="hook-chart {cls}" role="img" '
        f'width="{_WIDTH}" height="{_HEIGHT}" viewBox="0 0 {_WIDTH} {_HEIGHT}">'
        f"<title>{escape(title)}</title>"
        f'<rect class="frame" x="0" y="0" width="{_WIDTH}" height="{_HEIGHT}"/>{body}</svg>'
    )


def runs_svg(entry: dict[str, Any], *, window: int = WINDOW_S) -> str:
    """``entry``'s runs per bucket as a small SVG bar chart: all runs in one colour, the
    blocked or failed ones over them in another; the title says what it shows."""
    counts: list[int] = entry["per_bucket"]
    problems: list[int] = entry["problems_per_bucket"]
    tallest = max(counts, default=0) or 1
    width = _WIDTH / len(counts)
    bars: list[str] = []
    for i, (count, bad) in enumerate(zip(counts, problems, strict=True)):
        x = f"{i * width:.2f}"
        for value, cls in ((count, "runs"), (bad, "problems")):
            if value:
                height = max(1.0, _HEIGHT * value / tallest)
                bars.append(
                    f'<rect class="{cls}" x="{x}" y="{_HEIGHT - height:.2f}" '
                    f'width="{max(width - 1, 1):.2f}" height="{height:.2f}"/>'
                )
    title = (
        f"{entry['hook_name']}: {entry['runs']} runs in the last {_span(window)} "
        f"({entry['blocked']} blocked, {entry['errors']} failed); "
        f"at most {max(counts, default=0)} in {_span(window // len(counts))}"
    )
    return _svg("runs", title, "".join(bars))


def duration_svg(entry: dict[str, Any], *, window: int = WINDOW_S) -> str:
    """``entry``'s p50 and p95 per step as two lines (a gap where it did not run), on a scale
    whose top is its slowest p95."""
    lines = {"p50": entry["p50_per_step"], "p95": entry["p95_per_step"]}
    top = max((v for v in lines["p95"] if v is not None), default=0.0) or 1.0
    pad = 3  # a point at either end stays whole
    step = (_WIDTH - 2 * pad) / max(1, len(lines["p95"]) - 1)
    body: list[str] = []
    for cls, values in lines.items():
        run: list[str] = []  # the points of one unbroken stretch
        for i, value in enumerate([*values, None]):
            if value is not None:
                y = _HEIGHT - 2 - (_HEIGHT - 4) * value / top
                run.append(f"{pad + i * step:.2f},{y:.2f}")
                continue
            if len(run) == 1:
                x, y_ = run[0].split(",")
                body.append(f'<circle class="{cls}" cx="{x}" cy="{y_}" r="1.5"/>')
            elif run:
                body.append(f'<polyline class="{cls}" points="{" ".join(run)}"/>')
            run = []
    title = (
        f"{entry['hook_name']}: p50 {_ms(entry['p50_ms'])}, p95 {_ms(entry['p95_ms'])} "
        f"over the last {_span(window)}; the slowest p95 of "
        f"{_span(window // len(lines['p95']))}: {_ms(top)}"
    )
    return _svg("durations", title, "".join(body))


def _span(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"
