"""ClusterNode: one host of a cluster of runtimes that share a Redis.

Every host loads the same processes; each process runs on exactly one host at a time, the one
holding its lease (``{prefix}:lease:{p}``: a fencing token and the host, with a TTL).

* Placement: a free lease is taken first by the process's preferred host (rendezvous hashing
  over the live hosts, so each host prefers about as many), by any host once it has been free
  for a whole TTL; a holder hands a process over to its preferred host once that host has been
  live for two ticks, so a cluster that starts one host at a time ends up spread.
* Renewal: every ``ttl / 5`` s, from a thread of its own (a busy event loop delays none). A
  holder that could not renew for ``ttl / 2`` s (a partition, a stalled Redis) stops its copy
  on its own, before the TTL runs out and another host may start one; so does a holder whose
  write found the token changed (a fenced write).
* Takeover: the next holder claims what the stream holds pending (see ``StreamQueue.claim``)
  and starts the process; its session_start's ``recovered`` says what was reclaimed.
* A process stopped by an operator (the API or CLI, on any host) stays stopped cluster-wide
  (``{prefix}:desired:{p}``) until started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from .._urls import masked_in
from ..errors import TetherError
from ..process import ProcessState
from ..store._redis import FENCED, RENEW, Keys, Scripts, connect

if TYPE_CHECKING:
    from ..hooks._records import HookRun
    from ..process import AgentProcess, ProcessConfig
    from ..process._stream_queue import StreamQueue
    from ..runtime import AgentRuntime

__all__ = ["ClusterError", "ClusterNode", "cluster_config", "rendezvous"]

logger = logging.getLogger("tether.cluster")

#: Hook runs kept per process in its Redis history stream (approximately: MAXLEN ~).
HISTORY_KEPT: Final = 10_000
#: Entries of a history stream read at once (see ClusterNode.hook_runs).
HISTORY_PAGE: Final = 500
#: What a request forwarded to another host waits for its answer, in seconds.
FORWARD_TIMEOUT: Final = 30.0
#: Seconds a reply waits in Redis for the host that asked.
_REPLY_TTL: Final = 60


def rendezvous(name: str, hosts: list[str]) -> str:
    """The host of ``hosts`` that prefers process ``name`` most (rendezvous hashing: each
    host prefers about as many processes, and a host joining or leaving moves only its own)."""
    return max(hosts, key=lambda h: hashlib.sha256(f"{name}\0{h}".encode()).digest())


async def _cancel_and_wait(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait until they end, cancelling again while any goes on.

    A cancellation can be lost: on Python 3.11 ``asyncio.wait_for`` (which redis-py wraps
    every write in) returns the result, not CancelledError, when the cancel lands as the
    write completes; the task goes on as if nothing happened."""
    pending = set(tasks)
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)


class ClusterError(TetherError, RuntimeError):
    """The cluster cannot do what was asked (Redis unreachable, no host answers)."""


def cluster_config(config: ProcessConfig, ttl: float) -> ProcessConfig:
    """``config`` as a clustered process runs it: the stream holds its events, so it has no
    journal; its stop_timeout is at most ``ttl / 4``, so that a host that lost the lease has
    stopped its copy before another host may start one."""
    update: dict[str, Any] = {"journal_path": None}
    if config.stop_timeout > ttl / 4:
        update["stop_timeout"] = ttl / 4
    if config.journal_path:
        logger.warning("a clustered process keeps its events in Redis: journal_path is ignored")
    return config.model_copy(update=update)


