"""``tether validate FILE...``: every problem of every file, each with its path and line."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape

from ._console import console

__all__ = ["validate_files"]


def validate_files(
    files: list[Path],
    *,
    as_json: bool = False,
    runtime_hooks: Sequence[str] = (),
    require_env: bool = False,
) -> int:
    """Check each file; return 0 when all are valid, 1 otherwise.

    A hook's before/after must name another hook of the manifest for that event, or one of
    ``runtime_hooks`` (hooks the runtime that runs it shares); a cycle is always a problem.
    An unset ``${VAR}`` is a warning unless ``require_env``.

    ``as_json``: one JSON object on stdout, ``{"valid": bool, "files": [{"file", "ok",
    "name", "triggers", "hooks", "errors": [{"path", "line", "message"}], "warnings"}]}``.
    """
    from ..manifest import ManifestError

    if as_json:
        return _validate_json(files, runtime_hooks, require_env)
    out = console()
    err = console(stderr=True)
    bad = 0
    for file in files:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                manifest = _load(file, runtime_hooks, require_env)
            except ManifestError as exc:
                bad += 1
                for issue in exc.errors:
                    err.print(f"[red]error[/]: {escape(issue.format(str(file)))}")
                if any(_UNKNOWN_HOOK in issue.message for issue in exc.errors):
                    err.print(f"[dim]hint[/]: {escape(_RUNTIME_HOOK_HINT)}")
                continue
            finally:
                for warning in caught:
                    err.print(f"[yellow]warning[/]: {escape(str(warning.message))}")
        loaded, problems, skipped = _loaded(manifest)
        for skip in skipped:
            err.print(f"[yellow]warning[/]: {escape(skip)}")
        if problems:
            bad += 1
            for problem in problems:
                err.print(f"[red]error[/]: {escape(problem.format(str(file)))}")
            continue
        triggers = len(manifest.triggers)
        hooks = len(manifest.hooks)
        out.print(
            f"[green]ok[/]     {escape(str(file))} ([bold]{escape(manifest.name)}[/]: "
            f"{triggers} trigger{'s' * (triggers != 1)}, {hooks} hook{'s' * (hooks != 1)}"
            f"{_more(manifest.tools, 'tool')}{_more(manifest.mcp_servers, 'MCP server')}"
            f"{_more(loaded, 'Claude Code hook')})"
        )
        for line in loaded:
            out.print(f"         {escape(line)}")
    if len(files) > 1:
        verdict = f"{len(files) - bad} of {len(files)} manifests are valid"
        (err if bad else out).print(verdict)
    sys.stdout.flush()
    return 1 if bad else 0


#: How a problem says a before/after name matches no hook (hooks/_order.py), and the hint then.
_UNKNOWN_HOOK = "which no hook of"
_RUNTIME_HOOK_HINT = (
    "a hook the runtime that runs the manifest shares with it (AgentRuntime(hooks=...)) "
    "counts when named: tether validate --runtime-hook NAME"
)


def _load(file: Path, runtime_hooks: Sequence[str], require_env: bool) -> Any:
    from ..manifest import load_manifest

    return load_manifest(
        file, hook_names=runtime_hooks, check_programs=True, unset_env_ok=not require_env
    )


def _more(items: list[Any], what: str) -> str:
    return f", {len(items)} {what}{'s' * (len(items) != 1)}" if items else ""


def _loaded(manifest: Any) -> tuple[list[str], list[Any], list[str]]:
    """What the manifest's tools and Claude Code hook files load: a line per Claude Code
    hook, a problem per tool that cannot be imported, and the loader's warnings (what the
    Claude Code files hold that tether skipped)."""
    from ..hooks import TETHER_TO_CLAUDE, HookEvent
    from ..manifest import load_claude_code, manifest_tool_issues

    problems = manifest_tool_issues(manifest)
    lines: list[str] = []
    skipped: list[str] = []
    for i, path in enumerate(manifest.claude_code_hooks):
        found = load_claude_code(path)  # (load_manifest has read each file already)
        skipped += [f"claude_code_hooks[{i}]: {w}" for w in found.warnings]
        for hook in found:
            claude = hook.claude_event or TETHER_TO_CLAUDE[HookEvent(hook.event)]
            matcher = f" matcher {hook.matcher}" if hook.matcher else ""
            command = getattr(hook, "command", None)
            command = " ".join(command) if isinstance(command, list) else command
            for other in hook.claude_origin.get("parallel", ()):  # a group run in parallel
                command = f"{command} & {other['command']}"
            lines.append(f"claude_code_hooks[{i}]: {claude} -> {hook.event}{matcher}: {command}")
    return lines, problems, skipped


def _validate_json(files: list[Path], runtime_hooks: Sequence[str], require_env: bool) -> int:
    from ..manifest import ManifestError

    reports = []
    for file in files:
        report: dict[str, Any] = {"file": str(file), "ok": True, "errors": [], "warnings": []}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                manifest = _load(file, runtime_hooks, require_env)
            except ManifestError as exc:
                report["ok"] = False
                report["errors"] = [
                    {"path": issue.path, "line": issue.line, "message": issue.message}
                    for issue in exc.errors
                ]
            else:
                loaded, problems, skipped = _loaded(manifest)
                report["skipped"] = skipped
                if problems:
                    report["ok"] = False
                    report["errors"] = [
                        {"path": problem.path, "line": problem.line, "message": problem.message}
                        for problem in problems
                    ]
                report.update(
                    name=manifest.name,
                    triggers=len(manifest.triggers),
                    hooks=len(manifest.hooks),
                    claude_code_hooks=loaded,
                )
            report["warnings"] = [str(w.message) for w in caught]
        reports.append(report)
    valid = all(r["ok"] for r in reports)
    sys.stdout.write(json.dumps({"valid": valid, "files": reports}, indent=2) + "\n")
    sys.stdout.flush()
    return 0 if valid else 1
