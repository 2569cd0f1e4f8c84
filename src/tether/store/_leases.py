"""The process names a host holds on a journal file: one lock file per journal file, and in
it one byte per name.

A process's recovery takes every unfinished row of its name, so one live process of a name
uses a file at a time (see Journal.claim). Its lease is an exclusive POSIX record lock on one
byte of ``<file>.lock``, at an offset given by a hash of the name: the OS drops it when the
host dies (a SIGKILL too), and every name a host holds on the file shares one descriptor. A
record lock never conflicts with another of the same host, so the names held here are also
kept in memory (another object of a name here is refused from that).

Byte 0 guards the file's removal: a host holding names on the file holds it shared. The host
giving back its last name tries to take it exclusively: it gets it only when no other host
holds a name there, and then removes the file before it closes it. A host that opened the
file meanwhile finds, once it holds the guard, that the path no longer names the file it
opened, and opens the path anew.

The kernel keeps a file's record locks in one list, which taking or giving back a lock walks:
a name costs more the more names the host holds on the file (see docs/benchmarks.md).

Two names whose hashes meet (one chance in about 2**62 for a pair) share a byte: across hosts
the second is refused as if its name were held; within a host both are held, and the byte
is kept until both are given back.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections import Counter

try:
    import fcntl
except ImportError:  # Windows: names are exclusive within the host only
    fcntl = None  # type: ignore[assignment]

__all__ = ["claim", "lock_file", "release"]

_GUARD = 0
_NAME_BYTES = 2**62


class _Held:
    """One lock file this host holds names on: its descriptor (None without fcntl), the
    names, and how many of them hold each byte."""

    __slots__ = ("bytes", "fd", "names")

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.names: set[str] = set()
        self.bytes: Counter[int] = Counter()


_held: dict[str, _Held] = {}
#: Reentrant: a Journal collected while another claim holds it gives its name back through
#: its finalizer on the same thread.
_lock = threading.RLock()


def lock_file(path: str) -> str:
    """The lock file of the journal file at the resolved path ``path``."""
    return f"{path}.lock"


def claim(path: str, name: str) -> bool:
    """Hold ``name`` on the journal file at the resolved path ``path``: False while another
    live process holds it (another host, or another object here)."""
    key = lock_file(path)
    offset = _byte(name)
    with _lock:
        held = _held.get(key)
        if held is not None and name in held.names:
            return False
        if held is None:
            held = _held[key] = _open(key)
        if held.fd is not None and not held.bytes[offset]:
            try:
                fcntl.lockf(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
            except OSError:  # EAGAIN or EACCES: another host holds the name
                if not held.names:
                    del _held[key]
                    _close(key, held)
                return False
        held.names.add(name)
        held.bytes[offset] += 1
        return True


def release(path: str, name: str) -> None:
    """Give ``name`` on ``path`` back; the last name given back closes the lock file, and
    removes it unless another host holds a name there."""
    key = lock_file(path)
    offset = _byte(name)
    with _lock:
        held = _held.get(key)
        if held is None or name not in held.names:
            return
        held.names.discard(name)
        held.bytes[offset] -= 1
        if held.names:
            if not held.bytes[offset]:
                del held.bytes[offset]
                if held.fd is not None:
                    fcntl.lockf(held.fd, fcntl.LOCK_UN, 1, offset)
            return
        del _held[key]
        _close(key, held)


def _byte(name: str) -> int:
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return 1 + int.from_bytes(digest, "big") % _NAME_BYTES


def _open(key: str) -> _Held:
    """The lock file at ``key``, its guard held shared (waiting while another host removes
    it: the time of an unlink)."""
    if fcntl is None:
        return _Held(None)
    while True:
        fd = os.open(key, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH, 1, _GUARD)
            if _names_file(fd, key):
                return _Held(fd)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed (or replaced) since it was opened: open the path anew


def _names_file(fd: int, key: str) -> bool:
    """Whether the path ``key`` still names the file open as ``fd``."""
    try:
        found = os.stat(key)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)


def _close(key: str, held: _Held) -> None:
    if held.fd is None:
        return
    try:
        fcntl.lockf(held.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _GUARD)
    except OSError:
        pass  # another host holds names on the file: it stays
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(key)
    finally:
        os.close(held.fd)  # this host's locks on the file go with it
