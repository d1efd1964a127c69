"""lyra_crawl: collect search results for research, page by page, politely, with an audit trail."""
