"""The embedded backends: ResultStore and Coordinator on one SQLite file (WAL, busy timeout).

One SqliteDatabase (one connection on one worker thread) serves both protocols when they name
the same file.
"""

from lyra_crawl.backends.sqlite.coordinator import SqliteCoordinator
from lyra_crawl.backends.sqlite.database import SqliteDatabase
from lyra_crawl.backends.sqlite.store import SqliteStore

__all__ = ["SqliteCoordinator", "SqliteDatabase", "SqliteStore"]
