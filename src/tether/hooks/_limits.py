"""The bounds every hook kind shares, checked in one place: a timeout and an output limit.

A hook declared in data (a HookConfig) and one built in code (``register(timeout=...)``,
ShellHook, HttpHook, a plugin's options) refuse the same values with the same message.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_OUTPUT_BYTES",
    "MAX_OUTPUT_LIMIT",
    "MAX_TIMEOUT",
    "OUTPUT_ALLOWED",
    "TIMEOUT_ALLOWED",
    "check_output_limit",
    "check_timeout",
]

#: The longest a hook may run, in seconds.
MAX_TIMEOUT: Final = 3600
#: The most output (a program's stdout, an HTTP answer body) a hook may be allowed to give.
MAX_OUTPUT_LIMIT: Final = 10 * 1024 * 1024
#: The output limit of a hook that sets none.
DEFAULT_OUTPUT_BYTES: Final = 65536

#: What a timeout takes, and what an output limit takes (for error messages).
TIMEOUT_ALLOWED: Final = f"a number of seconds, > 0 and at most {MAX_TIMEOUT:g}"
OUTPUT_ALLOWED: Final = f"an int of bytes, between 1 and {MAX_OUTPUT_LIMIT} (10 MiB)"


def check_timeout(timeout: object, what: str = "timeout") -> float:
    """``timeout`` as a float: a number (not a bool) > 0 and at most MAX_TIMEOUT; TypeError
    for another type, ValueError for a number out of range."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"{what} must be {TIMEOUT_ALLOWED}, got {timeout!r}")
    if not 0 < timeout <= MAX_TIMEOUT:
        raise ValueError(f"{what} must be > 0 and at most {MAX_TIMEOUT:g} seconds, got {timeout!r}")
    return float(timeout)


def check_output_limit(limit: object) -> int:
    """``limit`` as an int of bytes between 1 and MAX_OUTPUT_LIMIT (not a bool)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_OUTPUT_LIMIT:
        raise ValueError(
            f"max_output_bytes must be between 1 and {MAX_OUTPUT_LIMIT} (10 MiB), got {limit!r}"
        )
    return limit
