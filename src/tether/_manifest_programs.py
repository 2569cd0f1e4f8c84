"""Whether the programs a manifest names can run on this host: hook commands and MCP servers.

``tether validate`` asks (``load_manifest(..., check_programs=True)``), so that a missing or
non-executable hook program is found before a run, where a hook failing open would let a
broken policy pass. It reads the resolved manifest data, not the validated model, so these
problems are reported with the others, whatever else is wrong.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

__all__ = ["program_problems"]

Loc = tuple[str | int, ...]

#: Programs that run a script named by their first argument that is not an option.
_INTERPRETER: Final = re.compile(
    r"(python|pypy|pythonw)[0-9.]*|sh|bash|zsh|dash|node|deno|bun|ruby|perl|php|uv"
)
#: Options after which the next word is code or a module, not a script file.
_NOT_A_SCRIPT: Final = frozenset({"-c", "-m", "-e", "--eval", "-E", "run", "eval"})
_SCRIPT_SUFFIX: Final = re.compile(r"\.(py|pyw|sh|bash|js|mjs|cjs|ts|rb|pl|php)$")


def program_problems(data: Any, base_dir: Path | None) -> list[tuple[Loc, str]]:
    """Each hook ``command`` and stdio MCP server ``command`` that cannot run: a program not
    found (on PATH, or at its path from the hook's cwd), not executable, or a script an
    interpreter is given that does not exist."""
    if not isinstance(data, dict):
        return []
    problems: list[tuple[Loc, str]] = []
    for key in ("hooks", "mcp_servers"):
        entries = data.get(key)
        if not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or entry.get("command") is None:
                continue
            argv = _argv(entry.get("command"), entry.get("args") if key == "mcp_servers" else [])
            if argv is None:
                continue
            cwd = _cwd(entry.get("cwd"), base_dir if key == "hooks" else None)
            problems += [((key, i, "command"), text) for text in _problems(argv, cwd)]
    return problems


def _argv(command: Any, args: Any) -> list[str] | None:
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError:
            return None  # the schema's checks say what is wrong with it
    elif isinstance(command, list) and all(isinstance(word, str) for word in command):
        argv = list(command)
    else:
        return None
    if isinstance(args, list):
        argv += [str(arg) for arg in args]
    return argv if argv and argv[0] else None


def _cwd(cwd: Any, base_dir: Path | None) -> Path:
    """Where the program starts: the entry's cwd (a relative one from the manifest's folder
    for a hook), else the current directory."""
    if not isinstance(cwd, str) or not cwd:
        return Path.cwd()
    path = Path(cwd)
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return path


def _problems(argv: list[str], cwd: Path) -> Iterator[str]:
    program = argv[0]
    if os.sep in program:
        path = Path(program) if os.path.isabs(program) else cwd / program
        if not path.is_file():
            yield f"program {program!r} not found{_from(program, cwd)}"
            return
        if not os.access(path, os.X_OK):
            yield (
                f"program {program!r} is not executable (chmod +x it, or name its interpreter "
                'first: ["${TETHER_PYTHON}", ...])'
            )
            return
    elif shutil.which(program) is None:
        yield f"program {program!r} not found on PATH"
        return
    script = _script(argv)
    if script is not None:
        path = Path(script) if os.path.isabs(script) else cwd / script
        if not path.is_file():
            yield f"script {script!r} that {Path(program).name} runs not found{_from(script, cwd)}"


def _script(argv: list[str]) -> str | None:
    """The script file an interpreter is given, if it is given one by path."""
    if not _INTERPRETER.fullmatch(Path(argv[0]).name):
        return None
    for word in argv[1:]:
        if word in _NOT_A_SCRIPT:
            return None
        if word.startswith("-"):
            continue
        return word if (os.sep in word or _SCRIPT_SUFFIX.search(word)) else None
    return None


def _from(path: str, cwd: Path) -> str:
    return "" if os.path.isabs(path) else f" (from {cwd})"
