"""State probes: continuous isolation checks between the runs of a scenario.

``StateProbeHook`` is abstract: a subclass says what to look at (``probe``). The first run's
post-reset state (at ``on_run_start``) is the clean baseline; every later run's post-reset state
is compared with it and the run asserts it at ``on_run_end``: a mismatch is a warning in the
run's trace (``hook:<name>: ...``) and a violation artifact beside it (under 4,000 characters
of JSON, values cut with a marker), with what the run before left at its end. Each probe's
answer is snapshotted (deep-copied) when it is taken. A probe reports; it never changes a
score. ``isolation`` is the concrete probe shipped: the conversation, the state notes, and
the files under the paths of ``TETHER_ISOLATION_PATH`` (separated by ``os.pathsep``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Final

from ..hooks import Plugin
from ._context import RunContext, knob_name

__all__ = ["IsolationProbe", "StateProbeHook"]

#: At most this many mismatches are kept per run (then a count of the others).
MAX_MISMATCHES: Final = 50
_VALUE_CHARS: Final = 120
#: At most this many files are hashed under the declared paths.
MAX_FILES: Final = 10_000


#: A violation artifact, as JSON, stays under this many characters (values cut, marked).
MAX_ARTIFACT_CHARS: Final = 4000
#: Characters kept of one mismatch line, and of what the run before left.
_LINE_CHARS: Final = 300
_LEFT_CHARS: Final = 1500


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit} more characters cut]"


def _shown(value: Any) -> str:
    return cut(json.dumps(value, default=str, ensure_ascii=False), _VALUE_CHARS)


def snapshot(state: Any) -> Any:
    """A deep copy of a probe's (JSON-serialisable) answer, taken now: a probe that answers
    a live or shallow-copied view of the world cannot change the baseline afterwards."""
    return json.loads(json.dumps(state, default=str))


def bounded(artifact: dict[str, Any], limit: int = MAX_ARTIFACT_CHARS) -> dict[str, Any]:
    """The violation ``artifact`` cut to fewer than ``limit`` characters of JSON: each mismatch
    line and what the run before left are cut with a marker, then mismatches are dropped from
    the end (counted) until it fits."""
    out = dict(artifact)
    lines = [cut(line, _LINE_CHARS) for line in out.get("mismatches", [])]
    left = json.dumps(out.get("previous_run_left"), default=str, ensure_ascii=False)
    if len(left) > _LEFT_CHARS:
        out["previous_run_left"] = cut(left, _LEFT_CHARS)
    kept, dropped = list(lines), 0
    while True:
        out["mismatches"] = kept + ([f"... and {dropped} more"] if dropped else [])
        if len(json.dumps(out, default=str, ensure_ascii=False)) < limit or not kept:
            return out
        kept.pop()
        dropped += 1


def differences(baseline: Any, current: Any, path: str = "") -> list[str]:
    """Where ``current`` differs from ``baseline``, one line per difference (mappings are
    compared key by key, anything else as a whole)."""
    if isinstance(baseline, dict) and isinstance(current, dict):
        found: list[str] = []
        for key in sorted(set(baseline) | set(current), key=str):
            where = cut(f"{path}[{key!r}]" if path else str(key), _VALUE_CHARS)
            if key not in current:
                found.append(f"{where} is gone (was {_shown(baseline[key])})")
            elif key not in baseline:
                found.append(f"{where} appeared: {_shown(current[key])}")
            else:
                found += differences(baseline[key], current[key], where)
        return found
    if baseline != current:
        return [f"{path or 'state'} is {_shown(current)}, was {_shown(baseline)}"]
    return []


class StateProbeHook(Plugin):
    """Abstract base of state probes: override ``probe`` (and ``compare`` if need be).

    One instance watches one pack; its baseline is per scenario (each scenario is provisioned
    anew).
    """

    name = "state-probe"

    def __init__(self) -> None:
        self._baseline: Any = None
        self._baseline_run: str | None = None
        self._started: Any = None
        self._left: Any = None
        self._checked = 0
        self._violations = 0

    async def probe(self, ctx: RunContext) -> Any:
        """The state to compare (JSON-serialisable), as it is now."""
        raise NotImplementedError(f"{type(self).__name__} must define probe(ctx)")

    def compare(self, baseline: Any, current: Any) -> list[str]:
        """The mismatches between the clean baseline and a run's post-reset state."""
        return differences(baseline, current)

    async def on_provisioned(self, ctx: RunContext) -> None:
        self._baseline = self._baseline_run = self._left = None
        self._checked = self._violations = 0

    async def on_run_start(self, ctx: RunContext) -> None:
        state = snapshot(await self.probe(ctx))  # as it is now, whatever the probe hands back
        self._started = state
        if self._baseline_run is None:
            self._baseline, self._baseline_run = state, ctx.run_id

    async def on_run_end(self, ctx: RunContext) -> None:
        started, self._started = self._started, None
        left_before, self._left = self._left, snapshot(await self.probe(ctx))
        if ctx.run_id == self._baseline_run or started is None:
            return
        self._checked += 1
        mismatches = self.compare(self._baseline, started)
        if not mismatches:
            return
        self._violations += 1
        kept = mismatches[:MAX_MISMATCHES]
        if len(mismatches) > MAX_MISMATCHES:
            kept.append(f"... and {len(mismatches) - MAX_MISMATCHES} more")
        ctx.warn(
            f"run started with state the reset did not clear ({len(mismatches)} "
            f"mismatch(es)): {'; '.join(kept[:3])}"
        )
        ctx.emit_artifact(
            bounded(
                {
                    "schema_version": 1,
                    "run_id": ctx.run_id,
                    "scenario_id": (ctx.scenario or {}).get("id"),
                    "baseline_run_id": self._baseline_run,
                    "mismatches": kept,
                    "previous_run_left": left_before,
                }
            )
        )

    async def on_scenario_end(self, ctx: RunContext) -> None:
        ctx.emit_artifact(
            {
                "schema_version": 1,
                "scenario_id": (ctx.scenario or {}).get("id"),
                "baseline_run_id": self._baseline_run,
                "runs_checked": self._checked,
                "runs_with_leaks": self._violations,
            }
        )


class IsolationProbe(StateProbeHook):
    """Built-in ``isolation``: nothing leaks between runs, in the conversation, the state
    notes, or the files under ``TETHER_ISOLATION_PATH``."""

    name = "isolation"

    def __init__(self, paths: list[str | os.PathLike[str]] | None = None) -> None:
        super().__init__()
        if paths is None:
            raw = os.environ.get(knob_name(self.name, "PATH"), "")
            paths = [p for p in raw.split(os.pathsep) if p]
        self.paths = [Path(p).resolve() for p in paths]

    async def probe(self, ctx: RunContext) -> dict[str, Any]:
        seen = ctx.snapshot()
        conversation = seen["conversation"]
        text = json.dumps(conversation, sort_keys=True, default=str).encode()
        state: dict[str, Any] = {
            "conversation": {
                "messages": len(conversation),
                "sha256": hashlib.sha256(text).hexdigest()[:16],
            },
            "state": seen["state"],
        }
        if self.paths:
            state["files"] = self._files()
        return state

    def _files(self) -> dict[str, str]:
        files: dict[str, str] = {}
        for root in self.paths:
            if root.is_file():
                files[str(root)] = _digest(root)
                continue
            if not root.is_dir():
                continue
            for path in sorted(root.rglob("*")):
                if len(files) >= MAX_FILES:
                    return files
                if path.is_file():
                    files[str(path)] = _digest(path)
        return files


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
