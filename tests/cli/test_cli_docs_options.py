"""Every option the README and the docs give a tether command is one that command has (issue
30: the docs named a `tether run --live` that did not exist)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

from tether.cli._app import app

ROOT = Path(__file__).resolve().parents[2]
#: ``tether <words>`` up to the end of the line or of the inline code span.
COMMAND = re.compile(r"\btether((?: [a-z][a-z-]*)+)([^`\n]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]+)")


def _command(words: list[str]) -> tuple[Any, int] | None:
    """The (sub)command the words name and how many words name it; None if not tether's.
    (typer may ship its own copy of click: its groups are told by their ``commands``.)"""
    command: Any = typer.main.get_command(app)
    used = 0
    for word in words:
        subcommands = getattr(command, "commands", {})
        if word not in subcommands:
            break
        command, used = subcommands[word], used + 1
    return (command, used) if used else None


def _options(command: Any) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}


def wrong_options(line: str) -> list[str]:
    """``tether <command> --option`` of a line whose command has no such option."""
    wrong = []
    for match in COMMAND.finditer(line):
        words = match.group(1).split()
        found = _command(words)
        if found is None:
            continue
        command, used = found
        rest = " ".join(words[used:]) + match.group(2)
        for option in OPTION.findall(rest.split(" # ")[0]):
            if option not in _options(command):
                wrong.append(f"tether {' '.join(words[:used])} {option}")
    return wrong


def test_every_option_the_docs_give_a_command_is_one_it_has() -> None:
    wrong = [
        f"{page.relative_to(ROOT)}:{n}: {problem}"
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for problem in wrong_options(line)
    ]
    assert wrong == []


def test_an_option_a_command_lacks_is_found_after_its_subcommand_and_its_arguments() -> None:
    line = "`tether run a.agent --live`, `tether hooks runs triage --last 3 --since 1h --tail`"
    assert wrong_options(line) == ["tether run --live", "tether hooks runs --tail"]
    assert wrong_options("tether validate x.agent   # or --nothing, in a comment") == []
