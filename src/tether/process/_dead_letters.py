"""Dead letters: every event that cannot run is kept here with a reason, never dropped.

An entry is a dict (``event``, ``event_id``, ``reason``, ``error``, ``attempts``,
``timestamp``); with a journal it is written there too, so the next process over the same file
reloads it (see ``_recovery``). ``redeliver_dead_letters()`` injects entries again.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..store import Journal
    from ._event import TriggerEvent

__all__ = ["DeadLetters"]

logger = logging.getLogger("tether.process")


class DeadLetters:
    """The dead-letter part of AgentProcess."""

    if TYPE_CHECKING:
        redactor: Redactor
        dead_letters: list[dict[str, Any]]
        _journal: Journal | None

        async def inject(self, event: TriggerEvent) -> str: ...

    def _dead(self, event: TriggerEvent, reason: str, error: str | None, attempts: int) -> None:
        error = self.redactor.text(error) if error is not None else None
        self.dead_letters.append(
            {
                "event": event,
                "event_id": event.event_id,
                "reason": reason,
                "error": error,
                "attempts": attempts,
                "timestamp": datetime.now(UTC),
            }
        )
        logger.info("event %s dead-lettered: %s (%s)", event.event_id, reason, error)
        if self._journal is not None:
            payload = self.redactor.declared.value(event.to_dict())  # replayed: see Redactor
            self._journal.dead(payload, attempts, reason, error)

    async def redeliver_dead_letters(self, event_ids: list[str] | None = None) -> int:
        """Inject dead-lettered events again (all, or those named); return how many."""
        chosen = [
            d for d in self.dead_letters if event_ids is None or d["event"].event_id in event_ids
        ]
        self.dead_letters = [d for d in self.dead_letters if d not in chosen]
        if self._journal is not None:
            self._journal.forget_dead([d["event"].event_id for d in chosen])
        for entry in chosen:
            await self.inject(entry["event"])
        return len(chosen)

    def clear_dead_letters(self) -> int:
        """Forget every dead letter; return how many."""
        count = len(self.dead_letters)
        if self._journal is not None:
            self._journal.forget_dead([d["event"].event_id for d in self.dead_letters])
        self.dead_letters = []
        return count
