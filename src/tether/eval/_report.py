"""Aggregates and reports: pass rates per scenario, failing layers, latency, JUnit XML.

Only traces and their scores count. Hook artifacts and warnings never enter a total, a
JUnit case or an exit code.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree as ET

from ._folder import SavedRun, load_runs

__all__ = ["Report", "aggregate", "junit_xml", "report_folder"]


@dataclass(frozen=True, slots=True)
class Report:
    """What a runs folder holds: its runs and one aggregate per (pack, scenario)."""

    folder: str
    records: list[SavedRun]
    scenarios: list[dict[str, Any]]

    @property
    def passed(self) -> bool:
        """Every scenario reached its pass rate (an empty folder passes nothing)."""
        return bool(self.scenarios) and all(a["passed"] for a in self.scenarios)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "runs": len(self.records),
            "passed": self.passed,
            "scenarios": self.scenarios,
        }


Report.__module__ = "tether.eval"


def _percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(share * (len(ordered) - 1))))
    return round(ordered[rank], 3)


def aggregate(
    pack: str,
    scenario_id: str,
    required: float,
    runs: Sequence[tuple[dict[str, Any], dict[str, Any] | None]],
    *,
    error: str | None = None,
) -> dict[str, Any]:
    """One scenario's aggregate of its (trace, score) pairs; a run with no score failed."""
    passed_runs = sum(1 for _, score in runs if score is not None and score.get("passed") is True)
    failing: dict[str, int] = {}
    for _, score in runs:
        layers = ["unscored"] if score is None else score.get("failed_layers", [])
        for layer in layers:
            failing[layer] = failing.get(layer, 0) + 1
    latencies = [
        float(turn["duration_ms"])
        for trace, _ in runs
        for turn in trace.get("turns", [])
        if isinstance(turn.get("duration_ms"), int | float)
    ]
    total = len(runs)
    rate = passed_runs / total if total else 0.0
    return {
        "pack": pack,
        "scenario_id": scenario_id,
        "runs": total,
        "passed_runs": passed_runs,
        "failed_runs": total - passed_runs,
        "pass_rate": round(rate, 4),
        "required_pass_rate": required,
        "passed": error is None and total > 0 and rate >= required,
        "failing_layers": failing,
        "latency_ms": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": round(max(latencies), 3) if latencies else None,
        },
        "error": error,
    }


def report_folder(folder: str | os.PathLike[str]) -> Report:
    """The report of every run in a folder: one aggregate per (pack, scenario), in the order
    their first run was found."""
    records = load_runs(folder)
    groups: dict[tuple[str, str], list[SavedRun]] = {}
    for record in records:
        key = (str(record.trace.get("pack")), str(record.trace.get("scenario_id")))
        groups.setdefault(key, []).append(record)
    aggregates = []
    for (pack, scenario_id), found in groups.items():
        required = (found[0].trace.get("scenario") or {}).get("pass_rate", 1.0)
        aggregates.append(
            aggregate(
                pack,
                scenario_id,
                float(required) if isinstance(required, int | float) else 1.0,
                [(r.trace, r.score) for r in found],
            )
        )
    return Report(str(folder), records, aggregates)


def junit_xml(report: Report) -> str:
    """JUnit XML for CI: one suite per scenario, one case per run (hook artifacts: none)."""
    records = report.records
    by_scenario: dict[tuple[str, str], list[SavedRun]] = {}
    for record in records:
        key = (str(record.trace.get("pack")), str(record.trace.get("scenario_id")))
        by_scenario.setdefault(key, []).append(record)
    suites = ET.Element("testsuites", name="tether eval", tests=str(len(records)))
    failures_total = 0
    for (pack, scenario_id), found in by_scenario.items():
        failed = [r for r in found if not (r.score and r.score.get("passed") is True)]
        failures_total += len(failed)
        seconds = sum(float(r.trace.get("duration_ms") or 0) for r in found) / 1e3
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{pack}.{scenario_id}",
            tests=str(len(found)),
            failures=str(len(failed)),
            errors="0",
            time=f"{seconds:.3f}",
        )
        for record in found:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{pack}.{scenario_id}",
                name=f"run {int(record.trace.get('run_index') or 0) + 1} ({record.stem})",
                time=f"{float(record.trace.get('duration_ms') or 0) / 1e3:.3f}",
            )
            score = record.score
            if score is None:
                ET.SubElement(case, "failure", message="the run has no score", type="unscored")
            elif score.get("passed") is not True:
                layers = score.get("layers") or {}
                failing = score.get("failed_layers") or []
                message = "; ".join(f"{name}: {layers[name]['detail']}" for name in failing)
                failure = ET.SubElement(
                    case, "failure", message=message[:500], type=",".join(failing) or "failed"
                )
                failure.text = message
    suites.set("failures", str(failures_total))
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
