"""Agent processes: states, queue, workers, retries, dead letters, journal and triggers.

``__all__`` is the public API; the other names imported here are for tether's other packages,
which import processes through this module only, never through its private modules.
"""

from typing import TYPE_CHECKING, Any

from .._public import published
from ._changes import AppliedChange as AppliedChange
from ._config import MISSION_MAX_CHARS as MISSION_MAX_CHARS
from ._config import CronTrigger as CronTrigger
from ._config import EventTrigger as EventTrigger
from ._config import FileWatchTrigger as FileWatchTrigger
from ._config import OpenModeConfig as OpenModeConfig
from ._config import ProcessConfig as ProcessConfig
from ._config import RestartPolicy as RestartPolicy
from ._config import TriggerConfig as TriggerConfig
from ._config import WebhookTrigger as WebhookTrigger
from ._config import check_base_url as check_base_url
from ._config import check_mission as check_mission
from ._errors import NothingToRollBackError as NothingToRollBackError
from ._errors import ProcessBusyError as ProcessBusyError
from ._errors import ProcessError as ProcessError
from ._errors import ProcessStateError as ProcessStateError
from ._errors import QueueUnavailableError as QueueUnavailableError
from ._errors import SpawnRefusedError as SpawnRefusedError
from ._event import InvalidEventError as InvalidEventError
from ._event import TriggerEvent as TriggerEvent
from ._event import check_traceparent as check_traceparent
from ._event import current_event_id as current_event_id
from ._event import current_process as current_process
from ._journaling import JournalWrites as JournalWrites
from ._mcp import McpServerConfig as McpServerConfig
from ._mcp import McpServers as McpServers
from ._mcp import is_stdio as is_stdio
from ._mcp import repr_args as repr_args
from ._mcp import server_name as server_name
from ._names import validate_name as validate_name
from ._process import AgentProcess as AgentProcess
from ._process import ProcessState as ProcessState
from ._rewind import REWIND_WAIT as REWIND_WAIT

if TYPE_CHECKING:
    from ._stream_queue import StreamQueue as StreamQueue


def __getattr__(name: str) -> Any:
    # The Redis Streams queue (and the store it needs) is loaded by its first user only.
    if name == "StreamQueue":
        from ._stream_queue import StreamQueue

        return StreamQueue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentProcess",
    "CronTrigger",
    "EventTrigger",
    "FileWatchTrigger",
    "InvalidEventError",
    "McpServerConfig",
    "NothingToRollBackError",
    "OpenModeConfig",
    "ProcessBusyError",
    "ProcessConfig",
    "ProcessError",
    "ProcessState",
    "ProcessStateError",
    "QueueUnavailableError",
    "RestartPolicy",
    "SpawnRefusedError",
    "TriggerConfig",
    "TriggerEvent",
    "WebhookTrigger",
]

published(globals())
