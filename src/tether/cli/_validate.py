"""``tether validate FILE...``: every problem of every file, each with its path and line."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

from rich.markup import escape

from ._console import console

__all__ = ["validate_files"]


def validate_files(files: list[Path], *, as_json: bool = False) -> int:
    """Check each file; return 0 when all are valid, 1 otherwise.

    ``as_json``: one JSON object on stdout, ``{"valid": bool, "files": [{"file", "ok",
    "name", "triggers", "hooks", "errors": [{"path", "line", "message"}], "warnings"}]}``.
    """
    from ..manifest import ManifestError, load_manifest

    if as_json:
        return _validate_json(files)

    out = console()
    err = console(stderr=True)
    bad = 0
    for file in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                manifest = load_manifest(file)
            except ManifestError as exc:
                bad += 1
                for issue in exc.errors:
                    err.print(f"[red]error[/]: {escape(issue.format(str(file)))}")
                continue
            finally:
                for warning in caught:
                    err.print(f"[yellow]warning[/]: {escape(str(warning.message))}")
        triggers = len(manifest.triggers)
        hooks = len(manifest.hooks)
        out.print(
            f"[green]ok[/]     {escape(str(file))} ([bold]{escape(manifest.name)}[/]: "
            f"{triggers} trigger{'s' * (triggers != 1)}, {hooks} hook{'s' * (hooks != 1)})"
        )
    if len(files) > 1:
        verdict = f"{len(files) - bad} of {len(files)} manifests are valid"
        (err if bad else out).print(verdict)
    sys.stdout.flush()
    return 1 if bad else 0


def _validate_json(files: list[Path]) -> int:
    from ..manifest import ManifestError, load_manifest

    reports = []
    for file in files:
        report: dict[str, object] = {"file": str(file), "ok": True, "errors": [], "warnings": []}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                manifest = load_manifest(file)
            except ManifestError as exc:
                report["ok"] = False
                report["errors"] = [
                    {"path": issue.path, "line": issue.line, "message": issue.message}
                    for issue in exc.errors
                ]
            else:
                report.update(
                    name=manifest.name,
                    triggers=len(manifest.triggers),
                    hooks=len(manifest.hooks),
                )
            report["warnings"] = [str(w.message) for w in caught]
        reports.append(report)
    valid = all(r["ok"] for r in reports)
    sys.stdout.write(json.dumps({"valid": valid, "files": reports}, indent=2) + "\n")
    sys.stdout.flush()
    return 0 if valid else 1
