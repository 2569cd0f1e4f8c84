"""ClusterNode: one host of a cluster of runtimes that share a Redis.

Every host loads the same processes; each process runs on exactly one host at a time, the one
holding its lease (``{prefix}:lease:{p}``: a fencing token and the host, with a TTL).

* Placement: a free lease is taken first by the process's preferred host (rendezvous hashing
  over the live hosts with bounded loads, so each host prefers as many, give or take one), by
  any host once it has been free for a whole TTL; a holder hands a process over to its
  preferred host once that host has been live for two ticks, so a cluster that starts one
  host at a time ends up spread.
* Placement and renewal: every ``ttl / 5`` s, from a thread of its own (``_steward``: a busy
  event loop delays neither). A holder that could not renew for ``ttl / 2`` s (a partition, a
  stalled Redis) stops its copy on its own, before the TTL runs out and another host may start
  one; so does a holder whose write found the token changed (a fenced write).
* Every write a holder makes for a process is fenced by its token (the status hash too), and
  a holder checks its lease before a run's task_completed hooks: a host resumed after a pause
  past its lease runs none for a run that is another host's now.
* Takeover: the next holder claims what the stream holds pending (see ``StreamQueue.claim``)
  and starts the process; its session_start's ``recovered`` says what was reclaimed.
* Durable runs (``durable_steps``, on unless turned off): each run's steps, the conversation,
  the state dict and the pending approvals are journaled in Redis, fenced by the holder's token
  (see ``_steps``); the next holder restores them and resumes the runs it reclaimed from their
  last finished step (``recovered``'s ``resumed``).
* A process stopped by an operator (the API or CLI, on any host) stays stopped cluster-wide
  (``{prefix}:desired:{p}``) until started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from .._urls import masked_in
from ..errors import TetherError
from ..process import ProcessState
from ..store import FENCED, Keys, Scripts, connect_redis
from ._steward import Held, Leases, Steward, placement, rendezvous

if TYPE_CHECKING:
    from ..hooks import HookRun
    from ..process import AgentProcess, ProcessConfig, StreamQueue
    from ..runtime import AgentRuntime
    from ._steps import RedisWrites

__all__ = ["ClusterError", "ClusterNode", "cluster_config", "placement", "rendezvous"]

logger = logging.getLogger("tether.cluster")

#: Hook runs kept per process in its Redis history stream (approximately: MAXLEN ~).
HISTORY_KEPT: Final = 10_000
#: Entries of a history stream read at once (see ClusterNode.hook_runs).
HISTORY_PAGE: Final = 500
#: What a request forwarded to another host waits for its answer, in seconds.
FORWARD_TIMEOUT: Final = 30.0
#: Seconds a reply waits in Redis for the host that asked.
_REPLY_TTL: Final = 60


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


def _number(token: str) -> int:
    """The fencing number of a lease token ("<number>:<host>")."""
    return int(token.split(":", 1)[0])


class ClusterError(TetherError, RuntimeError):
    """The cluster cannot do what was asked (Redis unreachable, no host answers)."""


def cluster_config(config: ProcessConfig, ttl: float) -> ProcessConfig:
    """``config`` as a clustered process runs it: the stream holds its events and Redis its
    steps, so it has no journal file; its stop_timeout is at most ``ttl / 4``, so that a host
    that lost the lease has stopped its copy before another host may start one."""
    update: dict[str, Any] = {"journal_path": None}
    if config.stop_timeout > ttl / 4:
        update["stop_timeout"] = ttl / 4
    if config.journal_path:
        logger.warning("a clustered process keeps its events in Redis: journal_path is ignored")
    return config.model_copy(update=update)


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
        # Redis replies are typed loosely (Any).
        self.client: Any = connect_redis(url, timeout=max(2.0, lease_ttl / 2))
        #: For the reads that block waiting for entries (a longer socket timeout).
        self.reader: Any = connect_redis(url, timeout=max(2.0, lease_ttl / 2) + 1.0)
        self.scripts = Scripts(self.client)
        #: The ASGI app forwarded requests are served by (the control API sets it).
        self.local_app: Any = None
        self.api_token: str | None = None
        #: The leases this host holds, shared with the steward thread (see ``_steward``).
        self.leases = Leases(self.host)
        self.held = self.leases.held
        self._queues: dict[str, StreamQueue] = {}
        #: The step journal of each process (with ``durable_steps``), and its blocking client.
        self._steps: dict[str, RedisWrites] = {}
        self._steps_client: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._changes: set[asyncio.Task[None]] = set()
        self._history: dict[str, list[dict[str, Any]]] = {}
        self._stopped = False
        self._steward: Steward | None = None

    def __repr__(self) -> str:
        return f"<ClusterNode {self.host} holds={sorted(self.held)}>"

    @property
    def tick(self) -> float:
        """Seconds between two placement rounds (heartbeat, renewals, takeovers)."""
        return self.ttl / 5

    # -- joining and leaving -----------------------------------------------------------------

    async def start(self) -> None:
        """Join: check Redis, take over the runtime's processes' queues, start the loops."""
        from ..process import StreamQueue

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
            queue.fresh = self._fresh_callback(process.name)
            self._queues[process.name] = queue
            if process.config.durable_steps:
                self._steps[process.name] = self._step_journal(process, queue)
            self._record_history(process)
        loop = asyncio.get_running_loop()

        def in_loop(call: Callable[[str, str], None]) -> Callable[[str, str], None]:
            def hand(name: str, detail: str) -> None:
                with contextlib.suppress(RuntimeError):  # the loop closed: nothing runs anyway
                    loop.call_soon_threadsafe(call, name, detail)

            return hand

        self._steward = Steward(
            url=self.url,
            host=self.host,
            keys=self.keys,
            ttl=self.ttl,
            names=list(self._queues),
            leases=self.leases,
            wanted=lambda name: not self._stopped and name in self._queues,
            acquired=in_loop(self._acquired),
            lost=in_loop(self._lost),
        )
        self._steward.start()
        self._tasks = [
            loop.create_task(self._tend(), name=f"cluster-{self.host}-tend"),
            loop.create_task(self._serve_requests(), name=f"cluster-{self.host}-requests"),
        ]

    def _step_journal(self, process: AgentProcess, queue: StreamQueue) -> RedisWrites:
        """Where ``process``'s durable runs write while this host holds it (see _steps)."""
        from ..store import RedisStepStore, connect_sync
        from ._steps import RedisWrites

        if self._steps_client is None:
            self._steps_client = connect_sync(self.url, timeout=max(2.0, self.ttl / 2))
        store = RedisStepStore(
            self._steps_client,
            self.keys,
            process.name,
            token=lambda: queue.token,
            redact=process.redactor.declared.text,
        )
        fenced = self._fenced_callback(process.name)
        return RedisWrites(process.name, process.redactor, store, fenced)

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
        if self._steward is not None:  # (no lease taken from now on)
            self._steward.halt()
            # Its round ends soon, or within its calls' timeouts while Redis does not answer;
            # not waited for longer (a lease it takes meanwhile expires after the TTL).
            await asyncio.to_thread(self._steward.join, self.ttl)
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
        for writes in self._steps.values():
            await asyncio.to_thread(writes.store.close)
        if self._steps_client is not None:
            self._steps_client.close()

    async def __aenter__(self) -> ClusterNode:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- placement ---------------------------------------------------------------------------

    async def _tend(self) -> None:
        """Each tick, in the loop: what the processes held here need (an operator's stop, a
        hand-over, the status); the steward thread takes and renews the leases."""
        while not self._stopped:  # (also when a stop's cancellation was lost)
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis away: the steward fences what cannot renew
                logger.warning("cluster host %s: %s", self.host, exc)
            await asyncio.sleep(self.tick)

    def preferred(self, name: str) -> str | None:
        """The live host that should run process ``name`` (see ``placement``)."""
        return self._placement().get(name)

    def _placement(self) -> dict[str, str]:
        return placement(list(self._queues), self.leases.live)

    async def _round(self) -> None:
        leases = self.leases
        placed = self._placement()
        for process in self.runtime:
            name = process.name
            if name not in self._queues or name in leases.leaving or name in leases.taking:
                continue
            if self._queues[name].unsure is not None:  # a lease lost while Redis was away
                self._queues[name].resolve(await self.client.get(self.keys.epoch))
                continue  # (the steward may have taken the lease meanwhile: next round)
            held = self.held.get(name)
            if held is None:  # whether inject() adds events: the cluster runs the process
                stopped = await self.client.get(self.keys.desired(name)) == "stopped"
                self._queues[name].accepting = not stopped
                continue
            if process.state == ProcessState.STOPPED:  # an operator stopped it here
                await self.client.set(self.keys.desired(name), "stopped")
                self._queues[name].accepting = False
                self._change(self._give_up(name, lost=False, reason="stopped"))
                continue
            preferred = placed.get(name)
            if preferred not in (None, self.host) and leases.seen.get(preferred or "", 0) >= 2:
                self._change(self._give_up(name, lost=False, reason="handed over"))
                continue
            await self._publish(process, held)

    def _acquired(self, name: str, token: str) -> None:
        """The steward took the lease of ``name`` (called in the loop): start it here."""
        process = self.runtime.get(name)
        if self._stopped or process is None:  # stop() gives it back
            self.leases.taking.discard(name)
            return
        self._change(self._take(process, token))

    def _change(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._changes.add(task)
        task.add_done_callback(self._changes.discard)

    async def _take(self, process: AgentProcess, token: str) -> None:
        """Claim the stream's pending entries, then start the process here."""
        queue = self._queues[process.name]
        name = process.name
        try:  # (taking: its state says nothing of an operator until it started)
            if queue.unsure is not None:  # what the last lease left, first
                queue.resolve(await self.client.get(self.keys.epoch))
            # Redis's dead letters first: claim() may add one (an entry out of attempts).
            process.dead_letters[:] = await queue.dead_letters()
            recovered = await queue.claim(token, process.config.max_retries)
            writes = self._steps.get(name)
            if writes is not None:
                process.use_steps(writes.store, writes)
                # The runs that will not resume: their steps go (housekeeping: retried at
                # the next takeover when it fails).
                kept = recovered["event_ids"]
                try:
                    await asyncio.wrap_future(writes.store.submit(writes.store.prune_except, kept))
                except Exception as exc:
                    logger.warning("process %s: pruning its steps failed: %s", name, exc)
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
            self.leases.taking.discard(name)

    async def _give_up(self, name: str, *, lost: bool, reason: str) -> None:
        """Stop this host's copy of ``name``; release the lease unless it is lost already.

        Events queued or cut off here stay in the stream for the next holder."""
        process = self.runtime.get(name)
        queue = self._queues.get(name)
        with self.leases.lock:
            if name in self.leases.leaving:
                return
            held = self.held.pop(name, None)
            if held is None or process is None or queue is None:
                return
            self.leases.leaving.add(name)
        try:
            if lost:
                queue.fence()
                lost_data = await self._lost_with_data(held)
                if lost_data:
                    queue.orphan()  # what it leaves is added to the stream again
                elif lost_data is None:  # told once Redis answers again (see _round)
                    queue.unsure = held.epoch
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
            with contextlib.suppress(Exception):  # only the status this holder wrote
                await self.scripts.unpublish(
                    keys=[self.keys.status], args=[name, _number(held.token), self.host]
                )
            logger.warning("cluster host %s no longer runs %s (%s)", self.host, name, reason)
        finally:
            with self.leases.lock:
                self.leases.leaving.discard(name)

    async def _lost_with_data(self, held: Held) -> bool | None:
        """Whether Redis lost its data since ``held`` was taken (its epoch changed or went):
        then so did the stream's entries this host holds. None: Redis does not answer."""
        try:
            epoch = await self.client.get(self.keys.epoch)
        except Exception:
            return None
        if epoch != held.epoch:
            logger.error("cluster host %s: Redis lost its data (a new epoch)", self.host)
            return True
        return False

    def _lost(self, name: str, why: str) -> None:
        """The lease of ``name`` is gone, or may be soon (called in the event loop)."""
        held = self.held.get(name)
        if held is None or name in self.leases.leaving or self._stopped:
            return
        logger.error("cluster host %s stops %s: %s", self.host, name, why)
        self._queues[name].fence()  # at once: no acknowledgement from here on
        self._change(self._give_up(name, lost=True, reason="lease lost"))

    def _fenced_callback(self, name: str) -> Any:
        def fenced() -> None:
            self._lost(name, "a write found its lease taken (fenced)")

        return fenced

    def _fresh_callback(self, name: str) -> Callable[[], bool]:
        def fresh() -> bool:
            """Whether the lease of ``name`` was renewed less than ttl/2 s ago with the queue's
            token: it cannot have expired yet (nor passed to another host)."""
            held, queue = self.held.get(name), self._queues[name]
            return (
                held is not None
                and held.token == queue.token
                and time.monotonic() - held.renewed < self.ttl / 2
            )

        return fresh

    async def _publish(self, process: AgentProcess, held: Held) -> None:
        status = process.redactor.value(process.status())
        status.update(
            host=self.host,
            fencing_token=_number(held.token),
            updated_at=time.time(),
            stream_length=await self.client.xlen(self.keys.stream(process.name)),
        )
        answer = await self.scripts.publish(
            keys=[self.keys.lease(process.name), self.keys.status],
            args=[held.token, process.name, json.dumps(status)],
        )
        if answer == FENCED:
            self._lost(process.name, "publishing its status found its lease taken (fenced)")
            return
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

    async def pending_approvals(self, name: str) -> list[dict[str, Any]]:
        """The approvals of process ``name`` journaled in Redis and not answered yet, oldest
        first (what they ask, redacted when journaled): what its next holder will wait on."""
        rows = await self.client.hgetall(self.keys.approvals(name))
        asked = [json.loads(raw) for raw in rows.values()]
        pending = [a["request"] for a in asked if a.get("decision") is None]
        return sorted(pending, key=lambda request: float(request.get("asked_at") or 0))

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
