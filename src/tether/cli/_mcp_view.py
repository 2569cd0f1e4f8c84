"""MCP servers in the output of ``tether run`` and ``tether serve``: each server's state once
its process has started, and, without ``--log-level``, a line whenever one is lost or cannot
connect (its tools are not offered meanwhile), so a failing server never goes unseen."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from ..process import AgentProcess

__all__ = ["describe_mcp", "mcp_warnings"]

#: What the MCP links' warnings start with (process/_mcp_link.py).
_MCP_PREFIXES = ("MCP server ", "process ")
_LOGGER = "tether.process"


def describe_mcp(console: Console, process: AgentProcess) -> None:
    """A line per MCP server of ``process``: connected with its tools, or why it is not."""
    for name, status in process.status().get("mcp_servers", {}).items():
        who = f"{escape(process.name)}/{escape(name)}"
        if status["state"] == "connected":
            console.print(f"  mcp      {who}: connected, {status['tools']} tool(s)")
            continue
        error = status.get("last_error") or "no connection yet"
        console.print(
            f"  mcp      {who}: [red]{escape(str(status['state']))}[/] ({escape(str(error))}); "
            "its tools are not offered until it connects (retried in the background)"
        )


class _McpLines(logging.Handler):
    def __init__(self, console: Console, redact: Callable[[str], str]) -> None:
        super().__init__(logging.WARNING)
        self.console = console
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return message.startswith(_MCP_PREFIXES) and "MCP" in message

    def emit(self, record: logging.LogRecord) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        millis = int(record.msecs)
        text = escape(self.redact(record.getMessage()))
        self.console.print(f"{stamp}.{millis:03d} [yellow]mcp[/]                 {text}")


@contextlib.contextmanager
def mcp_warnings(console: Console, redact: Callable[[str], str]) -> Iterator[None]:
    """Print the MCP links' warnings (a server lost, reconnecting) as live lines."""
    handler = _McpLines(console, redact)
    logger = logging.getLogger(_LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
