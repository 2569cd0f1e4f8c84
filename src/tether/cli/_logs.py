"""Logs of ``tether run`` and ``tether serve``: ``--log-level`` and ``--log-format text|json``.

A JSON log is one object per line on stderr: ``time``, ``level``, ``logger``, ``message``,
``process``, ``event_id``, ``hook`` and ``trace_id`` (null when not known), and
``exception`` when there is one. Every text field goes through the runtime's redaction (the
secrets of every process), so a secret never reaches a log line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, Final

__all__ = ["LEVELS", "LOG_FORMATS", "LogSetup", "logging_to_stderr"]

LEVELS: Final = ("debug", "info", "warning", "error")
LOG_FORMATS: Final = ("text", "json")
#: The loggers a run or serve shows (tether's own, and its HTTP server's).
LOGGERS: Final = ("tether", "uvicorn", "watchfiles")


class LogSetup:
    """What the handlers need once the runtime exists: its ``redact``."""

    def __init__(self) -> None:
        self.redact: Callable[[str], str] = _same


def _same(text: str) -> str:
    return text


def _trace_id() -> str | None:
    """The trace id of the current span, when OpenTelemetry is in use (never imported here)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def _where() -> tuple[str | None, str | None]:
    from ..process import current_event_id, current_process

    return current_process(), current_event_id()


class JsonFormatter(logging.Formatter):
    def __init__(self, setup: LogSetup) -> None:
        super().__init__()
        self.setup = setup

    def format(self, record: logging.LogRecord) -> str:
        redact = self.setup.redact
        process, event_id = _where()
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
            "process": getattr(record, "process_name", None) or process,
            "event_id": getattr(record, "event_id", None) or event_id,
            "hook": getattr(record, "hook_id", None),
            "trace_id": _trace_id(),
        }
        if record.exc_info:
            line["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self, setup: LogSetup) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.setup = setup

    def format(self, record: logging.LogRecord) -> str:
        return self.setup.redact(super().format(record))


@contextlib.contextmanager
def logging_to_stderr(level: str, log_format: str) -> Iterator[LogSetup]:
    """Show tether's logs at ``level`` and above on stderr in ``log_format``; handlers and
    levels are put back when the command ends."""
    setup = LogSetup()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(setup) if log_format == "json" else TextFormatter(setup))
    number = getattr(logging, level.upper())
    previous: list[tuple[logging.Logger, int, bool]] = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        previous.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(number)
        logger.propagate = False  # one line per record, not one more from the root's handler
    try:
        yield setup
    finally:
        for logger, old_level, propagate in previous:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
            logger.propagate = propagate
