"""Scrapy's RobotsTxtMiddleware, with every request that waits for a host's robots.txt checked.

Scrapy 2.19's middleware awaits the host's one pending Deferred from each request that arrives
while robots.txt downloads; turned into a future, the first waiter's callback swallows the
parser, so every later waiter gets None and goes out unchecked (a disallowed page is fetched
when a crawl starts with several requests to one host). Here each waiter gets the parser through
a Deferred of its own, as Scrapy did before its middleware became a coroutine. Settings:
Scrapy's ROBOTSTXT_* (the papers spider turns ROBOTSTXT_OBEY on; off, this raises NotConfigured).
"""

from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as ScrapyRobotsTxt
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred


class RobotsTxtMiddleware(ScrapyRobotsTxt):
    async def robot_parser(self, request: Request) -> RobotParser | None:
        pending = self._parsers.get(urlparse_cached(request).netloc)
        if not isinstance(pending, Deferred):
            return await super().robot_parser(request)
        own: Deferred[RobotParser | None] = Deferred()

        def pass_on(parser: RobotParser | None) -> RobotParser | None:
            own.callback(parser)
            return parser  # for the next waiter

        pending.addCallback(pass_on)
        return await maybe_deferred_to_future(own)
