"""Crawl and query sessions: where every lyra component keeps and finds a crawl's state.

CrawlSession (crawl.py) is the Scrapy extension, one per crawler; it holds the config, the
backends and the registry of QuerySessions (query.py), one per running query. Opening a query
(opening.py, launch.py), judging a page (judging.py) and closing a query (closing.py) are
here too; the state one request carries is a RequestState (request_state.py).
"""

from lyra_crawl.session.crawl import CrawlSession

__all__ = ["CrawlSession"]
