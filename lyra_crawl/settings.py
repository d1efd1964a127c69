"""Scrapy settings for lyra_crawl.

Settings users tune are named LYRA_* (documented in the README). Each can be given with
`-s NAME=value`, in Scrapyd's `setting=NAME=value`, or as an environment variable of the same
name; `-s` wins over the environment.
"""

import os

BOT_NAME = "lyra_crawl"
SPIDER_MODULES = ["lyra_crawl.spiders"]
NEWSPIDER_MODULE = "lyra_crawl.spiders"
COMMANDS_MODULE = "lyra_crawl.commands"

# -- lyra_crawl's own settings ---------------------------------------------------------------
# Folder with search_parsers.yaml and engines.yaml; unset = the config bundled with the package.
LYRA_CONFIG_DIR = os.environ.get("LYRA_CONFIG_DIR") or None
# SQLite file; give an absolute path under Scrapyd, which runs jobs from its own folder.
LYRA_DB_PATH = os.environ.get("LYRA_DB_PATH") or "data/lyra.sqlite3"
# Base URL of the bundled simulator; every engine request goes there instead of the real host.
LYRA_SIMULATOR_URL = os.environ.get("LYRA_SIMULATOR_URL") or None
# Secrets of the paper APIs (empty = not sent): Semantic Scholar's key goes in the x-api-key
# header, OpenAlex's in api_key; the contact email is OpenAlex's and Crossref's `mailto`.
LYRA_S2_API_KEY = os.environ.get("LYRA_S2_API_KEY", "")
LYRA_OPENALEX_API_KEY = os.environ.get("LYRA_OPENALEX_API_KEY", "")
LYRA_CONTACT_EMAIL = os.environ.get("LYRA_CONTACT_EMAIL", "")
# Pace each engine at its qps from engines.yaml. Turn off only against the simulator.
LYRA_RATE_LIMIT_ENABLED = os.environ.get("LYRA_RATE_LIMIT_ENABLED", "true").lower() not in (
    "0",
    "false",
    "no",
    "off",
)

# -- politeness: one slot per engine, paced by engines.yaml (set by SerpSpider) --------------
# Engines' robots.txt disallow their own result pages; the politeness layer is the pacing and
# quotas in engines.yaml instead.
ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 16
DOWNLOAD_DELAY = 0
DOWNLOAD_DELAY_JITTER = 0
AUTOTHROTTLE_ENABLED = False
DOWNLOAD_TIMEOUT = 30
COOKIES_ENABLED = True
# 429 is a block, not something to retry into; other transient errors get two more tries.
RETRY_TIMES = 2
RETRY_HTTP_CODES = [500, 502, 503, 504, 522, 524, 408]
USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/130.0.0.0 Safari/537.36"
)
DEFAULT_REQUEST_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.8",
}

SPIDER_MIDDLEWARES = {
    "lyra_crawl.middlewares.pagination.PaginationMiddleware": 800,
}

ITEM_PIPELINES = {
    "lyra_crawl.pipelines.NormalizePipeline": 100,
    "lyra_crawl.pipelines.DedupePipeline": 200,
    "lyra_crawl.pipelines.StorePipeline": 900,
}

# -- safety -----------------------------------------------------------------------------------
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
