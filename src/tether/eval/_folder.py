"""The runs folder: one run's story in files named by one stem, and the sidecar rule.

::

    <stem>.json                          the trace (<stem> = <timestamp>_<run_id[:8]>)
    <stem>.score.json                    its score
    <stem>.<hook>[.<label>].json         a hook's artifact of that run
    <sweep>.<hook>.<scenario>[.<label>].pack.json   a hook's artifact of one scenario
    <sweep>.<hook>[.<label>].pack.json   a hook's artifact of the pack
    <sweep>.pack.json                    the sweep: hooks, aggregates, scenario/pack warnings

The sidecar rule: a ``*.json`` file whose stem holds a dot is a sidecar, never a trace. Every
reader of the folder (``load_runs``, ``tether eval report``) applies it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["SavedRun", "is_trace_file", "load_runs", "run_stem", "stamp", "write_json"]


def stamp(when: datetime) -> str:
    """A UTC timestamp for file names, to the millisecond, with no dot: 20260102T030405678Z."""
    return when.strftime("%Y%m%dT%H%M%S") + f"{when.microsecond // 1000:03d}Z"


def run_stem(started: datetime, run_id: str) -> str:
    return f"{stamp(started)}_{run_id[:8]}"


def is_trace_file(path: Path) -> bool:
    """The sidecar rule: ``<stem>.json`` is a trace only if ``<stem>`` holds no dot."""
    return path.suffix == ".json" and "." not in path.name[: -len(".json")]


def write_json(path: Path, payload: Any) -> None:
    """Write ``payload`` whole or not at all (a temporary file, then a rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True, slots=True)
class SavedRun:
    """One run found in a folder: its trace, its score (None if it has none) and sidecars."""

    path: Path
    trace: dict[str, Any]
    score: dict[str, Any] | None
    #: The hook artifacts beside it, by key (``<hook>`` or ``<hook>.<label>``).
    artifacts: dict[str, Path]

    @property
    def stem(self) -> str:
        return self.path.name[: -len(".json")]


SavedRun.__module__ = "tether.eval"


def _json_files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.rglob("*.json")):
        if path.is_file() and not path.name.startswith("."):
            yield path


def load_runs(folder: str | os.PathLike[str]) -> list[SavedRun]:
    """Every run in ``folder`` (and below it), oldest first by file name.

    Traces are found by the sidecar rule; a file that is not a trace of tether's (not JSON,
    or no ``run_id``) is skipped, never mistaken for one.
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"no runs folder {str(root)!r}")
    files = list(_json_files(root))
    by_dir: dict[Path, list[Path]] = {}
    for path in files:
        by_dir.setdefault(path.parent, []).append(path)
    records: list[SavedRun] = []
    for path in files:
        if not is_trace_file(path):
            continue
        trace = _read(path)
        if not isinstance(trace, dict) or "run_id" not in trace or "turns" not in trace:
            continue
        stem = path.name[: -len(".json")]
        score_path = path.with_name(f"{stem}.score.json")
        score = _read(score_path) if score_path.is_file() else None
        artifacts: dict[str, Path] = {}
        for other in by_dir[path.parent]:
            name = other.name
            if name.startswith(f"{stem}.") and name not in (path.name, score_path.name):
                artifacts[name[len(stem) + 1 : -len(".json")]] = other
        records.append(SavedRun(path, trace, score if isinstance(score, dict) else None, artifacts))
    return records


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
