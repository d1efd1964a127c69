"""Scrapy settings for lyra_crawl.

Settings users tune are named LYRA_* (documented in the README). Each can be given with
`-s NAME=value`, in Scrapyd's `setting=NAME=value`, or as an environment variable of the same
name; `-s` wins over the environment.
"""

import os


def _env_flag(name: str, default: bool = True) -> bool:
    """An on/off setting from the environment: 0, false, no and off turn it off."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


BOT_NAME = "lyra_crawl"
SPIDER_MODULES = ["lyra_crawl.spiders"]
NEWSPIDER_MODULE = "lyra_crawl.spiders"
COMMANDS_MODULE = "lyra_crawl.commands"


# -- lyra_crawl's own settings ---------------------------------------------------------------
# Folder with search_parsers.yaml and engines.yaml; unset = the config bundled with the package.
LYRA_CONFIG_DIR = os.environ.get("LYRA_CONFIG_DIR") or None
# Where results are stored (lyra_crawl.backends): sqlite:///relative/path or
# sqlite:////absolute/path; give an absolute path under Scrapyd, which runs jobs from its own
# folder. LYRA_DB_PATH, a plain file path, is the older spelling of the same setting.
LYRA_DB_URL = os.environ.get("LYRA_DB_URL") or None
LYRA_DB_PATH = os.environ.get("LYRA_DB_PATH") or None
# Where pages are kept for `scrapy parse-serp`: a stale parser's last page (stale/<engine>/)
# and `scrapy check-engines` pages (check/<engine>/). Unset = the folder of the SQLite store
# (data/ by default), or data/ with a PostgreSQL store.
LYRA_DATA_DIR = os.environ.get("LYRA_DATA_DIR") or None
# What crawls coordinate through (quotas, rate slots, breakers); unset = the LYRA_DB_URL file.
LYRA_COORDINATION_URL = os.environ.get("LYRA_COORDINATION_URL") or None
# Base URL of the bundled simulator; every engine request goes there instead of the real host.
LYRA_SIMULATOR_URL = os.environ.get("LYRA_SIMULATOR_URL") or None
# Politeness, shared through the Coordinator by every crawl using it (lyra_crawl/middlewares/).
# Space each engine's requests 1/qps apart (engines.yaml). Turn off only against the simulator.
LYRA_RATE_LIMIT_ENABLED = _env_flag("LYRA_RATE_LIMIT_ENABLED")
# Refuse requests beyond each engine's daily_limit (engines.yaml), per UTC day.
LYRA_QUOTA_ENABLED = _env_flag("LYRA_QUOTA_ENABLED")
# Circuit breaker and block detection: queue block pages as interventions, refuse requests to an
# engine while its breaker is open (engines.yaml `breaker:`).
LYRA_BREAKER_ENABLED = _env_flag("LYRA_BREAKER_ENABLED")
# Fetch `render: browser` engines (Google) in headless Chromium. Off: they go over plain HTTP and
# meet their JavaScript wall, and the crawl never loads Playwright.
LYRA_BROWSER_ENABLED = _env_flag("LYRA_BROWSER_ENABLED", True)
# The Chromium binary; unset = Playwright's own Chromium when installed, else /usr/bin/chromium.
LYRA_CHROMIUM_PATH = os.environ.get("LYRA_CHROMIUM_PATH") or None
# Secrets of the paper APIs (empty = not sent): Semantic Scholar's key goes in the x-api-key
# header, OpenAlex's in api_key; the contact email is OpenAlex's and Crossref's `mailto`.
LYRA_S2_API_KEY = os.environ.get("LYRA_S2_API_KEY", "")
LYRA_OPENALEX_API_KEY = os.environ.get("LYRA_OPENALEX_API_KEY", "")
LYRA_CONTACT_EMAIL = os.environ.get("LYRA_CONTACT_EMAIL", "")
# The papers spider (`scrapy crawl papers`): landing pages it may ask for in a UTC day, counted
# in the Coordinator across every papers crawl sharing it.
LYRA_PAPERS_DAILY_BUDGET = os.environ.get("LYRA_PAPERS_DAILY_BUDGET") or 1000
# A batch crawl's progress (lyra_crawl.batch.extension): seconds between two plain progress
# lines when stderr is not a terminal (Scrapyd job logs, cron); a terminal gets a live table.
# 0 turns progress off.
LYRA_PROGRESS_INTERVAL = float(os.environ.get("LYRA_PROGRESS_INTERVAL") or 30)
# `scrapy select`'s LLM stage: an OpenAI-compatible chat API's base URL (e.g.
# http://localhost:11434/v1), the model to ask (else engines.yaml retrieval.llm.model) and its
# key (sent as a bearer token, never logged). No URL: the stage is skipped.
LYRA_LLM_URL = os.environ.get("LYRA_LLM_URL", "")
LYRA_LLM_MODEL = os.environ.get("LYRA_LLM_MODEL", "")
LYRA_LLM_API_KEY = os.environ.get("LYRA_LLM_API_KEY", "")

# -- the crawl session: config, backends and the registry of running queries ------------------
EXTENSIONS = {
    "lyra_crawl.session.extension.CrawlSessionExtension": 0,
    # Progress of a batch crawl (-a batch=ID), read from the store; other crawls are untouched.
    "lyra_crawl.batch.extension.BatchProgressExtension": 500,
}

# -- politeness: one download slot per engine, concurrency 1 (set by SerpSpider) ------------
# Order on the way out: engine turn -> breaker -> quota -> rate -> download. On the way back
# the rate slot is released first (spacing counts from the answer, not from its parsing), then
# block detection judges the page, then the breaker reads the verdict, the engine turn last.
# They sit nearer the downloader
# than Retry (550) and Redirect (600), so each retry and each redirect is checked again, and
# the breaker sees every response and error before those turn it into a new request.
# HttpCompression moves nearer still, so block detection reads decompressed pages.
DOWNLOADER_MIDDLEWARES = {
    # Scrapy's robots.txt middleware, fixed (lyra_crawl.middlewares.robots_txt); it acts only
    # for spiders with ROBOTSTXT_OBEY on (the papers spider).
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "lyra_crawl.middlewares.robots_txt.RobotsTxtMiddleware": 100,
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 860,
    "lyra_crawl.middlewares.engine_turn.EngineTurnMiddleware": 805,
    "lyra_crawl.middlewares.circuit_breaker.CircuitBreakerMiddleware": 810,
    "lyra_crawl.middlewares.daily_quota.DailyQuotaMiddleware": 820,
    "lyra_crawl.middlewares.block_detection.BlockDetectionMiddleware": 830,
    "lyra_crawl.middlewares.rate_limit.RateLimitMiddleware": 840,
}
# Engines' robots.txt disallow their own result pages; the politeness layer is the pacing and
# quotas in engines.yaml instead.
ROBOTSTXT_OBEY = False
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 16
# Items of one page pass the pipelines this many at a time. The pipelines are CPU work (only a
# page's last item waits for the store), so Scrapy's default of 100 workers per response only
# adds task overhead, which a batch of thousands of queries pays on one GIL.
CONCURRENT_ITEMS = 4
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
    "lyra_crawl.pipelines.normalize.NormalizePipeline": 100,
    "lyra_crawl.pipelines.merge.CanonicalPipeline": 150,
    "lyra_crawl.pipelines.dedupe.DedupePipeline": 200,
    "lyra_crawl.pipelines.store.StorePipeline": 900,
}

# -- browser: scrapy-playwright, loaded by SerpSpider only for crawls that may render ---------
# One context with one page at a time (ADR-0014's TabPool); each page is closed after use.
PLAYWRIGHT_BROWSER_TYPE = "chromium"
PLAYWRIGHT_BROWSER_PROVIDER = "lyra_crawl.browser.chromium.ChromiumProvider"
PLAYWRIGHT_MAX_CONTEXTS = 1
PLAYWRIGHT_MAX_PAGES_PER_CONTEXT = 1
PLAYWRIGHT_ABORT_REQUEST = "lyra_crawl.browser.chromium.abort_unneeded"
PLAYWRIGHT_LAUNCH_OPTIONS = {
    "headless": True,
    # Root needs --no-sandbox; the rest stop Chromium's own background traffic (updates, sync,
    # field trials, QUIC probes), which a closed network refuses and a search engine would see.
    # Playwright gives every launch a fresh, empty --user-data-dir of its own.
    "args": [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
    ],
}

# -- safety -----------------------------------------------------------------------------------
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
LOG_FORMATTER = "lyra_crawl.logformatter.LevelAwareLogFormatter"
