"""Journal writes of an accepted event's progress: a failed one never stops the process.

``inject`` journals an event ``queued`` before it queues it, and that write raises: an event
the journal cannot take is refused, and nothing of it is left queued. Every later write of
the event's progress (``running``, ``done``, a retry's ``queued``, ``dead``, an amended or
redelivered dead letter) goes through ``_journal_write``: when it fails (the file locked by
another program past its busy timeout, a full disk) a warning is logged, redacted, it is
counted in ``status()`` (``journal_errors``, and the last error as ``journal_error``), and the
process goes on with its events.

Delivery stays at-least-once: a row whose write failed still holds the event as queued or
running, so the next process over the file (see ``_recovery``) runs it again; none is lost.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec

from ._supervise import describe

if TYPE_CHECKING:
    from .._redact import Redactor

__all__ = ["JournalWrites"]

logger = logging.getLogger("tether.process")

_P = ParamSpec("_P")


class JournalWrites:
    """The journal-write part of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        redactor: Redactor

    def _init_journal_writes(self) -> None:
        #: Journal writes that failed since the process was created, and the last one's error.
        self.journal_errors = 0
        self.journal_error: str | None = None

    def _journal_write(
        self, about: str, write: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs
    ) -> None:
        """``write(*args, **kwargs)``, a journal write of the progress of ``about`` (an event
        id, or what the write is of); its ``sqlite3`` error is logged and counted, not
        raised (see the module docstring)."""
        try:
            write(*args, **kwargs)
        except sqlite3.Error as exc:
            self.journal_errors += 1
            self.journal_error = error = self.redactor.text(describe(exc))
            logger.warning(
                "%s",
                self.redactor.text(
                    f"process {self.name}: journal write {write.__name__} of {about} failed; "
                    f"the process goes on (a row left queued or running is run again after a "
                    f"restart): {error}"
                ),
            )
