"""SQLite storage: the event journal and hook-run history."""

from ._sqlite import Journal as Journal
from ._sqlite import connect as connect

__all__ = ["Journal", "connect"]