class _Renewer(threading.Thread):
    """Renews the leases a node holds, every ``tick`` s, from a thread of its own with a
    client of its own: a busy event loop (runs, hooks, a slow import) delays no renewal.

    It also watches them: a lease not renewed for ttl/2 s (Redis unreachable) or found taken
    (fenced) is reported to the node's loop, which stops the copy at once."""

    def __init__(self, node: ClusterNode, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name=f"cluster-{node.host}-renew", daemon=True)
        self.node = node
        self.loop = loop
        self._halt = threading.Event()
        self._told: set[str] = set()

    def halt(self) -> None:
        self._halt.set()

    def run(self) -> None:
        from redis import Redis
        from redis.exceptions import RedisError

        node = self.node
        client = Redis.from_url(
            node.url, socket_timeout=node.ttl / 5, socket_connect_timeout=node.ttl / 5
        )
        renew = client.register_script(RENEW)
        ttl_ms = int(node.ttl * 1000)
        try:
            while not self._halt.wait(node.tick):
                for name, held in self._held():
                    sent = time.monotonic()
                    try:
                        answer = renew(keys=[node.keys.lease(name)], args=[held.token, ttl_ms])
                    except (RedisError, OSError) as exc:
                        if sent - held.renewed >= node.ttl / 2:
                            self._tell(
                                name,
                                held,
                                f"its lease was not renewed for {node.ttl / 2:g}s ({exc})",
                            )
                        continue
                    if answer == FENCED:
                        self._tell(name, held, "its lease was taken (fenced)")
                    else:
                        held.renewed = sent
                for name, held in self._held():  # also when a call hangs
                    if time.monotonic() - held.renewed >= node.ttl / 2:
                        self._tell(name, held, f"its lease was not renewed for {node.ttl / 2:g}s")
        finally:
            client.close()

    def _held(self) -> list[tuple[str, _Held]]:
        """A copy of the node's leases (the loop may change them meanwhile: copied again)."""
        while True:
            try:
                return list(self.node.held.items())
            except RuntimeError:  # changed size while copied
                continue

    def _tell(self, name: str, held: _Held, why: str) -> None:
        key = f"{name}:{held.token}"
        if key not in self._told:
            self._told.add(key)
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing runs anyway
                self.loop.call_soon_threadsafe(self.node._lost, name, why)


@dataclass(slots=True)
class _Held:
    token: str
    renewed: float  # time.monotonic() the last successful renewal was sent
    acquired_at: float = field(default_factory=time.time)


