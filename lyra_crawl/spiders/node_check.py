"""NodeCheckSpider: `scrapy crawl node_check` says what this node resolves its store and
coordinator to, whether they are where the job expects (LYRA_EXPECT_DB,
LYRA_EXPECT_COORDINATION) and whether it reaches them, in one log line
(lyra_crawl.batch.targets.NodeReport), and sends no request.

It is a spider only so that Scrapyd can schedule it (`scrapy nodes` does, on each node): the
crawl command runs the check itself and starts no crawl (lyra_crawl.commands.crawl). Crawled any
other way, it has nothing to crawl.
"""

from __future__ import annotations

import scrapy


class NodeCheckSpider(scrapy.Spider):
    name = "node_check"
