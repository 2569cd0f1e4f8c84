"""Network helpers for tests: no test binds a fixed port."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