class ClusterNode:
    """This host's part of the cluster: leases, takeover, status, forwarded requests.

    ``async with ClusterNode(runtime, "redis://127.0.0.1:6379") as node: ...`` joins the
    processes the runtime holds (add them first, and do not start the runtime: the node starts
    each process whose lease it takes) and leaves the cluster on exit, handing its processes
    over (their queued events stay in the streams for the next holder).
    """

    def __init__(
        self,
        runtime: AgentRuntime,
        url: str,
        *,
        host: str | None = None,
        prefix: str = "tether",
        lease_ttl: float = 10.0,
        visibility: float | None = None,
    ) -> None:
        if not 0.3 <= lease_ttl <= 3600:
            raise ValueError(f"lease_ttl must be 0.3-3600 seconds, got {lease_ttl!r}")
        self.runtime = runtime
        self.url = url
        self.host = host or f"{socket.gethostname()}-{os.getpid()}"
        if not self.host or ":" in self.host or len(self.host) > 128:
            raise ValueError(f"host {self.host!r}: 1-128 characters, no ':'")
        self.keys = Keys(prefix)
        self.ttl = lease_ttl
        self.visibility = visibility if visibility is not None else lease_ttl * 3
        # Generous socket timeouts (a loaded host must not fail its calls): what bounds the
        # life of a copy whose lease cannot be renewed is the watchdog, not these.
        self.client: Any = connect(url, timeout=max(2.0, lease_ttl / 2))  # replies typed loosely
        #: For the reads that block waiting for entries (a longer socket timeout).
        self.reader: Any = connect(url, timeout=max(2.0, lease_ttl / 2) + 1.0)
        self.scripts = Scripts(self.client)
        #: The ASGI app forwarded requests are served by (the control API sets it).
        self.local_app: Any = None
        self.api_token: str | None = None
        self.held: dict[str, _Held] = {}
        self._queues: dict[str, StreamQueue] = {}
        self._leaving: set[str] = set()  # processes this node is stopping itself
        self._taking: set[str] = set()  # processes this node is claiming and starting
        self._free_since: dict[str, float] = {}
        self._seen: dict[str, int] = {}  # host -> ticks seen live in a row
        self._live: list[str] = [self.host]
        self._tasks: list[asyncio.Task[None]] = []
        self._changes: set[asyncio.Task[None]] = set()
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._stopped = False
        self._renewer: _Renewer | None = None

    def __repr__(self) -> str:
        return f"<ClusterNode {self.host} holds={sorted(self.held)}>"

    @property
    def tick(self) -> float:
        """Seconds between two placement rounds (heartbeat, renewals, takeovers)."""
        return self.ttl / 5

    # -- joining and leaving -----------------------------------------------------------------

    async def start(self) -> None:
        """Join: check Redis, take over the runtime's processes' queues, start the loops."""
        from ..process._stream_queue import StreamQueue

        try:
            await self.client.ping()
        except Exception as exc:
            raise ClusterError(
                masked_in(f"cannot reach the cluster's Redis at {self.url}: {exc}", self.url)
            ) from exc
        await self._warm_up()
        self.runtime.cluster = self
        for process in self.runtime:
            queue = StreamQueue(
                self.client,
                self.scripts,
                self.keys,
                process.name,
                consumer=self.host,
                reader=self.reader,
                max_length=process.config.max_queue_size,
                prefetch=process.config.concurrency,
                visibility=self.visibility,
            )
            await queue.setup()
            process.use_queue(queue)
            queue.on_fenced = self._fenced_callback(process.name)
            self._queues[process.name] = queue
            self._record_history(process)
        await self._heartbeat()
        loop = asyncio.get_running_loop()
        self._renewer = _Renewer(self, loop)
        self._renewer.start()
        self._tasks = [
            loop.create_task(self._place(), name=f"cluster-{self.host}-place"),
            loop.create_task(self._serve_requests(), name=f"cluster-{self.host}-requests"),
        ]

    async def _warm_up(self) -> None:
        """Import what the processes' first runs import, in a thread, before taking a lease:
        an import blocks the event loop the leases are renewed from (the OpenAI SDK takes
        seconds on a loaded host), and a copy whose loop stalls past ttl/2 is stopped."""
        import importlib

        if any(
            isinstance(p.config.model, str) and p.config.model.startswith("openai:")
            for p in self.runtime
        ):
            await asyncio.to_thread(importlib.import_module, "openai")

    async def stop(self) -> None:
        """Leave: hand every process over (stopped here, leases released), stop the loops."""
        self._stopped = True
        if self._renewer is not None:
            self._renewer.halt()
        await _cancel_and_wait(self._tasks)
        await asyncio.gather(*list(self._changes), return_exceptions=True)
        await asyncio.gather(
            *(self._give_up(name, lost=False, reason="host stopping") for name in list(self.held))
        )
        with contextlib.suppress(Exception):
            await self.client.delete(self.keys.host(self.host))
        self.runtime.cluster = None
        await self.client.aclose()
        await self.reader.aclose()

    async def __aenter__(self) -> ClusterNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- placement ---------------------------------------------------------------------------

    async def _place(self) -> None:
        while not self._stopped:  # (also when a stop's cancellation was lost)
            try:
                await self._heartbeat()
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the watchdog fences what cannot renew
                logger.warning("cluster host %s: %s", self.host, exc)
            await asyncio.sleep(self.tick)

    async def _heartbeat(self) -> None:
        await self.client.set(
            self.keys.host(self.host),
            json.dumps({"host": self.host, "pid": os.getpid(), "at": time.time()}),
            px=int(self.ttl * 1000),
        )
        live = sorted(
            [key.rsplit(":", 1)[1] async for key in self.client.scan_iter(self.keys.host("*"))]
        )
        self._seen = {h: self._seen.get(h, 0) + 1 for h in live}
        self._live = live if self.host in live else sorted([*live, self.host])

    def preferred(self, name: str) -> str:
        """The live host that should run process ``name`` (see ``rendezvous``)."""
        return rendezvous(name, self._live)

    async def _round(self) -> None:
        loop = asyncio.get_running_loop()
        for process in self.runtime:
            name = process.name
            if name not in self._queues or name in self._leaving or name in self._taking:
                continue
            held = self.held.get(name)
            if held is not None:
                if process.state == ProcessState.STOPPED:  # an operator stopped it here
                    await self.client.set(self.keys.desired(name), "stopped")
                    self._queues[name].accepting = False
                    self._change(self._give_up(name, lost=False, reason="stopped"))
                    continue
                preferred = self.preferred(name)
                if preferred != self.host and self._seen.get(preferred, 0) >= 2:
                    self._change(self._give_up(name, lost=False, reason="handed over"))
                    continue
                await self._publish(process, held)
                continue
            stopped = await self.client.get(self.keys.desired(name)) == "stopped"
            self._queues[name].accepting = not stopped
            if stopped:
                continue
            if await self.client.exists(self.keys.lease(name)):
                self._free_since.pop(name, None)
                continue
            free_since = self._free_since.setdefault(name, loop.time())
            if self.preferred(name) != self.host and loop.time() - free_since < self.ttl:
                continue
            sent = time.monotonic()
            token = await self.scripts.acquire(
                keys=[self.keys.lease(name), self.keys.fence(name)],
                args=[self.host, int(self.ttl * 1000)],
            )
            if token:
                self._free_since.pop(name, None)
                self.held[name] = _Held(token, sent)
                self._change(self._take(process, token))

    def _change(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._changes.add(task)
        task.add_done_callback(self._changes.discard)

    async def _take(self, process: AgentProcess, token: str) -> None:
        """Claim the stream's pending entries, then start the process here."""
        queue = self._queues[process.name]
        name = process.name
        self._taking.add(name)  # (its state says nothing of an operator until it started)
        try:
            # Redis's dead letters first: claim() may add one (an entry out of attempts).
            process.dead_letters[:] = await queue.dead_letters()
            recovered = await queue.claim(token, process.config.max_retries)
            logger.warning(
                "cluster host %s runs %s (fencing token %s; reclaimed %d events)",
                self.host,
                name,
                recovered["fencing_token"],
                recovered["events"],
            )
            await process.start(_restart=process.state == ProcessState.STOPPED)
            held = self.held.get(name)
            if held is not None and process.state == ProcessState.RUNNING:
                queue.start_reading()
                await self._publish(process, held)
        except Exception as exc:
            logger.error("cluster host %s could not start %s: %s", self.host, name, exc)
            if name in self.held:
                await self._give_up(name, lost=False, reason="start failed")
        finally:
            self._taking.discard(name)

    async def _give_up(self, name: str, *, lost: bool, reason: str) -> None:
        """Stop this host's copy of ``name``; release the lease unless it is lost already.

        Events queued or cut off here stay in the stream for the next holder."""
        held = self.held.pop(name, None)
        process = self.runtime.get(name)
        queue = self._queues.get(name)
        if held is None or process is None or queue is None or name in self._leaving:
            return
        self._leaving.add(name)
        try:
            if lost:
                queue.fence()
            await queue.leave()
            if process.state not in (ProcessState.STOPPED, ProcessState.CREATED):
                try:
                    await process.stop(reason=reason)
                except Exception as exc:
                    logger.error("stopping %s (%s) raised %s", name, reason, exc)
            kept = [d for d in process.dead_letters if d["event_id"] not in queue.left]
            process.dead_letters[:] = kept
            await queue.drain(self.ttl / 4)
            queue.fence()
            queue.forget()
            if not lost:
                with contextlib.suppress(Exception):
                    await self.scripts.release(keys=[self.keys.lease(name)], args=[held.token])
            with contextlib.suppress(Exception):
                await self.client.hdel(self.keys.status, name)
            logger.warning("cluster host %s no longer runs %s (%s)", self.host, name, reason)
        finally:
            self._leaving.discard(name)

    def _lost(self, name: str, why: str) -> None:
        """The lease of ``name`` is gone, or may be soon (called in the event loop)."""
        held = self.held.get(name)
        if held is None or name in self._leaving or self._stopped:
            return
        logger.error("cluster host %s stops %s: %s", self.host, name, why)
        self._queues[name].fence()  # at once: no acknowledgement from here on
        self._change(self._give_up(name, lost=True, reason="lease lost"))

    def _fenced_callback(self, name: str) -> Any:
        def fenced() -> None:
            self._lost(name, "a write found its lease taken (fenced)")

        return fenced

    async def _publish(self, process: AgentProcess, held: _Held) -> None:
        status = process.redactor.value(process.status())
        status.update(
            host=self.host,
            fencing_token=int(held.token.split(":", 1)[0]),
            updated_at=time.time(),
            stream_length=await self.client.xlen(self.keys.stream(process.name)),
        )
        await self.client.hset(self.keys.status, process.name, json.dumps(status))
        await self._flush_history(process.name)

    # -- the control plane -------------------------------------------------------------------

    async def holder(self, name: str) -> str | None:
        """The host holding process ``name``'s lease, or None."""
        token = await self.client.get(self.keys.lease(name))
        return token.split(":", 1)[1] if token else None

    async def processes(self) -> list[dict[str, Any]]:
        """Every process of the cluster, with the host it runs on (None: on none now)."""
        statuses = await self.client.hgetall(self.keys.status)
        out = []
        for process in self.runtime:
            name = process.name
            holder = await self.holder(name)
            raw = statuses.get(name)
            if raw is not None and holder is not None:
                summary = json.loads(raw)
                summary["host"] = holder
            else:  # this host's idle copy, and what the cluster says of it
                summary = process.redactor.value(process.status())
                desired = await self.client.get(self.keys.desired(name))
                state = "starting" if holder else "stopped" if desired else "waiting"
                summary.update(host=holder, state=state)
            out.append(summary)
        return out

    async def start_process(self, name: str) -> None:
        """Let the cluster run ``name`` again (after an operator's stop)."""
        await self.client.delete(self.keys.desired(name))
        queue = self._queues.get(name)
        if queue is not None:
            queue.accepting = True

    async def forward(
        self, host: str, method: str, path: str, query: str, body: bytes
    ) -> tuple[int, bytes]:
        """Serve a control API request on ``host`` (through Redis); (status, JSON body)."""
        request_id = uuid.uuid4().hex
        await self.client.xadd(
            self.keys.commands(host),
            {
                "id": request_id,
                "method": method,
                "path": path,
                "query": query,
                "body": body.decode("utf-8", "replace"),
            },
            maxlen=1000,
            approximate=True,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT
        answer = None
        while answer is None and loop.time() < deadline:  # short waits: the socket's timeout
            answer = await self.reader.blpop([self.keys.reply(request_id)], timeout=1)
        if answer is None:
            raise ClusterError(f"host {host!r} did not answer within {FORWARD_TIMEOUT:g}s")
        reply = json.loads(answer[1])
        return int(reply["status"]), reply["body"].encode()

    async def _serve_requests(self) -> None:
        """Answer the control API requests other hosts forward here."""
        import httpx

        key = self.keys.commands(self.host)
        last = "$"
        while not self._stopped:  # (also when a stop's cancellation was lost)
            try:
                reply = await self.reader.xread({key: last}, block=200, count=20)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("reading forwarded requests failed: %s", exc)
                await asyncio.sleep(self.tick)
                continue
            for _, entries in reply or []:
                taken = [entry_id for entry_id, _ in entries]
                if taken:  # a request body may carry a secret: kept in Redis no longer
                    with contextlib.suppress(Exception):
                        await self.client.xdel(key, *taken)
                for entry_id, fields in entries:
                    last = entry_id
                    if self.local_app is None:
                        continue
                    self._change(self._answer(httpx, fields))

    async def _answer(self, httpx: Any, fields: dict[str, str]) -> None:
        headers = {"content-type": "application/json", "x-tether-forwarded": self.host}
        if self.api_token is not None:
            headers["authorization"] = f"Bearer {self.api_token}"
        transport = httpx.ASGITransport(app=self.local_app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
                response = await c.request(
                    fields["method"],
                    fields["path"] + (f"?{fields['query']}" if fields["query"] else ""),
                    content=fields["body"].encode() or None,
                    headers=headers,
                )
            status, body = response.status_code, response.text
        except Exception as exc:
            status = 500
            body = json.dumps({"error": {"code": "CLUSTER_ERROR", "message": f"{exc}"}})
        key = self.keys.reply(fields["id"])
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, json.dumps({"status": status, "body": body}))
            pipe.expire(key, _REPLY_TTL)
            await pipe.execute()

    # -- hook-run history ----------------------------------------------------------------------

    def _record_history(self, process: AgentProcess) -> None:
        """Send the process's hook runs to its Redis stream (capped), from any host. The
        process keeps its recorder: its own reads, a dry run's and telemetry's listeners
        still see every run."""
        buffer = self._history.setdefault(process.name, [])

        def sink(runs: list[HookRun]) -> None:
            buffer.extend(process.redactor.value(run.as_dict()) for run in runs)
            del buffer[:-HISTORY_KEPT]

        process.history.send_to(sink)

    def queue(self, name: str) -> StreamQueue:
        """The stream queue of process ``name`` on this host (KeyError if none)."""
        return self._queues[name]

    async def flush_history(self, name: str) -> None:
        """Write the hook runs recorded here for ``name`` to its Redis stream now."""
        await self._flush_history(name)

    async def _flush_history(self, name: str) -> None:
        process = self.runtime.get(name)
        if process is not None:
            process.history.flush()
        buffer = self._history.get(name)
        if not buffer:
            return
        runs, buffer[:] = list(buffer), []
        async with self.client.pipeline(transaction=False) as pipe:
            for run in runs:
                pipe.xadd(
                    self.keys.history(name),
                    {"run": json.dumps(run, default=str)},
                    maxlen=HISTORY_KEPT,
                    approximate=True,
                )
            await pipe.execute()

    async def hook_runs(
        self,
        name: str,
        last: int | None = None,
        match: Callable[[dict[str, Any]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """The process's hook runs kept in Redis (its newest HISTORY_KEPT), oldest first:
        those ``match`` keeps (all without it), the newest ``last`` of them.

        Read newest first, HISTORY_PAGE at a time: a ``last`` stops reading once it has its
        runs, so ``last=10`` reads one page however many runs the stream keeps.
        """
        if name in self.held:
            await self._flush_history(name)
        wanted = HISTORY_KEPT if last is None else max(0, last)
        found: list[dict[str, Any]] = []
        read, top = 0, "+"
        while len(found) < wanted and read < HISTORY_KEPT:
            count = min(HISTORY_PAGE, HISTORY_KEPT - read)
            rows = await self.client.xrevrange(self.keys.history(name), max=top, count=count)
            for _, fields in rows:
                run = json.loads(fields["run"])
                if (match is None or match(run)) and len(found) < wanted:
                    found.append(run)
            read += len(rows)
            if len(rows) < count:
                break
            top = f"({rows[-1][0]}"  # exclusive: the page after the oldest entry read
        found.reverse()
        return found
