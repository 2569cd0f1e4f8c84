"""The states an agent process goes through, what it is now (LiveState), and what its name
may be."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agent import AgentLoop, Observer
    from ..models import Model
    from ._config import ProcessConfig
    from ._event import TriggerEvent
    from ._stream_queue import StreamQueue

__all__ = ["LiveState", "ProcessState", "accepts_events"]


class ProcessState(StrEnum):
    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


ProcessState.__module__ = "tether"


@dataclass(slots=True, eq=False, weakref_slot=True)
class LiveState:
    """What one process is now: the state half of its state/dependencies split (as
    pydantic-ai's ``GraphAgentState``). The process's collaborators (its intake, event runner,
    dead letters, supervision, teardown, rewinds, configuration changes) are each handed this
    one object and read it at each use, for all of it changes while the process lives: a
    configuration change replaces ``config``, a cluster sets ``stream``, a start sets the
    loops and the model, a stop ``stopping``.
    """

    #: The configuration now (ConfigChanges replaces it as a whole).
    config: ProcessConfig
    #: Where its events wait (a cluster's Redis stream replaces it before the first start).
    queue: asyncio.Queue[tuple[TriggerEvent, int]]
    state: ProcessState = ProcessState.CREATED
    #: A stop, or a crash's pause, is under way: workers take no new event.
    stopping: bool = False
    #: The cluster's Redis stream, when the process keeps its events there.
    stream: StreamQueue | None = None
    #: Told of each task, run, model call, tool call and hook run (see AgentProcess.observe).
    observer: Observer | None = None
    #: The asyncio loop the process runs in, from start() to the end of its stop.
    running_loop: asyncio.AbstractEventLoop | None = None
    #: The agent loop its runs go through (None before the first start).
    agent_loop: AgentLoop | None = None
    #: The model client its runs call (None before the first start and once closed).
    model: Model | None = None

    @property
    def ending(self) -> bool:
        """Whether a stop (or a crash's teardown) is under way: it wins over a restart."""
        return self.stopping or self.state == ProcessState.STOPPING

    def in_loop(self) -> bool:
        """Whether the process runs in an asyncio loop now (from start() to its stop's end)."""
        return self.running_loop is not None


def accepts_events(state: ProcessState, *, restarting: bool) -> bool:
    """Whether inject() queues events: created, starting or running, or failed with a restart
    coming (the queue waits for it)."""
    return state in (ProcessState.CREATED, ProcessState.STARTING, ProcessState.RUNNING) or (
        state == ProcessState.FAILED and restarting
    )
