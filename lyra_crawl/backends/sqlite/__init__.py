"""The embedded backends: the result store and the Coordinator on one SQLite file (WAL, busy
timeout).

One SqliteDatabase (one connection on one worker thread) serves both protocols when they name
the same file; the store is backends.store's, its plans run on that thread.
"""

from lyra_crawl.backends.sqlite.coordinator import SqliteCoordinator
from lyra_crawl.backends.sqlite.database import SqliteDatabase

__all__ = ["SqliteCoordinator", "SqliteDatabase"]
