"""A loopback "search engine" server for the demo, the tests and the benchmarks.

Run `python -m lyra_crawl.simulator --port 0`; it prints `listening on http://127.0.0.1:<port>`
once ready. Point the crawler at it with LYRA_SIMULATOR_URL.
"""
