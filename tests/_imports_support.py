"""Reading tether's own import graph from its source (for the layer tests)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import tether

SRC = Path(tether.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> set[str]:
    """Every tether module ``path`` imports, anywhere in it (TYPE_CHECKING and functions too)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # ``from tether.x import y`` imports tether.x.y when y is a submodule; when every
            # name is one, it reads nothing of tether.x itself (an import of a parent package).
            submodules = {
                f"{target}.{alias.name}"
                for alias in node.names
                if is_module(f"{target}.{alias.name}")
            }
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(target)
    return {m for m in found if m == "tether" or m.startswith("tether.")}


def is_module(name: str) -> bool:
    if not name.startswith("tether."):
        return False
    path = SRC.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def loaded_after(code: str, modules: list[str]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported once it ran ``code``."""
    check = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {modules!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], check=True, capture_output=True, text=True, timeout=60
    )
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded
