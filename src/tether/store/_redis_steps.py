"""The step journal of a clustered process, in the cluster's Redis (``_steps`` is one host's).

What ``StepStore`` keeps in SQLite, kept under the cluster's keys (see ``_redis.Keys``), so the
host that takes a process over finds it:

``steps:{p}``         a hash: ``<event id>\\0<step>`` -> ``{"state", "data", "at"}`` (JSON), one
                      field per step of an unfinished run
``conversation:{p}``  a hash: seq -> message (JSON text), the conversation buffer
``context:{p}``       the state dict (JSON text)
``approvals:{p}``     a hash: the call's idempotency key -> ``{"request", "decision"}`` (JSON)

Every write is a Lua script that first compares the process's lease with the holder's fencing
token (``token()``, the stream queue's): a host that lost the lease writes nothing, and the
write raises ``StepsFenced`` (a stale holder resumed after a pause cannot overwrite the steps
of the run its successor resumed).

The calls are synchronous, as ``StepStore``'s, and all run on one thread of the store's own,
in the order they were made (``submit``): a call made on another thread (a stop's last writes,
made on the event loop) is handed to it and waited for, ``CALL_WAIT`` seconds at most, so it
never lands ahead of a write queued before it. A write made that way that fails is logged,
not raised (a stop goes on); a read raises.

Pruning: steps are forgotten when their run ends (``forget``); those of runs a crash cut off
that will never resume are dropped when a host takes the process over (``prune_except``: every
event still unfinished is in the stream's pending entries then, claimed by the new holder).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeVar

from .._urls import masked_url
from ..errors import TetherError

if TYPE_CHECKING:
    from redis import Redis

    from ._redis import Keys
    from ._steps import Change, Row

__all__ = ["CALL_WAIT", "RedisStepStore", "StepsFenced", "connect_sync"]

logger = logging.getLogger("tether.cluster")

#: Seconds a call made off the store's thread waits for it (the socket timeouts bound each).
CALL_WAIT: Final = 10.0

_P = ParamSpec("_P")
_T = TypeVar("_T")

#: Between an event's key and a step's name in the steps hash's fields.
_SEP: Final = "\x00"

# KEYS: lease, steps, context. ARGV: token, the state ('' for unchanged), then field, value
# pairs. The steps of one write and the state land together.
_WRITE: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2]) end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
return 1
"""
# KEYS: lease, steps. ARGV: token, then event key, time pairs: the steps of each event written
# at or before its time go (not those of a later run of the event).
_FORGET: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local fields = redis.call('HGETALL', KEYS[2])
for j = 2, #ARGV, 2 do
  local prefix = ARGV[j] .. '\\0'
  local at = tonumber(ARGV[j + 1])
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, #prefix) == prefix and cjson.decode(fields[i + 1])['at'] <= at then
      redis.call('HDEL', KEYS[2], fields[i])
    end
  end
end
return 1
"""
# KEYS: lease, steps. ARGV: token, then the event keys kept: the steps of any other event go.
_PRUNE: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local kept = {}
for i = 2, #ARGV do kept[ARGV[i]] = true end
local dropped = 0
for _, field in ipairs(redis.call('HKEYS', KEYS[2])) do
  local cut = string.find(field, '\\0', 1, true)
  if cut == nil or not kept[string.sub(field, 1, cut - 1)] then
    redis.call('HDEL', KEYS[2], field)
    dropped = dropped + 1
  end
end
return dropped
"""
# KEYS: lease, conversation, context. ARGV: token, the state ('' for unchanged), the changes
# (JSON: [clear, drop_before or null, [[seq, message], ...]] each), applied in order.
_CONTEXT: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
for _, change in ipairs(cjson.decode(ARGV[3])) do
  if change[1] then
    redis.call('DEL', KEYS[2])
  elseif change[2] ~= cjson.null then
    for _, seq in ipairs(redis.call('HKEYS', KEYS[2])) do
      if tonumber(seq) < change[2] then redis.call('HDEL', KEYS[2], seq) end
    end
  end
  for _, added in ipairs(change[3]) do
    redis.call('HSET', KEYS[2], string.format('%d', added[1]), added[2])
  end
end
if ARGV[2] ~= '' then redis.call('SET', KEYS[3], ARGV[2]) end
return 1
"""
# KEYS: lease, approvals. ARGV: token, the call's key, the approval (JSON; '' deletes it).
_APPROVAL: Final = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if ARGV[3] == '' then redis.call('HDEL', KEYS[2], ARGV[2])
else redis.call('HSET', KEYS[2], ARGV[2], ARGV[3]) end
return 1
"""


class StepsFenced(TetherError, RuntimeError):
    """The process's lease is not this host's (any longer): the write was not made."""


def connect_sync(url: str, *, timeout: float) -> Redis:
    """A blocking Redis client for ``url`` (for the step stores' threads), every call giving
    up after ``timeout`` s; a call whose connection turns out closed is sent once more."""
    from redis import Redis
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.retry import Retry

    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(
            f"cluster URL {masked_url(url)!r}: expected redis://, rediss:// or unix://"
        )
    return Redis.from_url(
        url,
        decode_responses=True,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry_on_timeout=False,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )


