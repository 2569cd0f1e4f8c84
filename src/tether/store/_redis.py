"""Redis for a cluster of runtimes: the client, the key names and the fenced writes.

Every key of one cluster starts with its prefix (``tether`` unless told), so several clusters
(or test runs) share a Redis without meeting. Per process ``p``:

* ``{prefix}:q:{p}``         the stream of its events (consumer group ``GROUP``)
* ``{prefix}:attempts:{p}``  stream entry id -> attempts started (carried across hosts)
* ``{prefix}:dead:{p}``      event id -> dead letter (JSON)
* ``{prefix}:lease:{p}``     "<fencing token>:<host>", with a TTL; ``{prefix}:fence:{p}`` counts
* ``{prefix}:desired:{p}``   "stopped" while an operator has stopped it cluster-wide
* ``{prefix}:history:{p}``   its hook runs, a stream capped by length
* ``{prefix}:steps:{p}``     the step journal of its unfinished runs (see ``_redis_steps``), and
  ``{prefix}:conversation:{p}``, ``{prefix}:context:{p}`` (its state dict) and
  ``{prefix}:approvals:{p}``

and per cluster ``{prefix}:status`` (process -> JSON summary), ``{prefix}:host:{h}`` (a host's
heartbeat, with a TTL), ``{prefix}:cmd:{h}`` (requests for host ``h``), ``{prefix}:reply:{id}``,
``{prefix}:epoch`` (a random id, made again when Redis lost its data: a lease taken under one
epoch and lost under another was lost with the data, and so were its entries).

The writes a lease holder makes (acknowledge, dead-letter, count an attempt, renew, publish
its status and take it back, journal a step, the context or an approval) are Lua scripts that
first compare the lease with the holder's fencing token, so a host that lost its lease (paused,
partitioned, too slow) can change nothing; the script answers ``FENCED``.

A Redis that lost its data (restarted empty, a failover to an empty replica, ``FLUSHALL``)
loses the streams and their consumer group with it: ``ADD`` creates the group with the stream,
and a read or claim that finds the group gone creates it again (``NOGROUP`` heals).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .._urls import masked_url

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["ACQUIRE", "FENCED", "GROUP", "RENEW", "Keys", "Scripts", "connect", "is_nogroup"]

#: The consumer group every host reads a process's stream with.
GROUP: Final = "tether"
#: What a fenced script answers when the lease is no longer the caller's.
FENCED: Final = -1

_PREFIX: Final = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


def connect(url: str, *, timeout: float) -> Redis:
    """An asyncio Redis client for ``url`` whose every call gives up after ``timeout`` s.

    A call whose connection turns out closed is sent once more on a new one (after Redis
    restarted, every pooled connection is); one that timed out is not (it may have landed)."""
    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(
            f"cluster URL {masked_url(url)!r}: expected redis://host:port[/db], rediss://... or unix://..."
        )
    return Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry_on_timeout=False,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )


@dataclass(frozen=True, slots=True)
class Keys:
    """The key names of one cluster (see the module docstring)."""

    prefix: str = "tether"

    def __post_init__(self) -> None:
        if not _PREFIX.match(self.prefix):
            raise ValueError(
                f"cluster key prefix {self.prefix!r}: use 1-64 letters, digits or _ . : -"
            )

    def stream(self, process: str) -> str:
        return f"{self.prefix}:q:{process}"

    def attempts(self, process: str) -> str:
        return f"{self.prefix}:attempts:{process}"

    def dead(self, process: str) -> str:
        return f"{self.prefix}:dead:{process}"

    def lease(self, process: str) -> str:
        return f"{self.prefix}:lease:{process}"

    def fence(self, process: str) -> str:
        return f"{self.prefix}:fence:{process}"

    def desired(self, process: str) -> str:
        return f"{self.prefix}:desired:{process}"

    def history(self, process: str) -> str:
        return f"{self.prefix}:history:{process}"

    def steps(self, process: str) -> str:
        return f"{self.prefix}:steps:{process}"

    def conversation(self, process: str) -> str:
        return f"{self.prefix}:conversation:{process}"

    def context(self, process: str) -> str:
        return f"{self.prefix}:context:{process}"

    def approvals(self, process: str) -> str:
        return f"{self.prefix}:approvals:{process}"

    @property
    def epoch(self) -> str:
        return f"{self.prefix}:epoch"

    @property
    def status(self) -> str:
        return f"{self.prefix}:status"

    def host(self, host: str) -> str:
        return f"{self.prefix}:host:{host}"

    def commands(self, host: str) -> str:
        return f"{self.prefix}:cmd:{host}"

    def reply(self, request_id: str) -> str:
        return f"{self.prefix}:reply:{request_id}"


def is_nogroup(exc: BaseException) -> bool:
    """Whether ``exc`` is Redis saying a stream or its consumer group is gone (``NOGROUP``)."""
    return "NOGROUP" in f"{exc}"


# KEYS: lease, fence counter, epoch. ARGV: host, ttl ms, a new epoch id. {the new token, the
# epoch} (the new one if there was none), or false if the lease is held. (Public: the node's
# steward thread registers it on its own client.)
ACQUIRE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  epoch = ARGV[3]
  redis.call('SET', KEYS[3], epoch)
end
local n = redis.call('INCR', KEYS[2])
local token = n .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return {token, epoch}
"""
# KEYS: lease. ARGV: token, ttl ms. (Public: the node's renewal thread registers it itself.)
RENEW: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# KEYS: lease. ARGV: token.
_RELEASE: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1])
return 1
"""
# KEYS: lease, stream, attempts. ARGV: token, group, entry id.
_ACK: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('XACK', KEYS[2], ARGV[2], ARGV[3])
redis.call('XDEL', KEYS[2], ARGV[3])
redis.call('HDEL', KEYS[3], ARGV[3])
return 1
"""
# KEYS: lease, stream, attempts, dead. ARGV: token, group, entry id ('' for none), event id,
# the dead letter (JSON). Writes the dead letter and acknowledges its entry in one step.
_DEAD: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
if ARGV[3] ~= '' then
  redis.call('XACK', KEYS[2], ARGV[2], ARGV[3])
  redis.call('XDEL', KEYS[2], ARGV[3])
  redis.call('HDEL', KEYS[3], ARGV[3])
