"""`scrapy export-graph`: the documented, hyphenated name of the export_graph command (see
parse-serp.py for why a hyphenated module name works here)."""

from lyra_crawl.commands import export_graph


class Command(export_graph.Command):
    """export_graph under the name export-graph."""
