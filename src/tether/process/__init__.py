"""Agent processes: states, queue, workers, retries, dead letters, journal and triggers."""

from ._config import CronTrigger as CronTrigger
from ._config import EventTrigger as EventTrigger
from ._config import FileWatchTrigger as FileWatchTrigger
from ._config import OpenModeConfig as OpenModeConfig
from ._config import ProcessConfig as ProcessConfig
from ._config import RestartPolicy as RestartPolicy
from ._config import TriggerConfig as TriggerConfig
from ._config import WebhookTrigger as WebhookTrigger
from ._errors import NothingToRollBackError as NothingToRollBackError
from ._errors import ProcessBusyError as ProcessBusyError
from ._errors import ProcessError as ProcessError
from ._errors import ProcessStateError as ProcessStateError
from ._errors import QueueUnavailableError as QueueUnavailableError
from ._errors import SpawnRefusedError as SpawnRefusedError
from ._event import InvalidEventError as InvalidEventError
from ._event import TriggerEvent as TriggerEvent
from ._mcp import McpServerConfig as McpServerConfig
from ._process import AgentProcess as AgentProcess
from ._process import ProcessState as ProcessState

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
