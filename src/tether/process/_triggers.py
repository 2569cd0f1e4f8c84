"""Trigger runners: cron schedules and file watches that turn the world into TriggerEvents.

Webhook triggers are served by the HTTP layer; event triggers by the runtime.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Final

from .._redact import redacted_trace
from ..hooks import CLOSING
from ._config import CronTrigger, FileWatchTrigger, split_zone
from ._errors import ProcessStateError
from ._supervise import describe, is_fatal

if TYPE_CHECKING:
    from .._redact import Redactor
    from ._config import TriggerConfig
    from ._intake import Intake

__all__ = ["CronRunner", "FileWatchRunner", "TriggerRunner", "TriggerRunners"]

logger = logging.getLogger("tether.process")

Fire = Callable[[str, str, dict[str, Any]], Awaitable[Any]]
Redact = Callable[[str], str]


def _as_given(text: str) -> str:
    return text


class TriggerRunner:
    """A background task that calls ``fire(trigger_id, trigger_type, payload)``.

    ``redact`` (the owning process's redactor) passes every error text the runner logs: what
    a firing raised may carry a secret of the process (a hook's error, its payload).
    """

    def __init__(self, trigger_id: str, *, redact: Redact = _as_given) -> None:
        self.trigger_id = trigger_id
        self.redact = redact
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
                "trigger %s stopped and fires no more: %s",
                self.trigger_id,
                self.redact(f"{type(error).__name__}: {error}"),
            )

    def _not_fired(self, what: str, exc: BaseException) -> None:
        """Log what a firing raised (the runner keeps going), redacted."""
        logger.error(
            "%s %s could not fire\n%s", what, self.trigger_id, redacted_trace(exc, self.redact)
        )

    async def _run(self, fire: Fire) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel(CLOSING)  # a hook of its firing cut off so is at no fault
            await asyncio.gather(task, return_exceptions=True)


#: The longest wait of a cron runner between two looks at its clock (seconds).
CRON_RECHECK: Final = 10.0


def _utc_now() -> datetime:
    return datetime.now(UTC)


class CronRunner(TriggerRunner):
    """Fires at each time of the schedule, read in its time zone (see CronTrigger). ``clock``
    (default: the UTC wall clock) is what "now" means to the schedule; the runner looks at it
    again at least every ``recheck`` seconds of its waits, so a clock that jumps (a host that
    slept, a clock set) is followed.

    Times that pass while the runner cannot fire (a firing whose hooks took longer than the
    interval, a host asleep) are not fired one by one: the runner fires once, for the latest
    of them, with ``missed`` (how many it left out) in the payload. Times that passed while the
    process was stopped are not fired. When a fall-back DST change repeats a local time, an
    expression with a fixed hour fires once at it; one firing every hour (hour ``*``) fires at
    both. A local time a spring-forward change skips fires at the first time after it.
    """

    def __init__(
        self,
        trigger_id: str,
        config: CronTrigger,
        *,
        clock: Callable[[], datetime] = _utc_now,
        recheck: float = CRON_RECHECK,
        redact: Redact = _as_given,
    ) -> None:
        super().__init__(trigger_id, redact=redact)
        self.config = config
        self.clock = clock
        self.recheck = recheck

    def _next(self, schedule: Any) -> datetime | None:
        from croniter import CroniterError

        try:  # CronTrigger refuses an expression with no date; this one ran out of dates
            due: datetime = schedule.get_next(datetime)
        except CroniterError as exc:
            logger.error("cron trigger %s stops: no next date (%s)", self.trigger_id, exc)
            self.error = exc
            return None
        return due

    def _repeated(self, due: datetime, last: datetime | None, schedule: Any) -> bool:
        """Whether ``due`` is a local time a fall-back change repeats, fired once already by a
        schedule of fixed hours (one of every hour, ``*``, fires in both)."""
        if last is None or due.replace(tzinfo=None) != last.replace(tzinfo=None):
            return False
        hours: list[Any] = schedule.expanded[1]
        return hours != ["*"]

    async def _run(self, fire: Fire) -> None:
        from zoneinfo import ZoneInfo

        from croniter import croniter

        zone, expression = split_zone(self.config.cron_expression)
        schedule = croniter(expression, self.clock().astimezone(ZoneInfo(zone)))
        due = self._next(schedule)
        last: datetime | None = None
        while due is not None:
            while (delay := (due - self.clock()).total_seconds()) > 0:
                await asyncio.sleep(min(delay, self.recheck))
            await asyncio.sleep(0)  # a runner behind its clock still lets the loop run
            now = self.clock()
            upcoming = self._next(schedule)
            missed = 0
            while upcoming is not None and upcoming <= now:  # passed meanwhile: the latest
                missed += 1
                due, upcoming = upcoming, self._next(schedule)
            if missed:
                logger.warning(
                    "cron trigger %s fires late, once for %d scheduled times (the latest: %s)",
                    self.trigger_id,
                    missed + 1,
                    due.isoformat(),
                )
            if not self._repeated(due, last, schedule):
                last = due
                await self._fire(fire, due, missed)
            due = upcoming

    async def _fire(self, fire: Fire, due: datetime, missed: int) -> None:
        payload = copy.deepcopy(self.config.payload)  # the trigger's own is never handed out
        payload["scheduled_at"] = due.isoformat()
        if missed:
            payload["missed"] = missed
        try:
            await fire(self.trigger_id, "cron", payload)
        except BaseException as exc:  # a hook's own BaseException too: keep firing
            if is_fatal(exc):
                raise
            self._not_fired("cron trigger", exc)


_CHANGE_NAMES = {1: "added", 2: "modified", 3: "deleted"}

#: Seconds between two looks for a watched path that does not exist.
PATH_POLL: Final = 0.2
#: A watched path found replaced this soon after a batch that reported it (an editor saving a
#: watched file by renaming a new one over it) is not reported again as ``added``.
REPLACED_WITHIN: Final = 1.0


class FileWatchRunner(TriggerRunner):
    """Watches a folder (or a file) with watchfiles; each matching change becomes one event.

    A ``watch_path`` that does not exist (yet, or any more: a folder deleted, or replaced by
    a new one) is waited for, polled every PATH_POLL seconds: when it appears, every matching
    file already in it is reported ``added`` (it is new to the watch), then its changes are.
    """

    def __init__(
        self,
        trigger_id: str,
        config: FileWatchTrigger,
        on_change: Callable[[str, dict[str, Any]], Awaitable[Any]],
        *,
        redact: Redact = _as_given,
    ) -> None:
        super().__init__(trigger_id, redact=redact)
        self.config = config
        self.on_change = on_change
        #: Set once the watch is live (changes from then on are reported), or while the runner
        #: waits for its path to appear.
        self.ready = asyncio.Event()

    def matches(self, path: str) -> bool:
        root = self.config.watch_path
        rel = os.path.relpath(path, root)
        name = os.path.basename(path)
        return any(fnmatchcase(name, p) or fnmatchcase(rel, p) for p in self.config.patterns)

    def _present(self) -> list[str]:
        """The matching files under the watched path now (the path itself, if a file)."""
        root = os.path.abspath(self.config.watch_path)
        if os.path.isfile(root):
            return [root] if self.matches(root) else []
        found: list[str] = []
        for folder, dirs, files in os.walk(root):
            found += [p for p in (os.path.join(folder, f) for f in files) if self.matches(p)]
            if not self.config.recursive:
                dirs.clear()
        return sorted(found)

    def _net(self, changes: set[tuple[Any, str]], seen: os.stat_result) -> list[tuple[str, str]]:
        """One (path, change) per path of a batch, by path: what changed for it in the batch.

        watchfiles hands a batch as a set, so one path may come with several changes in no
        order (a new file written: added and modified; a file edited, then deleted: modified
        and deleted). Each path is reported once, as where it ended: ``deleted`` if it is gone,
        ``added`` if it is new, else ``modified`` (a file replaced by a new one, as an editor
        saves, was modified). Folders are not files: a folder's own changes are left out.
        """
        kinds: dict[str, set[str]] = {}
        for change, path in changes:
            kinds.setdefault(path, set()).add(_CHANGE_NAMES.get(int(change), "?"))
        root = os.path.abspath(self.config.watch_path) if stat.S_ISDIR(seen.st_mode) else None
        net: list[tuple[str, str]] = []
        for path, got in sorted(kinds.items()):
            if path == root or os.path.isdir(path):
                continue
            if "deleted" in got and not os.path.lexists(path):
                net.append((path, "deleted"))
            elif "added" in got and "deleted" not in got:
                net.append((path, "added"))
            else:
                net.append((path, "modified" if got - {"?"} else "?"))
        return net

    async def _report(self, change: str, path: str) -> None:
        try:
            await self.on_change(self.trigger_id, {"path": path, "event_type": change})
        except BaseException as exc:  # a hook's own BaseException too: keep watching
            if is_fatal(exc):
                raise
            self._not_fired("file watch", exc)

    async def _appeared(self) -> os.stat_result:
        """Wait until the watched path exists (saying so once); its stat."""
        said = False
        while True:
            try:
                return os.stat(self.config.watch_path)
            except FileNotFoundError:
                pass
            if not said:
                said = True
                logger.warning(
                    "file watch %s: %s does not exist; watching for it to appear",
                    self.trigger_id,
                    self.config.watch_path,
                )
                self.ready.set()
            await asyncio.sleep(PATH_POLL)

    def _same(self, seen: os.stat_result | None) -> bool:
        """Whether the watched path is still the one the watch was set on (``None``: whether
        it exists)."""
        try:
            now = os.stat(self.config.watch_path)
        except FileNotFoundError:
            return False
        return seen is None or (now.st_dev, now.st_ino) == (seen.st_dev, seen.st_ino)

    async def _run(self, fire: Fire) -> None:
        new = False  # whether the path was missing: then what it holds when it appears is new
        just: set[str] = set()
        while True:
            try:
                seen = os.stat(self.config.watch_path)
            except FileNotFoundError:
                seen = await self._appeared()
                new, just = True, set()  # gone, then back: all it holds now is new
            try:
                just = await self._watch(seen, new, just)
            except FileNotFoundError:  # gone between the look and the watch: wait for it
                if self._same(None):
                    raise
                just = set()
            new = True  # the path went away (or was replaced): wait for it, then report it

    async def _watch(self, seen: os.stat_result, new: bool, just: set[str]) -> set[str]:
        """Report changes until the watched path is gone or replaced; the paths the last
        batch reported, if it came right before (a replaced path's own change, which the new
        watch does not report again: ``just``)."""
        from watchfiles import awatch

        stop = asyncio.Event()
        first = True
        last: set[str] = set()
        last_at = 0.0
        loop = asyncio.get_running_loop()
        watcher = None
        try:
            watcher = awatch(
                self.config.watch_path,
                stop_event=stop,
                recursive=self.config.recursive,
                # debounce_ms is the quiet time that ends a batch; a stream of changes that
                # never goes quiet is still reported, at the longest wait below.
                debounce=max(4 * self.config.debounce_ms, 1600),
                step=max(self.config.debounce_ms, 10),
                watch_filter=lambda _change, path: self.matches(path),
                yield_on_timeout=True,
                rust_timeout=100,
            )
            async for changes in watcher:  # at least every 100 ms: the watch is live by now
                batch = self._net(changes, seen)
                if first:
                    first = False
                    self.ready.set()
                    if new:  # what was there before the watch began, reported once
                        listed = {path for path, _ in batch} | just
                        present = await asyncio.to_thread(self._present)
                        batch = [(p, "added") for p in present if p not in listed] + batch
                for path, change in batch:
                    await self._report(change, path)
                if batch:
                    last = {path for path, change in batch if change != "deleted"}
                    last_at = loop.time()
                if not self._same(seen):
                    return last if loop.time() - last_at < REPLACED_WITHIN else set()
        finally:
            stop.set()
            if watcher is not None:
                # Closed now, not when the garbage collector finds it: a watch cut off at a
                # report holds its inotify descriptors until then.
                await watcher.aclose()
        return set()  # (the watcher ends only when stopped)


class TriggerRunners:
    """The runners of one process's cron and file-watch triggers, by trigger id.

    What they see goes in through the process's ``intake`` (a file change through its
    file_changed hooks first). Webhook and event triggers have no runner: the HTTP layer and
    the runtime feed them.
    """

    def __init__(self, name: str, intake: Intake, redactor: Redactor) -> None:
        self.name = name
        self._intake = intake
        self._redactor = redactor
        #: The runners by trigger id (one per id, never two).
        self.runners: dict[str, TriggerRunner] = {}

    def start(self, trigger_id: str, trigger: TriggerConfig) -> None:
        """Start the runner of a cron or file-watch trigger; ProcessStateError when one of
        that id runs already."""
        if trigger_id in self.runners:
            raise ProcessStateError(f"trigger {trigger_id!r} of {self.name!r} already runs")
        runner: TriggerRunner
        if isinstance(trigger, CronTrigger):
            runner = CronRunner(trigger_id, trigger, redact=self._redactor.text)
        elif isinstance(trigger, FileWatchTrigger):
            runner = FileWatchRunner(
                trigger_id, trigger, self._intake.file_changed, redact=self._redactor.text
            )
        else:  # webhook and event triggers are fed from outside (HTTP layer, runtime)
            return
        self.runners[trigger_id] = runner
        runner.start(self._intake.inject_trigger)

    async def stop(self, trigger_id: str) -> None:
        """Stop the runner of ``trigger_id``, if it has one."""
        runner = self.runners.pop(trigger_id, None)
        if runner is not None:
            await runner.stop()

    async def stop_all(self) -> None:
        for runner in list(self.runners.values()):
            await runner.stop()
        self.runners.clear()

    def errors(self) -> dict[str, str]:
        """What ended each runner that ended with an error (redacted): its trigger fires no
        more until a restart."""
        return {
            trigger_id: self._redactor.text(describe(runner.error))
            for trigger_id, runner in self.runners.items()
            if runner.error is not None
        }
