"""Engines: request building (request.py) and response parsing (parsing.py), one family per module.

Everything here is a pure function of (engine spec, body, page number): no Scrapy imports, so the
conformance tests and `scrapy parse-serp` run the very code the spider runs. Block pages come back
as block outcomes, never as an empty result list.
"""
