"""The result store on PostgreSQL (psycopg 3, asyncio): one database shared by every node; the
store is backends.store's, its plans run on psycopg's pool.

Chosen by LYRA_DB_URL=postgresql://… (or postgres://…); imported only then, so the embedded
default needs no PostgreSQL driver loaded.
"""

from lyra_crawl.backends.postgres.database import PostgresDatabase

__all__ = ["PostgresDatabase"]
