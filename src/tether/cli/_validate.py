"""``tether validate FILE...``: every problem of every file, each with its path and line."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

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
        loaded, problems = _loaded(manifest)
        if problems:
            bad += 1
            for problem in problems:
                err.print(f"[red]error[/]: {escape(str(file))}: {escape(problem)}")
            continue
        triggers = len(manifest.triggers)
        hooks = len(manifest.hooks)
        out.print(
            f"[green]ok[/]     {escape(str(file))} ([bold]{escape(manifest.name)}[/]: "
            f"{triggers} trigger{'s' * (triggers != 1)}, {hooks} hook{'s' * (hooks != 1)}"
            f"{_more(manifest.tools, 'tool')}{_more(loaded, 'Claude Code hook')})"
        )
        for line in loaded:
            out.print(f"         {escape(line)}")
    if len(files) > 1:
        verdict = f"{len(files) - bad} of {len(files)} manifests are valid"
        (err if bad else out).print(verdict)
    sys.stdout.flush()
    return 1 if bad else 0


def _more(items: list[Any], what: str) -> str:
    return f", {len(items)} {what}{'s' * (len(items) != 1)}" if items else ""


def _loaded(manifest: Any) -> tuple[list[str], list[str]]:
    """What the manifest's tools and Claude Code hook files load: a line per Claude Code
    hook, and a problem per tool that cannot be imported."""
    from ..agent._tools import import_tool
    from ..hooks import HookEvent
    from ..hooks._claude_code import TETHER_TO_CLAUDE
    from ..hooks._claude_settings import claude_code_hooks

    problems: list[str] = []
    for i, path in enumerate(manifest.tools):
        try:
            import_tool(path)
        except ValueError as exc:
            problems.append(f"tools[{i}]: {exc}")
    lines: list[str] = []
    for i, path in enumerate(manifest.claude_code_hooks):
        for hook in claude_code_hooks(path):  # (load_manifest has read each file already)
            claude = hook._claude_event or TETHER_TO_CLAUDE[HookEvent(hook.event)]
            matcher = f" matcher {hook.matcher}" if hook.matcher else ""
            command = " ".join(hook.command) if isinstance(hook.command, list) else hook.command
            lines.append(f"claude_code_hooks[{i}]: {claude} -> {hook.event}{matcher}: {command}")
    return lines, problems
