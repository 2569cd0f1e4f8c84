"""Where ``tether serve`` takes its API token from, so that no secret sits on a command line.

``TETHER_API_TOKEN`` (the environment is private to the process and its user) or
``--token-file PATH`` (the first line of a file). ``--token VALUE`` still works but warns: every
user of the machine sees a process's arguments (``ps``, ``/proc/<pid>/cmdline``).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Final

import click

from ..errors import TetherError

__all__ = ["MAX_TOKEN_FILE_BYTES", "TokenFileError", "serve_token"]

#: A token file holds one token; a larger one is surely the wrong file.
MAX_TOKEN_FILE_BYTES: Final = 64 * 1024

ARGV_WARNING: Final = (
    "warning: --token shows in `ps` to every user of this machine; give the token in "
    "TETHER_API_TOKEN or --token-file instead\n"
)


class TokenFileError(TetherError, click.UsageError):
    """The token file cannot be used (missing, not a regular file, empty, or too large)."""


def serve_token(token: str | None, source: object, token_file: Path | None) -> str | None:
    """The token ``tether serve`` runs with; warns on stderr if it came from the command line.

    ``source`` is click's ParameterSource of ``token`` (typer may ship its own copy of click,
    so it is compared by name).
    """
    on_command_line = token is not None and getattr(source, "name", None) == "COMMANDLINE"
    if token_file is not None:
        if on_command_line:
            raise click.UsageError("give --token or --token-file, not both")
        return read_token_file(token_file)
    if on_command_line:
        sys.stderr.write(ARGV_WARNING)
    return token


def read_token_file(path: Path) -> str:
    """The first line of ``path``, stripped; TokenFileError naming the file if unusable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError as exc:
        raise TokenFileError(f"--token-file {path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise TokenFileError(f"--token-file {path}: not a regular file")
    with os.fdopen(fd, "rb") as stream:
        data = stream.read(MAX_TOKEN_FILE_BYTES + 1)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        raise TokenFileError(
            f"--token-file {path}: more than {MAX_TOKEN_FILE_BYTES} bytes; a token file holds "
            "one token"
        )
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise TokenFileError(f"--token-file {path}: not UTF-8 text") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise TokenFileError(
            f"--token-file {path}: the file is empty; put the token on its first line"
        )
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        sys.stderr.write(
            f"warning: --token-file {path} can be read by other users (mode "
            f"{stat.S_IMODE(info.st_mode):o}); chmod 600 it\n"
        )
    return token
