"""The ResultStore on PostgreSQL (psycopg 3, asyncio): one database shared by every node.

Chosen by LYRA_DB_URL=postgresql://… (or postgres://…); imported only then, so the embedded
default needs no PostgreSQL driver loaded.
"""

from lyra_crawl.backends.postgres.database import PostgresDatabase
from lyra_crawl.backends.postgres.store import PostgresStore

__all__ = ["PostgresDatabase", "PostgresStore"]
