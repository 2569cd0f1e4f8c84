"""``tether validate FILE...``: every problem of every file, each with its path and line."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from rich.console import Console
from rich.markup import escape

__all__ = ["validate_files"]


def validate_files(files: list[Path]) -> int:
    """Check each file; return 0 when all are valid, 1 otherwise."""
    from ..manifest import ManifestError, load_manifest

    out = Console(soft_wrap=True, highlight=False)
    err = Console(stderr=True, soft_wrap=True, highlight=False)
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
