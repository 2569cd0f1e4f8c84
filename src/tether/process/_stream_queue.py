"""The Redis Streams queue backend (see ``_queue`` for what it does and guarantees)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ..hooks import DispatchResult
from ..store import FENCED, GROUP, is_nogroup
from ._errors import QueueUnavailableError
from ._event import TriggerEvent
from ._queue import Item, MemoryQueue

if TYPE_CHECKING:
    from ..store import Keys, Scripts

__all__ = ["StreamQueue"]

logger = logging.getLogger("tether.cluster")

T = TypeVar("T")

#: Seconds a read of the stream blocks waiting for an entry.
READ_BLOCK: Final = 0.2
#: Entries one claim call asks for.
CLAIM_BATCH: Final = 100

#: The reason of the dead letters a stop makes of what is queued or cut off: for a process
#: leaving a host (lease lost, handed over, host shut down), those entries stay in the stream.
STOPPED: Final = "process stopped"


class StreamQueue(MemoryQueue):
    """A process's events in a Redis stream (see the module docstring)."""

    def __init__(
        self,
        client: Any,  # redis.asyncio.Redis (its stubs type replies loosely)
        scripts: Scripts,
        keys: Keys,
        process: str,
        *,
        consumer: str,
        reader: Any = None,
        max_length: int = 0,
        prefetch: int = 1,
        visibility: float = 30.0,
    ) -> None:
        super().__init__()  # the local buffer: the stream is what is bounded (max_length)
        self.client = client
        self.reader = reader if reader is not None else client  # for the blocking reads
        self.scripts = scripts
        self.process = process
        self.consumer = consumer
        self.max_length = max_length
        self.prefetch = max(1, prefetch)
        self.visibility = visibility
        self._stream = keys.stream(process)
        self._attempts = keys.attempts(process)
        self._dead_key = keys.dead(process)
        self._lease = keys.lease(process)
        #: The fencing token of the lease this host holds for the process, or None.
        self.token: str | None = None
        #: Told (once per lease) when a fenced write found the lease gone.
        self.on_fenced: Callable[[], None] | None = None
        #: Set by the cluster: whether the lease was renewed recently enough that it cannot
        #: have passed to another host (see ``holds``); without it, Redis is asked each time.
        self.fresh: Callable[[], bool] = lambda: False
        #: Set by the process: redacts an event's declared secrets before it is stored.
        self.redact: Callable[[dict[str, Any]], dict[str, Any]] = lambda value: value
        #: Set by the process: dead-letters an event (claim() finds some out of attempts).
        self.dead_letter: Callable[[TriggerEvent, str, str, int], None] | None = None
        #: Whether inject() adds events: the cluster runs the process (not stopped by an
        #: operator). The cluster keeps it up to date on every host.
        self.accepting = True
        self._entries: dict[str, str] = {}  # event id -> stream entry id, while held here
        #: Events this host read or claimed from the stream, until their outcome is decided
        #: (their task_completed hooks run only while the lease is held: see ``completed``).
        self._taken: set[str] = set()
        #: What this host left for the next holder since it lost the lease (event id ->
        #: (event, attempts)), and whether Redis lost it with its data (``orphaned``): then
        #: it is added to the stream again, as it is not there any more.
        self._behind: dict[str, Item] = {}
        self._orphaned = False
        #: The epoch of a lease lost while Redis did not answer: whether Redis lost its data
        #: is told once it answers again (``resolve``); what was left is kept until then.
        self.unsure: str | None = None
        self._leaving = False
        #: Events whose dead letter a leaving stop made: they stay in the stream.
        self.left: set[str] = set()
        self._room = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[Any]] = set()
        self._recovered: dict[str, Any] | None = None

    def __repr__(self) -> str:
        held = "held" if self.token else "not held"
        return f"<StreamQueue {self._stream} {held} buffered={self.qsize()}>"

    # -- any host ----------------------------------------------------------------------------

    async def setup(self) -> None:
        """Create the stream and its consumer group, read from the start, unless there (once
        per cluster; again when Redis lost them: see ``_heal``)."""
        from redis.exceptions import ResponseError

        try:
            await self.client.xgroup_create(self._stream, GROUP, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in f"{exc}":
                raise

    async def _heal(self, exc: BaseException) -> None:
        """A read or claim found the stream or its group gone (``NOGROUP``: Redis restarted
        empty, failed over to an empty replica, was flushed): make them again, so that the
        events added from now on are read."""
        logger.warning(
            "process %s: its stream or group was gone; made again (%s)", self.process, exc
        )
        await self.setup()

    async def add(self, event: TriggerEvent, attempts: int = 0) -> bool:
        """Append ``event`` to the stream; False when it holds ``max_length`` entries.

        Raises QueueUnavailableError when Redis does not answer (the event is not queued)."""
        from redis.exceptions import RedisError

        body = json.dumps(self.redact(event.to_dict()))
        try:
            added = await self.scripts.add(
                keys=[self._stream],
                args=[self.max_length, body, attempts, GROUP],
                client=self.client,
            )
        except (RedisError, OSError) as exc:
            raise QueueUnavailableError(
                f"process {self.process!r}: the cluster's Redis cannot queue the event now "
                f"({type(exc).__name__}: {exc}); retry later"
            ) from exc
        return added is not None

    # -- the holder --------------------------------------------------------------------------

    async def claim(self, token: str, max_retries: int) -> dict[str, Any]:
        """Take the lease's entries over: every entry pending in the group is claimed for this
        host and buffered, oldest first; one whose attempts are used up is dead-lettered
        ("process failed"). Returns what was reclaimed (session_start's ``recovered``)."""
        if self.unsure is not None:
            raise RuntimeError("resolve() what the last lease left before claiming again")
        self.token, self._leaving = token, False
        self.left.clear()
        self._behind.clear()
        self._orphaned = False
        await self.setup()  # (gone when Redis lost its data: the entries added since are read)
        summary = await self.client.xpending(self._stream, GROUP)
        previous = sorted(
            c["name"] for c in summary.get("consumers", []) if c["name"] != self.consumer
        )
        claimed: list[tuple[str, dict[str, str]]] = []
        start = "0-0"
        while True:
            reply = await self.client.xautoclaim(
                self._stream, GROUP, self.consumer, 0, start_id=start, count=CLAIM_BATCH
            )
            start, entries = reply[0], reply[1]
            claimed += [(entry_id, fields) for entry_id, fields in entries if fields]
            if start == "0-0":
                break
        recovered, dead = await self._take_claimed(claimed, max_retries)
        self._recovered = {
            "source": "redis",
            "events": len(recovered),
            "event_ids": recovered,
            "dead_letters": dead,
            "from_hosts": previous,
            "fencing_token": int(token.split(":", 1)[0]),
        }
        return self._recovered

    async def _take_claimed(
        self, claimed: list[tuple[str, dict[str, str]]], max_retries: int
    ) -> tuple[list[str], int]:
        started: list[str | None] = []
        if claimed:
            started = await self.client.hmget(self._attempts, [entry for entry, _ in claimed])
        recovered: list[str] = []
        dead = 0
        for (entry_id, fields), ran in zip(claimed, started or [None] * len(claimed), strict=True):
            event = TriggerEvent.from_dict(json.loads(fields["event"]))
            if event.event_id in self._entries:
                continue  # buffered or running here already
            attempts = max(int(fields.get("attempts", 0)), int(ran or 0))
            self._entries[event.event_id] = entry_id
            self._taken.add(event.event_id)
            if ran is not None and attempts > max_retries and self.dead_letter is not None:
                self.dead_letter(
                    event,
                    "process failed",
                    f"the host running it went away while attempt {attempts} ran; no retries left",
                    attempts,
                )
                dead += 1
                continue
            self.put_nowait((event, attempts))
            recovered.append(event.event_id)
        return recovered, dead

    def take_recovered(self) -> dict[str, Any] | None:
        """What the last claim() reclaimed, once (session_start's ``recovered``)."""
        recovered, self._recovered = self._recovered, None
        return recovered

    def start_reading(self) -> None:
        """Read new entries into the local buffer while the lease is held (a task)."""
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(
                self._read(), name=f"{self.process}-stream-reader"
            )

    def get_nowait(self) -> Item:
        item = super().get_nowait()
        self._room.set()  # (get() ends here too): the reader may fetch the next entries
        return item

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        next_sweep = loop.time() + self.visibility
        while self.token is not None and not self._leaving:
            if self.qsize() >= self.prefetch:
                self._room.clear()
                await self._room.wait()
                continue
            try:
                if loop.time() >= next_sweep:
                    next_sweep = loop.time() + self.visibility
                    await self._sweep()
                reply = await self.reader.xreadgroup(
                    GROUP,
                    self.consumer,
                    {self._stream: ">"},
                    count=self.prefetch - self.qsize(),
                    block=int(READ_BLOCK * 1000),
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if is_nogroup(exc):
                    with contextlib.suppress(Exception):  # (else: tried again next time)
                        await self._heal(exc)
                    continue
                logger.warning("reading the stream of %s failed: %s", self.process, exc)
                await asyncio.sleep(READ_BLOCK)
                continue
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    if not fields:
                        continue
                    event = TriggerEvent.from_dict(json.loads(fields["event"]))
                    self._entries[event.event_id] = entry_id
                    self._taken.add(event.event_id)
                    # (Read after the lease was lost: pending here until the next holder's
                    # sweep claims it; not run.)
                    if self.token is not None and not self._leaving:
                        self.put_nowait((event, int(fields.get("attempts", 0))))

    async def _sweep(self) -> None:
        """Claim the entries other hosts read but left idle ``visibility`` seconds (a host
        that read one after it lost its lease), so none waits for ever."""
        idle = int(self.visibility * 1000)
        rows = await self.client.xpending_range(
            self._stream, GROUP, min="-", max="+", count=CLAIM_BATCH, idle=idle
        )
        stale = [r["message_id"] for r in rows if r["consumer"] != self.consumer]
        if not stale:
            return
        entries = await self.client.xclaim(self._stream, GROUP, self.consumer, idle, stale)
        recovered, _ = await self._take_claimed(
            [(entry_id, fields) for entry_id, fields in entries if fields], 1 << 30
        )
        if recovered:
            logger.warning(
                "process %s: claimed %d entries idle for %gs on other hosts",
                self.process,
                len(recovered),
                self.visibility,
            )

    async def running(self, event: TriggerEvent, attempt: int) -> bool:
        """Note that attempt ``attempt`` of ``event`` starts (the next holder counts it).

        False when this host no longer holds the lease (the write was fenced, or the lease was
        lost before): the attempt must not start; the entry stays for the next holder."""
        entry, token = self._entries.get(event.event_id), self.token
        if token is None:
            self._left_behind(event, attempt - 1)
            return False
        if entry is None:
            return True
        try:
            answer = await self.scripts.attempt(
                keys=[self._lease, self._attempts], args=[token, entry, attempt], client=self.client
            )
        except Exception as exc:  # the run goes on: at worst this attempt is not counted
            logger.warning("process %s: counting attempt %d failed: %s", self.process, attempt, exc)
            return True
        if answer == FENCED:
            self._fenced()
            self._left_behind(event, attempt - 1)
            return False
        return True

    async def holds(self) -> bool:
        """Whether this host still holds the lease: its token, and a renewal recent enough
        that the lease cannot have expired (``fresh``), else the lease in Redis compared with
        the token. A host paused past its lease (SIGSTOP, a paused VM) learns here, when it
        resumes, that its runs are another host's now."""
        token = self.token
        if token is None:
            return False
        if self.fresh():
            return True
        try:
            lease = await self.client.get(self._lease)
        except Exception as exc:  # not renewed lately and not answering: not ours to trust
            logger.warning("process %s: cannot check its lease (%s)", self.process, exc)
            return False
        if lease != token:
            self._fenced()
            return False
        return True

    def completed(
        self,
        dispatch: Callable[[], Awaitable[DispatchResult]],
        event: TriggerEvent,
        *,
        decided: bool,
    ) -> Awaitable[DispatchResult]:
        """The task_completed ``dispatch()`` of ``event_id``; for an event this host took
        from the stream, only while it holds the lease (see ``holds``): a stale holder runs
        no hook for a run it no longer holds, and leaves its entry to the next holder. A
        ``decided`` outcome (not a retry) is acknowledged after its hooks."""
        return self._completed(dispatch, event, decided)

    async def _completed(
        self, dispatch: Callable[[], Awaitable[DispatchResult]], event: TriggerEvent, decided: bool
    ) -> DispatchResult:
        event_id = event.event_id
        if event_id in self._taken and not await self.holds():
            logger.warning(
                "process %s: %s ended on a host that no longer holds it: no task_completed "
                "hooks here; the next holder runs it",
                self.process,
                event_id,
            )
            if decided:  # (a retry comes back to running(), which leaves it then)
                self._left_behind(event, 0)
            return DispatchResult()
        if not decided:
            return await dispatch()
        self._taken.discard(event_id)
        return await self._settle(dispatch(), event_id)

    async def _settle(self, dispatch: Awaitable[T], event_id: str) -> T:
        try:
            return await dispatch
        finally:  # acknowledged even when a hook raised: the event's outcome is decided
            entry = self._entries.pop(event_id, None)
            token = self.token
            if entry is not None and token is not None:
                self._write(
                    self.scripts.ack(
                        keys=[self._lease, self._stream, self._attempts],
                        args=[token, GROUP, entry],
                        client=self.client,
                    ),
                    f"acknowledging {event_id}",
                )

    def dead(self, letter: dict[str, Any]) -> None:
        """Keep a dead letter in Redis and acknowledge its entry (one fenced step).

        A process leaving this host (see ``leave``) keeps its "process stopped" events in the
        stream for the next holder instead; a host without the lease writes nothing for an
        entry (the next holder runs it again)."""
        event: TriggerEvent = letter["event"]
        entry = self._entries.pop(event.event_id, None)
        if self._leaving and letter["reason"] == STOPPED:
            self.left.add(event.event_id)
            if entry is None:  # not in the stream yet (an inject racing the stop): add it
                self._write(self.add(event, letter["attempts"]), f"re-adding {event.event_id}")
            else:
                self._left_behind(event, letter["attempts"])
            return
        token = self.token
        if entry is not None and token is None:
            self.left.add(event.event_id)
            self._left_behind(event, letter["attempts"])
            return
        body = json.dumps(
            {
                "event": self.redact(event.to_dict()),
                "event_id": event.event_id,
                "reason": letter["reason"],
                "error": letter["error"],
                "attempts": letter["attempts"],
                "timestamp": letter["timestamp"].isoformat(),
            }
        )
        if entry is None:
            self._write(self.client.hset(self._dead_key, event.event_id, body), "a dead letter")
            return
        assert token is not None
        self._write(
            self.scripts.dead(
                keys=[self._lease, self._stream, self._attempts, self._dead_key],
                args=[token, GROUP, entry, event.event_id, body],
                client=self.client,
            ),
            f"dead-lettering {event.event_id}",
        )

    async def dead_letters(self) -> list[dict[str, Any]]:
        """The process's dead letters kept in Redis, oldest first (process entries)."""
        raw = await self.client.hgetall(self._dead_key)
        letters = []
        for text in raw.values():
            data = json.loads(text)
            data["event"] = TriggerEvent.from_dict(data["event"])
            data["timestamp"] = datetime.fromisoformat(data["timestamp"]).astimezone(UTC)
            letters.append(data)
        return sorted(letters, key=lambda d: d["timestamp"])

    def forget_dead(self, event_ids: list[str]) -> None:
        """Remove dead letters from Redis (redelivered or cleared)."""
        if event_ids:
            self._write(self.client.hdel(self._dead_key, *event_ids), "forgetting dead letters")

    def _write(self, call: Awaitable[Any], what: str) -> None:
        async def write() -> None:
            try:
                answer = await call
            except Exception as exc:  # the entry stays pending: the next holder runs it again
                logger.warning("process %s: %s failed: %s", self.process, what, exc)
                return
            if answer == FENCED:
                self._fenced()

        task = asyncio.get_running_loop().create_task(write())
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    def _fenced(self) -> None:
        if self.token is None:
            return
        logger.error("process %s: its lease is gone (fenced); stopping it here", self.process)
        self.token = None
        if self.on_fenced is not None:
            self.on_fenced()

    # -- leaving the host --------------------------------------------------------------------

    async def leave(self) -> None:
        """Stop reading and give up the buffered entries (they stay pending in the stream);
        from now a stop's "process stopped" dead letters stay in the stream too."""
        self._leaving = True
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        while not self.empty():
            event, attempts = super().get_nowait()
            self.task_done()
            if self._entries.pop(event.event_id, None) is not None:
                self._left_behind(event, attempts)

    def _left_behind(self, event: TriggerEvent, attempts: int) -> None:
        """``event``'s entry is left for the next holder (see ``orphan``)."""
        if event.event_id in self._behind:
            return
        self._behind[event.event_id] = (event, attempts)
        if self._orphaned:
            self._write(self.add(event, attempts), f"adding {event.event_id} again")

    def resolve(self, epoch: str | None) -> None:
        """Redis answers again after a lease was lost while it did not (``unsure``): with
        ``epoch`` another than that lease's, it lost its data meanwhile, and what this host
        left is added again (see ``orphan``); else it is in the stream still."""
        if self.unsure is None:
            return
        if epoch != self.unsure:
            self.orphan()
        self.unsure = None
        self._behind.clear()

    def orphan(self) -> None:
        """Redis lost its data since this host took the lease (an empty restart, a failover to
        an empty replica, FLUSHALL): the entries it leaves for the next holder are gone from
        the stream, so each is added again (those left so far, and those left from now)."""
        if self._orphaned:
            return
        self._orphaned = True
        for event, attempts in self._behind.values():
            self._write(self.add(event, attempts), f"adding {event.event_id} again")
        if self._behind:
            logger.warning(
                "process %s: Redis lost its data; %d events this host held added again",
                self.process,
                len(self._behind),
            )

    def fence(self) -> None:
        """The lease is gone: write nothing more for the entries (see ``dead``)."""
        self.token = None

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for the writes under way (acknowledgements, dead letters)."""
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=timeout)

    def forget(self) -> None:
        """After the process stopped here: forget the entries it held (all stay pending)."""
        self._entries.clear()
        self._taken.clear()
        if self.unsure is None:  # (else kept until resolve())
            self._behind.clear()