def _on_thread(
    method: Callable[Concatenate[RedisStepStore, _P], _T],
) -> Callable[Concatenate[RedisStepStore, _P], _T]:
    """Run a read on the store's thread (see the module docstring): called there, at once;
    called elsewhere, handed over and waited for (its error raised)."""

    @functools.wraps(method)
    def serial(store: RedisStepStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if store.on_thread():
            return method(store, *args, **kwargs)
        return store.submit(method, store, *args, **kwargs).result(CALL_WAIT)

    return serial


def _written_on_thread(
    method: Callable[Concatenate[RedisStepStore, _P], None],
) -> Callable[Concatenate[RedisStepStore, _P], None]:
    """Run a write on the store's thread, as ``_on_thread``; one handed over that fails is
    logged, not raised (a stop's last writes: the stop goes on), and one handed over once the
    lease is lost is not made (the thread may be stuck on a Redis that does not answer: the
    caller, on the event loop, does not wait for it)."""

    @functools.wraps(method)
    def serial(store: RedisStepStore, /, *args: _P.args, **kwargs: _P.kwargs) -> None:
        if store.on_thread():
            method(store, *args, **kwargs)
            return
        try:
            store.check_held(method.__name__)
            store.submit(method, store, *args, **kwargs).result(CALL_WAIT)
        except Exception as exc:
            logger.warning(
                "process %s: %s of its step journal in Redis failed: %s",
                store.process,
                method.__name__,
                f"{type(exc).__name__}: {exc}",
            )

    return serial


class RedisStepStore:
    """The steps, conversation, state and approvals of one clustered process (see the module
    docstring); ``token`` answers the holder's fencing token (None: not held here)."""

    def __init__(
        self,
        client: Redis,
        keys: Keys,
        process: str,
        *,
        token: Callable[[], str | None],
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.process = process
        self.path = f"redis {keys.prefix}"  # (named in errors, as a StepStore's file)
        self._client: Any = client  # (replies typed loosely)
        self._token = token
        self._key: Callable[[str], str] = redact if redact is not None else str
        self._lease = keys.lease(process)
        self._steps = keys.steps(process)
        self._conversation = keys.conversation(process)
        self._context = keys.context(process)
        self._approvals = keys.approvals(process)
        self._write = client.register_script(_WRITE)
        self._forget = client.register_script(_FORGET)
        self._prune = client.register_script(_PRUNE)
        self._save_context = client.register_script(_CONTEXT)
        self._approval = client.register_script(_APPROVAL)
        self._lock = threading.Lock()
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        #: On the store's threads: ``mine``, and the token of the call running (see submit).
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"<RedisStepStore {self.process} {self.path}>"

    # -- the store's thread ------------------------------------------------------------------

    def submit(
        self, call: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> concurrent.futures.Future[_T]:
        """Run ``call(*args)`` on the store's thread, after every call submitted before it,
        under the lease token held now: a write that runs once the lease was lost, or taken
        again (a later token), lands nothing (``StepsFenced``, without a round trip)."""
        token = self._token()

        def under_token() -> _T:
            self._local.token = token
            try:
                return call(*args, **kwargs)
            finally:
                del self._local.token

        with self._lock:
            if self._thread is None:
                self._thread = concurrent.futures.ThreadPoolExecutor(
                    1, f"tether-steps-{self.process}", initializer=self._mark_thread
                )
            return self._thread.submit(under_token)

    def _mark_thread(self) -> None:
        self._local.mine = True

    def on_thread(self) -> bool:
        """Whether this is the store's thread."""
        return bool(getattr(self._local, "mine", False))

    def close(self) -> None:
        """End the thread once the calls submitted are done, ``CALL_WAIT`` seconds at most
        (those left then land nothing once the lease is lost: see ``submit``); a later call
        starts another."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        if not self.on_thread() and self._token() is not None:  # (lost: nothing lands)
            drained = thread.submit(lambda: None)
            with contextlib.suppress(concurrent.futures.TimeoutError):
                drained.result(CALL_WAIT)
        thread.shutdown(wait=False)

    def stored_id(self, event_id: str) -> str:
        return self._key(event_id)

    def _fenced(self, answer: Any, what: str) -> None:
        if answer == -1:
            raise StepsFenced(f"process {self.process}: {what}: its lease is another host's")

    def check_held(self, what: str) -> None:
        """StepsFenced when the lease is not held here (any longer)."""
        if self._token() is None:
            raise StepsFenced(f"process {self.process}: {what}: its lease is not held here")

    def _held(self, what: str) -> str:
        """The token to write under: the lease's held when the call was submitted, while
        it is still held (else StepsFenced)."""
        token = self._token()
        if token is None or token != getattr(self._local, "token", token):
            raise StepsFenced(f"process {self.process}: {what}: its lease is not held here")
        return token

    # -- steps -------------------------------------------------------------------------------

    @_written_on_thread
    def write(
        self,
        event_id: str,
        rows: list[Row],
        at: float,
        *,
        state: dict[str, Any] | None = None,
        proceed: Callable[[], bool] | None = None,
    ) -> None:
        """Journal ``rows`` ((step, state, data) each) of the run of ``event_id`` as of ``at``,
        with the process's ``state`` dict when given, together (see ``StepStore.write``)."""
        if proceed is not None and not proceed():
            return
        token = self._held("journaling steps")
        key = self._key(event_id)
        pairs: list[str] = []
        for step, kind, data in rows:
            value = {"state": kind, "data": data, "at": at}
            pairs += [f"{key}{_SEP}{step}", json.dumps(value, default=str)]
        saved = "" if state is None else json.dumps(state, default=str)
        answer = self._write(
            keys=[self._lease, self._steps, self._context], args=[token, saved, *pairs]
        )
        self._fenced(answer, "journaling steps")

    def write_now(
        self, event_id: str, rows: list[Row], state: dict[str, Any] | None = None
    ) -> bool:
        """Never at once on the caller's thread (a round trip to Redis): False, the caller
        hands the write to the store's thread."""
        return False

    @_written_on_thread
    def forget(self, ended: list[tuple[str, float]]) -> None:
        """The runs of ``ended`` ((event_id, when it ended) each) ended: their steps go."""
        token = self._held("forgetting steps")
        args: list[Any] = [token]
        for event_id, at in ended:
            args += [self._key(event_id), repr(at)]
        self._fenced(self._forget(keys=[self._lease, self._steps], args=args), "forgetting steps")

    @_on_thread
    def steps(self, event_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
        """The journaled steps of the run of ``event_id``, in the run's order."""
        prefix = f"{self._key(event_id)}{_SEP}"
        found = []
        for field, raw in self._client.hgetall(self._steps).items():
            if field.startswith(prefix):
                value = json.loads(raw)
                found.append((field[len(prefix) :], value["state"], value["data"]))
        found.sort(key=lambda row: _order(row[0]))
        return {step: (state, data) for step, state, data in found}

    def prune(self) -> None:
        """Nothing at a stop: what a crash left is pruned at the next takeover."""

    @_written_on_thread
    def prune_except(self, event_ids: list[str]) -> None:
        """Forget the steps of every event but ``event_ids`` (those a takeover claimed: the
        runs that may resume)."""
        token = self._held("pruning steps")
        kept = [self._key(event_id) for event_id in event_ids]
        dropped = self._prune(keys=[self._lease, self._steps], args=[token, *kept])
        self._fenced(dropped, "pruning steps")

    # -- context -----------------------------------------------------------------------------

    @_written_on_thread
    def save_context(self, changes: list[Change], state: str | None) -> None:
        """Apply ``changes`` to the stored conversation and store ``state`` (JSON text; None:
        unchanged), together (see ``StepStore.save_context``)."""
        token = self._held("saving the conversation")
        # The messages stay JSON text inside the changes' JSON (stored as given).
        encoded = json.dumps([[clear, drop, added] for clear, drop, added in changes])
        answer = self._save_context(
            keys=[self._lease, self._conversation, self._context],
            args=[token, state or "", encoded],
        )
        self._fenced(answer, "saving the conversation")

    @_on_thread
    def context(self) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, Any] | None]:
        """The stored conversation ((seq, message) each, in order) and state (None: none)."""
        rows = self._client.hgetall(self._conversation)
        messages = sorted((int(seq), json.loads(message)) for seq, message in rows.items())
        state = self._client.get(self._context)
        return messages, None if state is None else json.loads(state)

    # -- approvals ---------------------------------------------------------------------------

    @_written_on_thread
    def save_approval(
        self, key: str, request: dict[str, Any], decision: dict[str, Any] | None
    ) -> None:
        """Journal the approval of the call ``key``: what it asks, its answer once given."""
        token = self._held("journaling an approval")
        value = json.dumps({"request": request, "decision": decision}, default=str)
        answer = self._approval(keys=[self._lease, self._approvals], args=[token, key, value])
        self._fenced(answer, "journaling an approval")

    @_written_on_thread
    def forget_approval(self, key: str) -> None:
        """The call ``key`` acted on its answer (or the wait ended): its approval goes."""
        token = self._held("forgetting an approval")
        answer = self._approval(keys=[self._lease, self._approvals], args=[token, key, ""])
        self._fenced(answer, "forgetting an approval")

    @_on_thread
    def approvals(self) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
        """(key, request, decision or None) of each approval journaled, oldest first."""
        rows = [(k, json.loads(v)) for k, v in self._client.hgetall(self._approvals).items()]
        rows.sort(key=lambda row: float(row[1]["request"].get("asked_at") or 0))
        return [(key, value["request"], value["decision"]) for key, value in rows]


def _order(step: str) -> tuple[int, int]:
    """Where ``step`` comes in its run: ``model:<turn>`` before ``tool:<turn>:<index>``."""
    parts = step.split(":")
    if parts[0] == "model":
        return int(parts[1]), -1
    return int(parts[1]), int(parts[2])
