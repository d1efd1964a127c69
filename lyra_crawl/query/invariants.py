"""What a stored record may say: the rules every ResultStore checks where it writes. Pure.

A query's row and a batch entry's state are what reports, summaries and later runs trust. A row
saying a source stopped at its page limit when it fetched no page, or an entry `failed` with no
word of why, is worse than no row. The store checks each such record in the transaction
that writes it; one that breaks a rule raises UntruthfulRecord (a bug in the code that asked
for the write: tests fail loudly) and is not written.
"""

from __future__ import annotations

from collections.abc import Mapping

from lyra_crawl.paging.stop_rules import AFTER_A_PAGE, StopReason
from lyra_crawl.query.arguments import SERP_SOURCE, crawl_sources
from lyra_crawl.records import ENTRY_STATES, QueryStatus, StoredQuery

_STOP_REASONS = frozenset(reason.value for reason in StopReason)
_STATUSES = frozenset(status.value for status in QueryStatus)


class UntruthfulRecord(AssertionError):
    """A write would store a record that says something false; the message says what."""


def check_query_end(query: StoredQuery, pages: Mapping[str, int]) -> None:
    """A query's row as its close leaves it, given the pages stored for each of its sources:
    every stop reason is one lyra knows; a source that fetched no page did not stop on what a
    page said (max_pages, novelty, …); `finished` means every source stopped, none cancelled."""
    problems = []
    if query.status not in _STATUSES:
        problems.append(f"status {query.status!r} is none of {', '.join(sorted(_STATUSES))}")
    for source, reason in sorted(query.stop_reason.items()):
        if reason not in _STOP_REASONS:
            problems.append(f"{source} stopped for {reason!r}, which is no stop reason")
        elif reason in AFTER_A_PAGE and not pages.get(source):
            problems.append(f"{source} stopped for {reason} but no page of it is stored")
    if query.status == QueryStatus.FINISHED:
        names = tuple(query.sources.split(","))
        serp_engine = query.engine if SERP_SOURCE in names else None
        unstopped = [s for s in crawl_sources(serp_engine, names) if s not in query.stop_reason]
        if unstopped:
            problems.append(f"it is finished but {', '.join(unstopped)} never stopped")
        cancelled = [s for s, r in query.stop_reason.items() if r == StopReason.CANCELLED]
        if cancelled:
            problems.append(f"it is finished but {', '.join(sorted(cancelled))} was cancelled")
    if problems:
        raise UntruthfulRecord(f"query {query.id}: {'; '.join(problems)}")


def check_entry_state(state: str, detail: str) -> None:
    """A batch entry's new state: one of ENTRY_STATES; failed or rejected with why."""
    if state not in ENTRY_STATES:
        raise UntruthfulRecord(f"entry state {state!r} is none of {', '.join(ENTRY_STATES)}")
    if state in ("failed", "rejected") and not detail:
        raise UntruthfulRecord(f"an entry {state} must say why")
