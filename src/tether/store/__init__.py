"""SQLite storage: the event journal and hook-run history."""

from ._artifacts import ArtifactStore as ArtifactStore
from ._artifacts import check_artifact_path as check_artifact_path
from ._artifacts import open_artifacts as open_artifacts
from ._history import HistoryStore as HistoryStore
from ._sqlite import Journal as Journal
from ._sqlite import connect as connect

__all__ = [
    "ArtifactStore",
    "HistoryStore",
    "Journal",
    "check_artifact_path",
    "connect",
    "open_artifacts",
]
