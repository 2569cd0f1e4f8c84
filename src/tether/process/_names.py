"""The names a process and an MCP server may take."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["NAME_RE", "validate_name"]

NAME_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def validate_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        shown = repr(name)
        if len(shown) > 80:  # an error quotes a line's worth of a bad name, not all of it
            shown = f"{shown[:70]}... ({len(name) if isinstance(name, str) else '?'} characters)"
        raise ValueError(
            f"process name {shown} is not allowed: use 1-64 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return name
