"""The scoped object every hook receives."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, Final

from ._events import HookEvent, parse_event

__all__ = ["DRY_RUN_KEY", "HookContext"]

#: The ``metadata`` key that is True when the dispatch is a dry run: a hook should then act on
#: nothing outside the data (command hooks see it in their envelope's ``metadata`` too).
DRY_RUN_KEY: Final = "dry_run"


class HookContext:
    """What a hook may read and change at one dispatch.

    ``data`` is the dispatch's own copy of the payload: every hook of one dispatch sees the same
    dict, so a later hook sees what an earlier one changed; the caller's dict is never touched.
    """

    __slots__ = (
        "_dry_run",
        "_epoch",
        "_notices",
        "_timestamp",
        "data",
        "event",
        "metadata",
        "process_id",
    )

    def __init__(
        self,
        event: HookEvent | str,
        process_id: str = "",
        data: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        timestamp: datetime | None = None,
    ) -> None:
        self.event: HookEvent = event if type(event) is HookEvent else parse_event(event)
        self.process_id = process_id
        self.data: dict[str, Any] = {} if data is None else data
        self.metadata: dict[str, Any] = {} if metadata is None else metadata
        # The clock is read now; the datetime is built only if a hook asks for it (hot path).
        self._timestamp = timestamp
        self._epoch = time.time() if timestamp is None else 0.0
        self._dry_run = False
        self._notices: list[str] | None = None

    @property
    def dry_run(self) -> bool:
        """True when this dispatch is a dry run (HookManager.dispatch(dry_run=True)): act on
        nothing outside the data. Read-only, unlike ``metadata[DRY_RUN_KEY]`` (which says the
        same to command hooks, in their envelope), so no hook can turn it off for later ones."""
        return self._dry_run

    @property
    def timestamp(self) -> datetime:
        """UTC time of the dispatch."""
        if self._timestamp is None:
            self._timestamp = datetime.fromtimestamp(self._epoch, UTC)
        return self._timestamp

    @timestamp.setter
    def timestamp(self, value: datetime) -> None:
        self._timestamp = value

    def get(self, key: str, default: Any = None) -> Any:
        """Shorthand for ``ctx.data.get(key, default)``."""
        return self.data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Shorthand for ``ctx.data[key] = value``."""
        self.data[key] = value

    def notify(self, text: str) -> None:
        """Tell the operator ``text``: it is kept on this hook's run (``HookRun.notice``), which
        the run history, the CLI's live view and the dashboard's feed show. It is not data: no
        later hook, and not the model, sees it."""
        if text:
            if self._notices is None:
                self._notices = []
            self._notices.append(str(text))

    @property
    def notice(self) -> str | None:
        """What the hook told the operator so far (its ``notify`` texts, one a line)."""
        return None if self._notices is None else "\n".join(self._notices)

    def told(self) -> str | None:
        """``notice``, taken (the dispatch loop, after each hook: the next one starts with
        none)."""
        if self._notices is None:
            return None
        notice, self._notices = self.notice, None
        return notice

    def replace(self, data: dict[str, Any]) -> None:
        """Replace the whole data (what a command hook's ``data`` answer does)."""
        self.data = data

    def envelope(self) -> dict[str, Any]:
        """The JSON envelope a command hook receives on stdin.

        In a dry run its ``metadata`` says so whatever an earlier hook did to ``ctx.metadata``.
        """
        metadata = self.metadata
        if self._dry_run:
            metadata = {**metadata, DRY_RUN_KEY: True}
        return {
            "event": self.event.value,
            "process_id": self.process_id,
            "timestamp": self.timestamp.isoformat(),
            "data": self.data,
            "metadata": metadata,
        }

    def __repr__(self) -> str:
        return (
            f"HookContext(event={self.event.value!r}, process_id={self.process_id!r}, "
            f"data={self.data!r})"
        )


HookContext.__module__ = "tether"
