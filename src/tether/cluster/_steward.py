"""The steward: a node's placement and leases, from a thread of its own.

Every ``tick`` (TTL/5) s, with a Redis client of its own, the steward

1. writes the host's heartbeat and reads which hosts are live;
2. renews each lease the node holds, and reports one it could not renew for TTL/2 s, or
   found taken (fenced);
3. takes each free lease the node may take (its preferred host, see ``placement``, at once,
   any host once it has been free for a whole TTL), and hands it to the node's event loop,
   which claims the stream's pending entries and starts the process.

A thread, not a task: a loop kept busy by runs, hooks or a slow import delays none of it, so
a survivor takes a dead host's processes over within about TTL plus one tick however loaded
its loop is (the loop then claims and starts them as soon as it gets to it). The loop and the
thread share the ``Leases`` below, under its lock.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..store import ACQUIRE, FENCED, RENEW, Keys

__all__ = ["Held", "Leases", "Steward", "placement", "rendezvous"]

logger = logging.getLogger("tether.cluster")


def _score(name: str, host: str) -> bytes:
    import hashlib

    return hashlib.sha256(f"{name}\0{host}".encode()).digest()


def rendezvous(name: str, hosts: list[str]) -> str:
    """The host of ``hosts`` that prefers process ``name`` most (rendezvous hashing: each
    host prefers about as many processes, and a host joining or leaving moves only its own)."""
    return max(hosts, key=lambda h: _score(name, h))


def placement(names: list[str], hosts: list[str]) -> dict[str, str]:
    """The host of each process of ``names`` over the live ``hosts``: rendezvous hashing with
    bounded loads. In name order, each process goes to the host that prefers it most among
    those with room (each holds processes / hosts, rounded down, and the remainder one more
    each), so the hosts run as many processes each, give or take one (plain rendezvous put
    four of six processes on one of two hosts: that host bounded the cluster's throughput).
    Every host computes the same answer from
    the same names and live hosts; one process alone goes where ``rendezvous`` says."""
    if not hosts:
        return {}
    fewest, more = divmod(len(names), len(hosts))  # ``more`` hosts run one more than the rest
    load = dict.fromkeys(hosts, 0)
    placed: dict[str, str] = {}
    for name in sorted(names):
        host = max(
            (h for h in hosts if load[h] < fewest or (load[h] == fewest and more > 0)),
            key=lambda h: _score(name, h),
        )
        if load[host] == fewest:
            more -= 1
        load[host] += 1
        placed[name] = host
    return placed


@dataclass(slots=True)
class Held:
    """A lease this host holds."""

    token: str
    renewed: float  # time.monotonic() the last successful renewal was sent
    epoch: str = ""  # Redis's epoch when the lease was taken (see store._redis)
    acquired_at: float = field(default_factory=time.time)
    #: Whether the node was told this lease is lost (once per lease: a token may come back
    #: after Redis lost its data, its fencing counter with it).
    told: bool = False


class Leases:
    """What a node holds, shared by its event loop and its steward thread.

    A process goes free -> held and taking (the steward took its lease) -> held (the loop
    started it) -> leaving (the loop is stopping its copy; held no more) -> free. Only the
    steward makes a process held; only the loop makes it leave. Change both under ``lock``."""

    def __init__(self, host: str) -> None:
        self.lock = threading.Lock()
        self.held: dict[str, Held] = {}
        self.taking: set[str] = set()  # taken by the steward, being started by the loop
        self.leaving: set[str] = set()  # being stopped by the loop
        #: The live hosts (this one always among them), and how many ticks in a row each
        #: was seen live; replaced whole by the steward at each tick.
        self.live: list[str] = [host]
        self.seen: dict[str, int] = {}

    def snapshot(self) -> list[tuple[str, Held]]:
        with self.lock:
            return list(self.held.items())

    def is_free(self, name: str) -> bool:
        with self.lock:
            return name not in self.held and name not in self.leaving


class Steward(threading.Thread):
    """See the module docstring. ``acquired(name, token)`` and ``lost(name, why)`` are called
    from this thread: they hand the news to the node's loop."""

    def __init__(
        self,
        *,
        url: str,
        host: str,
        keys: Keys,
        ttl: float,
        names: list[str],
        leases: Leases,
        wanted: Callable[[str], bool],
        acquired: Callable[[str, str], None],
        lost: Callable[[str, str], None],
    ) -> None:
        super().__init__(name=f"cluster-{host}-steward", daemon=True)
        self.url, self.host, self.keys, self.ttl = url, host, keys, ttl
        self.names = list(names)
        self.leases = leases
        self.wanted = wanted
        self.acquired = acquired
        self.lost = lost
        self._halt = threading.Event()
        self._free_since: dict[str, float] = {}

    @property
    def tick(self) -> float:
        return self.ttl / 5

    def halt(self) -> None:
        """Stop at the end of the round under way (join() waits for it)."""
        self._halt.set()

    def run(self) -> None:
        from redis import Redis

        client = Redis.from_url(
            self.url,
            decode_responses=True,
            socket_timeout=self.tick,
            socket_connect_timeout=self.tick,
        )
        renew, acquire = client.register_script(RENEW), client.register_script(ACQUIRE)
        try:
            while not self._halt.is_set():
                try:
                    self._round(client, renew, acquire)
                except Exception:  # a bug must not end the thread: leases would lapse
                    logger.exception("cluster host %s: a placement round failed", self.host)
                self._halt.wait(self.tick)
        finally:
            client.close()

    def _round(self, client: Any, renew: Any, acquire: Any) -> None:
        from redis.exceptions import RedisError

        try:
            self._heartbeat(client)
        except (RedisError, OSError) as exc:
            logger.warning("cluster host %s: heartbeat failed: %s", self.host, exc)
        self._renew(renew)
        placed = placement(self.names, self.leases.live)
        for name in self.names:
            if self._halt.is_set():
                return
            try:
                self._take(client, acquire, name, placed.get(name))
            except (RedisError, OSError) as exc:
                logger.warning("cluster host %s: placing %s failed: %s", self.host, name, exc)
                return  # Redis away: the next round tries again

    def _heartbeat(self, client: Any) -> None:
        client.set(
            self.keys.host(self.host),
            json.dumps({"host": self.host, "pid": os.getpid(), "at": time.time()}),
            px=int(self.ttl * 1000),
        )
        live = sorted(key.rsplit(":", 1)[1] for key in client.scan_iter(self.keys.host("*")))
        leases = self.leases
        leases.seen = {h: leases.seen.get(h, 0) + 1 for h in live}
        leases.live = live if self.host in live else sorted([*live, self.host])

    def _renew(self, renew: Any) -> None:
        from redis.exceptions import RedisError

        ttl_ms = int(self.ttl * 1000)
        for name, held in self.leases.snapshot():
            sent = time.monotonic()
            try:
                answer = renew(keys=[self.keys.lease(name)], args=[held.token, ttl_ms])
            except (RedisError, OSError) as exc:
                if sent - held.renewed >= self.ttl / 2:
                    why = f"its lease was not renewed for {self.ttl / 2:g}s ({exc})"
                    self._tell(name, held, why)
                continue
            if answer == FENCED:
                self._tell(name, held, "its lease was taken (fenced)")
            else:
                held.renewed = sent
        for name, held in self.leases.snapshot():  # also when a call hung
            if time.monotonic() - held.renewed >= self.ttl / 2:
                self._tell(name, held, f"its lease was not renewed for {self.ttl / 2:g}s")

    def _take(self, client: Any, acquire: Any, name: str, preferred: str | None) -> None:
        """Take the lease of ``name`` if it is free and this host may (see the module
        docstring: ``preferred`` is the host placement wants it on); the node's loop then
        starts the process."""
        if not self.leases.is_free(name) or not self.wanted(name):
            self._free_since.pop(name, None)
            return
        if client.get(self.keys.desired(name)) == "stopped":
            return
        if client.exists(self.keys.lease(name)):
            self._free_since.pop(name, None)
            return
        now = time.monotonic()
        free_since = self._free_since.setdefault(name, now)
        if preferred != self.host and now - free_since < self.ttl:
            return
        taken = acquire(
            keys=[self.keys.lease(name), self.keys.fence(name), self.keys.epoch],
            args=[self.host, int(self.ttl * 1000), uuid.uuid4().hex],
        )
        if not taken:
            return
        token, epoch = taken
        self._free_since.pop(name, None)
        with self.leases.lock:
            self.leases.held[name] = Held(token, now, epoch)
            self.leases.taking.add(name)
        self.acquired(name, token)

    def _tell(self, name: str, held: Held, why: str) -> None:
        if not held.told:
            held.told = True
            self.lost(name, why)
