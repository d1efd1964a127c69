"""Packaging for Scrapyd eggs (`scrapyd-deploy`) and plain installs.

The YAML config in config/ ships inside the package as lyra_crawl/bundled_config, and the
backends' SQL (schemas, PostgreSQL's upgrades) and the paper matcher's trees as package data, so
an egg finds them with importlib.resources.
"""

from setuptools import find_packages, setup

setup(
    name="lyra_crawl",
    version="0.1.0",
    description="Collect search results for research: SERP engines and scholarly APIs, politely.",
    packages=[*find_packages(include=["lyra_crawl", "lyra_crawl.*"]), "lyra_crawl.bundled_config"],
    package_dir={"lyra_crawl.bundled_config": "config"},
    package_data={
        "lyra_crawl.bundled_config": ["*.yaml"],
        "lyra_crawl.backends.sqlite": ["schema.sql"],
        "lyra_crawl.backends.postgres": ["*.sql"],
        # The paper matcher's trees (make train-matcher).
        "lyra_crawl.papers": ["matcher_weights.json"],
    },
    entry_points={"scrapy": ["settings = lyra_crawl.settings"]},
    python_requires=">=3.11",
    zip_safe=False,
)
