"""The crawl session: where every lyra component keeps and finds a crawl's state.

CrawlSession (crawl.py) is what the crawl's components share: the config, the backends and the
registry of RunningQuery objects (running_query.py), one per running query; the Scrapy
extension that builds it is its subclass (extension.py). A query opens (opening.py, launch.py),
its pages are judged (judging.py), it moves on as pages are stored (settling.py), fetches its
citation graph (citations.py) and closes (closing.py); the state one request carries is a
RequestState (request_state.py).

Nothing is imported here: a command that reads one helper (saved_pages.py, say) does not load
the whole crawl session with it.
"""
