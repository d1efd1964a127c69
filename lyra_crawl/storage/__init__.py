"""Storage: the only package that speaks SQL. `open_storage` returns the backend for a path."""

from lyra_crawl.storage.sqlite import (
    PageRecord,
    QueryRecord,
    Storage,
    StorageError,
    StoredPaper,
    open_storage,
)

__all__ = ["PageRecord", "QueryRecord", "Storage", "StorageError", "StoredPaper", "open_storage"]
