"""The live feed of hook runs (server-sent events) and the runs kept per event (timelines).

Every process of the runtime gets a history listener while the API serves; each recorded run
(already redacted: see HookRun) goes to every open stream whose filters it passes, and to the
last ``EVENTS_KEPT`` events' timelines. A stream that cannot keep up loses its oldest runs
and is told how many (a ``lost`` event), never slows a dispatch down.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final

from ..process import current_event_id

if TYPE_CHECKING:
    from ..hooks import HookRun
    from ..process import AgentProcess
    from ..runtime import AgentRuntime

__all__ = ["HookFeed"]

#: Runs a stream holds before it loses the oldest.
STREAM_BUFFER: Final = 1000
#: Events whose hook runs are kept for their timeline, per process; and dispatches per event.
EVENTS_KEPT: Final = 200
ENTRIES_PER_EVENT: Final = 500
#: Seconds between keep-alive comments on an idle stream.
HEARTBEAT: Final = 15.0

Filters = dict[str, str]
#: Builds the runs of one recorded dispatch (see HistoryRecorder.add_listener, lazy).
Later = Callable[[], "list[HookRun]"]


class _Stream:
    def __init__(self, filters: Filters) -> None:
        self.filters = filters
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(STREAM_BUFFER)
        self.lost = 0

    def offer(self, run: dict[str, Any]) -> None:
        f = self.filters
        if any(run.get(key) != value for key, value in f.items()):
            return
        if self.queue.full():
            self.queue.get_nowait()
            self.lost += 1
        self.queue.put_nowait(run)


class HookFeed:
    """Hook runs of ``runtime``'s processes, live and per event."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.runtime = runtime
        self._streams: set[_Stream] = set()
        self._listeners: dict[str, tuple[AgentProcess, Callable[[Later], None]]] = {}
        #: process -> event id -> its hook runs (the last EVENTS_KEPT events, in the order
        #: they were first seen).
        self._events: dict[str, OrderedDict[str, list[Later]]] = {}
        self._closed = asyncio.Event()

    # -- attaching ---------------------------------------------------------------------------

    def start(self) -> None:
        self._closed.clear()
        for process in self.runtime:
            self.attach(process)
        self.runtime.on_change(self._changed)

    def close(self) -> None:
        """Detach from every process and end the open streams."""
        for process, listener in self._listeners.values():
            process.history.remove_listener(listener)
        self._listeners.clear()
        self.runtime.off_change(self._changed)
        self._closed.set()

    def _changed(self, change: str, process: AgentProcess) -> None:
        if change == "added":
            self.attach(process)
        elif change == "removed":
            entry = self._listeners.pop(process.name, None)
            if entry is not None:
                entry[0].history.remove_listener(entry[1])
            self._events.pop(process.name, None)

    def attach(self, process: AgentProcess) -> None:
        if process.name in self._listeners:
            return

        def listener(later: Later) -> None:
            self._recorded(process.name, later)

        process.history.add_listener(listener, lazy=True)
        self._listeners[process.name] = (process, listener)

    # -- recording ---------------------------------------------------------------------------

    def _recorded(self, name: str, later: Later) -> None:
        # On the dispatch path: keep how to build the records; build them when read (or at
        # once for the open streams).
        event_id = current_event_id()
        if event_id is not None:
            kept = self._events.setdefault(name, OrderedDict())
            timeline = kept.get(event_id)
            if timeline is None:
                timeline = kept[event_id] = []
                if len(kept) > EVENTS_KEPT:
                    kept.popitem(last=False)
            if len(timeline) < ENTRIES_PER_EVENT:
                timeline.append(later)
        if self._streams:
            views = [_view(run, event_id) for run in later()]
            for stream in list(self._streams):
                for view in views:
                    stream.offer(view)

    def timeline(self, name: str, event_id: str) -> list[dict[str, Any]]:
        """The hook runs recorded for ``event_id`` of process ``name`` (oldest first)."""
        kept = self._events.get(name)
        entries = kept.get(event_id, []) if kept is not None else []
        runs = [run for later in entries for run in later()]
        runs.sort(key=lambda run: run.recorded_at)
        return [_view(run, event_id) for run in runs]

    def events(self, name: str) -> list[str]:
        """The ids of the events with a timeline kept, the newest last."""
        return list(self._events.get(name) or ())

    # -- streaming ---------------------------------------------------------------------------

    async def stream(self, filters: Filters) -> AsyncIterator[bytes]:
        """Server-sent events: ``hook_run`` for each run, ``lost`` when runs were dropped."""
        stream = _Stream(filters)
        self._streams.add(stream)
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            yield b": tether hook-run feed\nretry: 2000\n\n"
            while not self._closed.is_set():
                getter = asyncio.ensure_future(stream.queue.get())
                done, _ = await asyncio.wait(
                    {getter, closed}, timeout=HEARTBEAT, return_when=asyncio.FIRST_COMPLETED
                )
                if getter not in done:
                    getter.cancel()
                    if closed in done:
                        return
                    yield b": keep-alive\n\n"
                    continue
                run = getter.result()
                if stream.lost:
                    lost, stream.lost = stream.lost, 0
                    yield _event("lost", {"count": lost})
                yield _event("hook_run", run)
        finally:
            closed.cancel()
            self._streams.discard(stream)


def _view(run: HookRun, event_id: str | None) -> dict[str, Any]:
    """A run as the history answers it (without the data snapshots), with its event's id."""
    view = run.as_dict()
    view.pop("data_before", None)
    view.pop("data_after", None)
    view["event_id"] = event_id
    return view


def _event(name: str, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, default=str, separators=(",", ":"))
    return f"event: {name}\ndata: {text}\n\n".encode()
