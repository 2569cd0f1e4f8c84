"""Errors of agent processes.

Exception tree::

    ProcessError                 base
    ├── ProcessStateError        the call does not fit the process's state (you called it wrong)
    └── SpawnRefusedError        a subagent spawn was refused (by a hook or a limit)
"""

from __future__ import annotations

__all__ = ["ProcessError", "ProcessStateError", "SpawnRefusedError"]


class ProcessError(Exception):
    """Base of every error an AgentProcess raises."""


class ProcessStateError(ProcessError):
    """The call is not allowed in the process's current state, or from where it was made."""


class SpawnRefusedError(ProcessError):
    """A subagent could not be spawned."""


for _cls in (ProcessError, ProcessStateError, SpawnRefusedError):
    _cls.__module__ = "tether"
