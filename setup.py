"""Packaging for Scrapyd eggs (`scrapyd-deploy`) and plain installs.

The YAML config in config/ ships inside the package as lyra_crawl/bundled_config, so an egg
finds it with importlib.resources; the HTML reports' templates (Jinja2's PackageLoader reads
zipped eggs too) and the paper matcher's trees ship as package data. The backends' schema is
Python (lyra_crawl/backends/tables.py and migrations.py): no SQL file to ship.
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
        "lyra_crawl.reports": ["templates/*"],
        # The paper matcher's trees (make train-matcher).
        "lyra_crawl.papers": ["matcher_weights.json"],
    },
    entry_points={"scrapy": ["settings = lyra_crawl.settings"]},
    python_requires=">=3.11",
    zip_safe=False,
)
