"""The tools a manifest names by import path, imported from the manifest's folder too.

A manifest read from a file keeps where it came from (its folder, its file name, the line of
each tool); its tools are then importable from that folder, as an eval pack's are from its
own, and a tool that cannot be imported is a ManifestError naming the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._manifest_errors import ManifestError, ManifestIssue

if TYPE_CHECKING:
    from .agent import Tool

__all__ = ["Origin", "import_tools", "tool_issues"]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a manifest was read from: its folder, its file, the line of each tool."""

    folder: Path
    source: str | None
    tool_lines: tuple[int | None, ...]

    def line(self, index: int) -> int | None:
        return self.tool_lines[index] if index < len(self.tool_lines) else None


def _imported(paths: list[str], origin: Origin) -> tuple[list[Tool], list[ManifestIssue]]:
    from .agent import import_tool

    tools: list[Tool] = []
    issues: list[ManifestIssue] = []
    for index, path in enumerate(paths):
        try:
            tools.append(import_tool(path, origin.folder))
        except ValueError as exc:
            issues.append(ManifestIssue(f"tools[{index}]", origin.line(index), str(exc)))
    return tools, issues


def import_tools(paths: list[str], origin: Origin) -> list[Tool]:
    """The tools ``paths`` name, imported (their manifest's folder searched first); a
    ManifestError listing each one that cannot be, with its line."""
    tools, issues = _imported(paths, origin)
    if issues:
        raise ManifestError(issues, origin.source)
    return tools


def tool_issues(paths: list[str], origin: Origin) -> list[ManifestIssue]:
    """Each of ``paths`` that cannot be imported, with its line (``tether validate``)."""
    return _imported(paths, origin)[1]
