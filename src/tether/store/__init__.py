"""SQLite storage: the event journal and hook-run history; Redis keys and scripts.

``__all__`` is the public API; the other names imported here are for tether's other packages,
which import the store through this module only, never through its private modules.
"""

from ._artifacts import ArtifactStore as ArtifactStore
from ._artifacts import check_artifact_path as check_artifact_path
from ._artifacts import open_artifacts as open_artifacts
from ._history import HistoryStore as HistoryStore
from ._redis import ACQUIRE as ACQUIRE
from ._redis import FENCED as FENCED
from ._redis import GROUP as GROUP
from ._redis import RENEW as RENEW
from ._redis import Keys as Keys
from ._redis import Scripts as Scripts
from ._redis import connect as _connect_redis
from ._redis import is_nogroup as is_nogroup
from ._redis_steps import RedisStepStore as RedisStepStore
from ._redis_steps import StepsFenced as StepsFenced
from ._redis_steps import connect_sync as connect_sync
from ._sqlite import Journal as Journal
from ._sqlite import JournalFileGone as JournalFileGone
from ._sqlite import connect as connect
from ._steps import Change as Change
from ._steps import Row as Row
from ._steps import StepJournal as StepJournal
from ._steps import StepStore as StepStore
from ._writer import Seat as Seat
from ._writer import seat as seat

#: A Redis client for a cluster's URL (``connect`` is SQLite's).
connect_redis = _connect_redis

__all__ = [
    "ArtifactStore",
    "HistoryStore",
    "Journal",
    "check_artifact_path",
    "connect",
    "open_artifacts",
]
