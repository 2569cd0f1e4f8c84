"""Queue backends: where a process's events wait for a worker.

Two kinds, one interface (``asyncio.Queue``'s, which the workers use, plus the few calls below):

* ``MemoryQueue`` (the default): the events wait in this process's memory, as fast as an
  ``asyncio.Queue`` (it is one). A journal, when configured, is what survives the host.
* ``StreamQueue`` (``_stream_queue``): the events wait in a Redis stream, read through a
  consumer group by the host that holds the process's lease (see ``tether.cluster``); any
  host may add to it. What a worker takes is pending in the group until it is settled:

  - ``inject()`` adds the event (``XADD``) after its task_created hooks let it through; the
    holder reads it into a small local buffer (``prefetch`` entries) the workers take from;
  - when a run starts, its attempt number is written beside the entry (``running``), so a
    host that takes the process over counts that attempt, as journal recovery does;
  - after task_completed of a success the entry is acknowledged and deleted (``settled``); a
    dead letter is written to Redis and its entry acknowledged in one step (``dead``);
  - every one of those writes checks the lease's fencing token first: a host that lost its
    lease changes nothing (``on_fenced`` is told, and the cluster stops its copy), starts no
    further attempt, and runs no task_completed hook of an event it took (``holds``);
  - a read or claim that finds the stream's group gone (Redis lost its data) makes it again;
  - the next holder claims every entry left pending (``claim``: ``XAUTOCLAIM``), and entries
    another host read after it lost its lease once they are idle ``visibility`` seconds.

  At-least-once: an entry whose run ended but whose acknowledgement did not land (the host
  died in between, or was cut off) runs again on the next holder.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._event import TriggerEvent

__all__ = ["Item", "MemoryQueue"]

Item = tuple["TriggerEvent", int]


class MemoryQueue(asyncio.Queue[Item]):
    """The in-memory queue (the default): an ``asyncio.Queue`` of (event, attempts done), so
    this path costs what it always cost. A process with a ``StreamQueue`` keeps it in
    ``_stream`` as well, and only then makes the calls ``StreamQueue`` adds."""
