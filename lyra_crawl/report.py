"""Text summaries of stored crawls, for `make demo` and `scrapy report`."""

from __future__ import annotations

import json
from collections import Counter

from lyra_crawl.storage import Storage


def query_summary(storage: Storage, query_id: int, *, first_items: int = 5) -> str:
    """Query row, pages with their item counts, and the first items, as plain text."""
    row = storage.query(query_id)
    if row is None:
        return f"query {query_id}: not in {storage.path}"
    items = storage.items(query_id)
    per_page = Counter((item["source"], item["page_number"]) for item in items)
    stop = json.loads(row["stop_reason"]) if row["stop_reason"] else {}
    lines = [
        f"query {row['id']}: {row['query_text']!r}",
        f"  engine {row['engine']}, strategy {row['strategy']}, pages {row['serp_page']}.."
        f"{row['serp_page'] + row['serp_max_pages'] - 1} asked, status {row['status']}",
        f"  pages fetched {row['pages_fetched']}, items stored {row['items']}, "
        f"stop {', '.join(f'{k}: {v}' for k, v in sorted(stop.items())) or '-'}",
        "  pages:",
    ]
    if row["cache_hit"]:
        lines.insert(3, f"  answered from cache: the results of query {row['cached_from']}")
    for page in storage.pages(query_id):
        kept = per_page[(page["source"], page["page_number"])]
        rates = "".join(
            f", {name} {page[f'{name}_rate']:.2f}"
            for name in ("novelty", "harvest")
            if page[f"{name}_rate"] is not None
        )
        lines.append(
            f"    {page['source']} page {page['page_number']}: {page['outcome']}, "
            f"{page['results']} results, {kept} items kept{rates}"
        )
    lines.append(f"  first {min(first_items, len(items))} items:")
    for item in items[:first_items]:
        lines.append(
            f"    #{item['rank']} (page {item['page_number']}) {item['title']}\n"
            f"        {item['url']}"
        )
    return "\n".join(lines)
