"""Pages kept on disk for `scrapy parse-serp`: a stale parser's last page, each engine check's page.

Under LYRA_DATA_DIR (unset: the folder of the SQLite store, `data/` by default; `data` with a
PostgreSQL store), named so that a folder's listing sorts by time:

- `stale/<engine>/<UTC time>-q<query id>-p<page>.<ext>`: a page in a layout the engine's parse
  rules do not read, saved when the crawl stops that source; `scrapy engines` finds the latest
  one from the store's `serp_pages` row (query id and page number).
- `check/<engine>/<UTC time>-p1.<ext>`: the page `scrapy check-engines` fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lyra_crawl.backend_urls import sqlite_path, urls_from_settings

STALE_FOLDER = "stale"
CHECK_FOLDER = "check"
DEFAULT_DATA_DIR = "data"
_SUFFIXES = (("json", ".json"), ("xml", ".xml"), ("html", ".html"))


def data_dir(settings: Mapping[str, Any] | Any) -> Path:
    """LYRA_DATA_DIR, else the folder of the SQLite store, else `data`."""
    explicit = settings.get("LYRA_DATA_DIR")
    if explicit:
        return Path(explicit)
    database = sqlite_path(urls_from_settings(settings).store)
    return database.parent if database is not None else Path(DEFAULT_DATA_DIR)


def page_suffix(content_type: str) -> str:
    """The file extension of a body of this Content-Type ('.txt' when it names none we know)."""
    kind = content_type.lower()
    return next((suffix for word, suffix in _SUFFIXES if word in kind), ".txt")


def stamp(moment: datetime) -> str:
    """`moment` in UTC as a file-name part: 20260723T141502Z."""
    return f"{moment.astimezone(UTC):%Y%m%dT%H%M%SZ}"


def stale_page_path(
    folder: Path, engine: str, query_id: int, page_number: int, suffix: str, moment: datetime
) -> Path:
    return folder / STALE_FOLDER / engine / f"{stamp(moment)}-q{query_id}-p{page_number}{suffix}"


def find_stale_page(folder: Path, engine: str, query_id: int, page_number: int) -> Path | None:
    """The saved copy of that page, the latest when several crawls saved one; None if absent
    (saved on another machine, or deleted)."""
    found = sorted((folder / STALE_FOLDER / engine).glob(f"*-q{query_id}-p{page_number}.*"))
    return found[-1] if found else None


def check_page_path(folder: Path, engine: str, suffix: str, moment: datetime) -> Path:
    return folder / CHECK_FOLDER / engine / f"{stamp(moment)}-p1{suffix}"


def save_page(path: Path, body: bytes) -> Path:
    """Write `body` to `path` (its folders made); OSError when the disk refuses."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return path
