"""The consoles the commands print to: a terminal's width, or unbounded when piped.

Piped into a file or another program, a table keeps every column whole (no ellipsis, no
wrapping at 80 columns): plain columns a script can split on runs of spaces.
"""

from __future__ import annotations

import sys
from typing import Final

from rich.console import Console

__all__ = ["console"]

#: The width of a console that prints to no terminal: wide enough for any row.
UNBOUNDED: Final = 1_000_000


def console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else UNBOUNDED
    return Console(stderr=stderr, soft_wrap=True, highlight=False, width=width)
