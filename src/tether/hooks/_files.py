"""Reading a small file a user names (a manifest, a Claude Code hooks file): refused at once
unless it is a regular file of at most MAX_FILE_BYTES, so ``/dev/zero`` does not exhaust
memory, a FIFO without a writer does not hang, and a log named by mistake is not read whole.

It lives with the engine, the lowest layer that reads such a file; the manifest reads with it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

from ..errors import TetherError

__all__ = ["MAX_FILE_BYTES", "FileRefused", "read_small_file"]

#: The largest such file read (a manifest or a hooks file is a few kilobytes).
MAX_FILE_BYTES: Final = 1024 * 1024


class FileRefused(TetherError):
    """The path names something that cannot be such a file (a device, a FIFO, a huge file)."""


def read_small_file(file: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of ``file``, refused at once unless it is a regular file of at most 1 MiB.

    ``what`` names the kind of file in the message ("a manifest"). Raises FileRefused saying
    the file's type or size and the limit; an OSError as reading would (IsADirectoryError for
    a directory). The file is opened non-blocking, so a FIFO with no writer does not hang the
    open, and its type is read from the open descriptor, so it cannot be swapped between
    check and read.
    """
    fd = os.open(
        Path(file), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    )
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"not a regular file ({_file_kind(info.st_mode)})")
        if info.st_size > MAX_FILE_BYTES:
            raise FileRefused(
                f"the file is {info.st_size} bytes; {what} may have at most "
                f"{MAX_FILE_BYTES} bytes (1 MiB)"
            )
        os.set_blocking(fd, True)
        data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew while it was read
        raise FileRefused(
            f"the file has more than {MAX_FILE_BYTES} bytes (1 MiB), the most {what} may have"
        )
    return data


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a file"
