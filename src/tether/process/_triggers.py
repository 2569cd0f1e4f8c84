"""Trigger runners: cron schedules and file watches that turn the world into TriggerEvents.

Webhook triggers are served by the HTTP layer; event triggers by the runtime.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

from ..hooks._hook import CLOSING
from ._config import CronTrigger, FileWatchTrigger
from ._supervise import is_fatal

__all__ = ["CronRunner", "FileWatchRunner", "TriggerRunner"]

logger = logging.getLogger("tether.process")

Fire = Callable[[str, str, dict[str, Any]], Awaitable[Any]]


class TriggerRunner:
    """A background task that calls ``fire(trigger_id, trigger_type, payload)``."""

    def __init__(self, trigger_id: str) -> None:
        self.trigger_id = trigger_id
        self._task: asyncio.Task[None] | None = None
        #: What ended the runner, when it ended with an error (its trigger fires no more).
        self.error: BaseException | None = None

    def start(self, fire: Fire) -> None:
        self.error = None
        self._task = task = asyncio.get_running_loop().create_task(self._run(fire))
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A runner that ends with an error (a watched folder that does not exist, say) says so:
        its trigger fires no more, and that must not go unseen."""
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self.error = error
            logger.error(
                "trigger %s stopped and fires no more: %s: %s",
                self.trigger_id,
                type(error).__name__,
                error,
            )

    async def _run(self, fire: Fire) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel(CLOSING)  # a hook of its firing cut off so is at no fault
            await asyncio.gather(task, return_exceptions=True)


def _utc_now() -> datetime:
    return datetime.now(UTC)


class CronRunner(TriggerRunner):
    """Fires at each time of the schedule. ``clock`` (default: the UTC wall clock) is what
    "now" means to the schedule; the waits between firings are real seconds."""

    def __init__(
        self, trigger_id: str, config: CronTrigger, *, clock: Callable[[], datetime] = _utc_now
    ) -> None:
        super().__init__(trigger_id)
        self.config = config
        self.clock = clock

    async def _run(self, fire: Fire) -> None:
        from croniter import CroniterError, croniter

        schedule = croniter(self.config.cron_expression, self.clock())
        while True:
            try:  # CronTrigger refuses an expression with no date; this one ran out of dates
                due: datetime = schedule.get_next(datetime)
            except CroniterError as exc:
                logger.error("cron trigger %s stops: no next date (%s)", self.trigger_id, exc)
                return
            delay = (due - self.clock()).total_seconds()
            if delay > 0:
                await asyncio.sleep(delay)
            payload = dict(self.config.payload)
            payload["scheduled_at"] = due.isoformat()
            try:
                await fire(self.trigger_id, "cron", payload)
            except BaseException as exc:  # a hook's own BaseException too: keep firing
                if is_fatal(exc):
                    raise
                logger.exception("cron trigger %s could not fire", self.trigger_id)


_CHANGE_NAMES = {1: "added", 2: "modified", 3: "deleted"}


class FileWatchRunner(TriggerRunner):
    """Watches a folder with watchfiles; each matching change becomes one event."""

    def __init__(
        self,
        trigger_id: str,
        config: FileWatchTrigger,
        on_change: Callable[[str, dict[str, Any]], Awaitable[Any]],
    ) -> None:
        super().__init__(trigger_id)
        self.config = config
        self.on_change = on_change
        self.ready = asyncio.Event()

    def matches(self, path: str) -> bool:
        root = self.config.watch_path
        rel = os.path.relpath(path, root)
        name = os.path.basename(path)
        return any(fnmatchcase(name, p) or fnmatchcase(rel, p) for p in self.config.patterns)

    async def _run(self, fire: Fire) -> None:
        from watchfiles import awatch

        stop = asyncio.Event()
        try:
            watcher = awatch(
                self.config.watch_path,
                stop_event=stop,
                recursive=self.config.recursive,
                debounce=max(self.config.debounce_ms, 1),
                step=50,
                watch_filter=lambda _change, path: self.matches(path),
                yield_on_timeout=True,
                rust_timeout=100,
            )
            self.ready.set()
            async for changes in watcher:
                for change, path in sorted(changes, key=lambda c: c[1]):
                    payload = {"path": path, "event_type": _CHANGE_NAMES.get(int(change), "?")}
                    try:
                        await self.on_change(self.trigger_id, payload)
                    except BaseException as exc:  # a hook's own BaseException too: keep watching
                        if is_fatal(exc):
                            raise
                        logger.exception("file watch %s could not fire", self.trigger_id)
        finally:
            stop.set()
            self.ready.set()
