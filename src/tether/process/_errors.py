"""Errors of agent processes.

Exception tree::

    TetherError  (the root of every tether error: tether/errors.py draws the whole tree)
    └── ProcessError                 base
        ├── ProcessStateError        the call does not fit the process's state (you called it wrong)
        │   └── NothingToRollBackError  rollback() with no applied configuration change to undo
        ├── ProcessBusyError         runs in flight did not finish in time (it is busy)
        ├── QueueUnavailableError    the queue cannot take an event now (a cluster's Redis is away)
        └── SpawnRefusedError        a subagent spawn was refused (by a hook or a limit)
"""

from __future__ import annotations

from ..errors import TetherError

__all__ = [
    "NothingToRollBackError",
    "ProcessBusyError",
    "ProcessError",
    "ProcessStateError",
    "QueueUnavailableError",
    "SpawnRefusedError",
]


class ProcessError(TetherError):
    """Base of every error an AgentProcess raises."""


class ProcessStateError(ProcessError):
    """The call is not allowed in the process's current state, or from where it was made."""


class NothingToRollBackError(ProcessStateError):
    """rollback() found no applied configuration change to undo."""


class ProcessBusyError(ProcessError):
    """The process kept running tasks past the time the call was willing to wait."""


class QueueUnavailableError(ProcessError):
    """inject() could not queue the event: the cluster's Redis did not answer. The event is not
    queued (nor dead-lettered): retry later (the API answers 503 with Retry-After)."""


class SpawnRefusedError(ProcessError):
    """A subagent could not be spawned."""


for _cls in (
    NothingToRollBackError,
    ProcessBusyError,
    ProcessError,
    ProcessStateError,
    QueueUnavailableError,
    SpawnRefusedError,
):
    _cls.__module__ = "tether"