end
return 1
"""
# KEYS: lease, attempts. ARGV: token, entry id, attempts started.
_ATTEMPT: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
"""
# KEYS: stream. ARGV: max length (0: none), event (JSON), attempts, group. The entry id, or
# false when the stream holds max length entries already (queued or running). A stream that is
# not there (never made, or lost with Redis's data) is made with its group, read from the start.
_ADD: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('XGROUP', 'CREATE', KEYS[1], ARGV[4], '0', 'MKSTREAM')
end
local limit = tonumber(ARGV[1])
if limit > 0 and redis.call('XLEN', KEYS[1]) >= limit then return false end
return redis.call('XADD', KEYS[1], '*', 'event', ARGV[2], 'attempts', ARGV[3])
"""
# KEYS: lease, status. ARGV: token, process, summary (JSON). The holder's status, fenced.
_PUBLISH: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1
"""
# KEYS: status. ARGV: process, fencing token number, host. Deletes the process's status only
# when this holder wrote it (its token and host): never the summary of the host after it.
_UNPUBLISH: Final = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return 0 end
local ok, status = pcall(cjson.decode, raw)
if ok and tostring(status['fencing_token']) == ARGV[2] and status['host'] == ARGV[3] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return -1
"""


class Scripts:
    """The cluster's Lua scripts, registered on one client (loaded by Redis on first use)."""

    __slots__ = (
        "ack",
        "add",
        "attempt",
        "dead",
        "publish",
        "release",
        "renew",
        "unpublish",
    )

    def __init__(self, client: Redis) -> None:
        self.renew: Any = client.register_script(RENEW)
        self.release: Any = client.register_script(_RELEASE)
        self.ack: Any = client.register_script(_ACK)
        self.dead: Any = client.register_script(_DEAD)
        self.attempt: Any = client.register_script(_ATTEMPT)
        self.add: Any = client.register_script(_ADD)
        self.publish: Any = client.register_script(_PUBLISH)
        self.unpublish: Any = client.register_script(_UNPUBLISH)
