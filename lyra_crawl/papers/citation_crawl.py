"""One query's citation crawl: which lists to fetch, in which order, and when each ends. Pure.

A *fetch* is one list of one paper at one source: its references or its citations at Semantic
Scholar or OpenAlex. A step (level) plans the fetches of its papers (the query's top papers at
level 1; at level 2 the top papers level 1 reached) as each source's first requests; an answer
adds the requests that follow (the list's next page, OpenAlex's lookups), and a fetch ends
`done` when no request of it is left.

Each source has at most one request of the query in flight: the politeness chain sends an
engine's requests one at a time anyway, and a source that refuses (daily quota spent, breaker
open, a block page, a layout the reader no longer reads) stops at once for the rest of the
crawl, its queued requests dropped and their fetches ended with the reason, instead of each
being refused in turn. A request that fails alone (an unknown paper, a network error) ends its
own fetch only. A paper's follow-up requests go before the next paper's first ones, so its
lists end early.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from lyra_crawl.engines.citation_links import LinkRequest, Relation

DONE = "done"
CANCELLED = "cancelled"


class FetchKey(NamedTuple):
    paper_id: int
    source: str
    relation: Relation


@dataclass(frozen=True)
class CitationRequest:
    """A link request for one paper's lists at one source, as the crawl sends it."""

    paper_id: int
    level: int
    source: str
    link: LinkRequest

    @property
    def fetches(self) -> list[FetchKey]:
        return [FetchKey(self.paper_id, self.source, relation) for relation in self.link.relations]


@dataclass(frozen=True)
class FetchEnd:
    """A fetch that ended: `done`, or why not (quota, blocked, error, layout_changed, …)."""

    key: FetchKey
    level: int
    status: str
    detail: str = ""


@dataclass
class _Fetch:
    level: int
    outstanding: int = 0
    ended: bool = False


@dataclass
class CitationCrawl:
    depth: int
    top_k: int
    level: int = 0
    # Why each stopped source stopped: (status, detail).
    stopped: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Set while the next level is being planned (its papers are read from the store).
    advancing: bool = False

    def __post_init__(self) -> None:
        self._queues: dict[str, deque[CitationRequest]] = {}
        self._in_flight: dict[str, CitationRequest] = {}
        self._fetches: dict[FetchKey, _Fetch] = {}
        # Papers whose lists a level planned: a later level does not fetch them again.
        self.planned_papers: set[int] = set()

    # -- planning ----------------------------------------------------------------------------

    def start_level(self, requests: Iterable[CitationRequest]) -> list[FetchEnd]:
        """Plan the next level's first requests; those of a stopped source end at once."""
        self.level += 1
        ends = []
        for request in requests:
            self.planned_papers.add(request.paper_id)
            for key in request.fetches:
                self._fetches.setdefault(key, _Fetch(request.level))
            if request.source in self.stopped:
                status, detail = self.stopped[request.source]
                ends += self._end(request.fetches, status, detail)
            else:
                self._enqueue(request)
        return ends

    def take(self) -> list[CitationRequest]:
        """The requests to send now: the next of each source with none in flight."""
        sent = []
        for source, queue in self._queues.items():
            if source not in self._in_flight and queue:
                request = queue.popleft()
                self._in_flight[source] = request
                sent.append(request)
        return sent

    # -- answers -----------------------------------------------------------------------------

    def answered(
        self, request: CitationRequest, following: Sequence[LinkRequest]
    ) -> list[FetchEnd]:
        """An answer read: its follow-ups queued first; the fetches it completed, done."""
        self._in_flight.pop(request.source, None)
        queue = self._queues.setdefault(request.source, deque())
        for link in reversed(following):
            follow_up = CitationRequest(request.paper_id, request.level, request.source, link)
            for key in follow_up.fetches:
                self._fetches.setdefault(key, _Fetch(request.level)).outstanding += 1
            queue.appendleft(follow_up)
        ends = []
        for key in request.fetches:
            fetch = self._fetches[key]
            fetch.outstanding -= 1
            if fetch.outstanding == 0 and not fetch.ended:
                ends += self._end([key], DONE)
        return ends

    def failed(
        self, request: CitationRequest, status: str, detail: str, *, source_stops: bool
    ) -> list[FetchEnd]:
        """A request that got no usable answer: its fetches end with `status`, and with
        `source_stops` every fetch waiting for the same source too."""
        self._in_flight.pop(request.source, None)
        for key in request.fetches:
            self._fetches[key].outstanding -= 1
        ends = self._end(request.fetches, status, detail)
        if source_stops:
            self.stopped[request.source] = (status, detail)
            queue = self._queues.pop(request.source, deque())
            ends += self._end([key for queued in queue for key in queued.fetches], status, detail)
        return ends

    def cancel(self) -> list[FetchEnd]:
        """The crawl closes: every fetch not yet ended ends `cancelled`."""
        self._queues.clear()
        self._in_flight.clear()
        return self._end(list(self._fetches), CANCELLED)

    # -- where it stands ---------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """No request queued or in flight: the level is over."""
        return not self._in_flight and not any(self._queues.values())

    @property
    def finished(self) -> bool:
        return self.idle and self.level >= self.depth

    def _enqueue(self, request: CitationRequest) -> None:
        for key in request.fetches:
            self._fetches[key].outstanding += 1
        self._queues.setdefault(request.source, deque()).append(request)

    def _end(self, keys: Iterable[FetchKey], status: str, detail: str = "") -> list[FetchEnd]:
        """End the fetches not ended yet; their queued requests are dropped."""
        ends = []
        for key in dict.fromkeys(keys):
            fetch = self._fetches[key]
            if not fetch.ended:
                fetch.ended = True
                ends.append(FetchEnd(key, fetch.level, status, detail))
        if ends:
            for source, queue in self._queues.items():
                self._queues[source] = deque(
                    queued
                    for queued in queue
                    if not all(self._fetches[key].ended for key in queued.fetches)
                )
        return ends
