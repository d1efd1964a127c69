"""A loopback "search engine" server for the demo, the tests and the benchmarks.

Run `python -m lyra_crawl.simulator --port 0`; it prints `listening on http://127.0.0.1:<port>`
once ready. Point the crawler at it with LYRA_SIMULATOR_URL: every engine answers under
`/<engine>/<its real path>` (lyra_crawl.engines.routing).

Everything is deterministic: a query's results, pages and papers depend only on the query
(corpus: `seed`, `make_result`, `page_results`). Result number `index` of a query is a paper
with a publisher page (`landing_url`) and an abstract (`abstract_of`), withheld from the paper
APIs for every fourth paper (`abstract_withheld`). Besides the search pages:

- the citation graph (citations: the exact rules; tests compute the expected edges from
  `references` / `citations`): each query's 200 corpus papers and 40 papers outside any
  query's results; edges to papers with a preprint name the preprint's record (the same paper
  under another id); a few references match no record at all. Semantic Scholar serves
  `/graph/v1/paper/{id}`, `…/references` and `…/citations` (offset / limit / next), OpenAlex
  `referenced_works` in every work, `/works/{id}` and `/works?filter=cites:|cited_by:|
  openalex:|doi:` (engines.citation_pages);
- abstracts: Semantic Scholar's `abstract`, OpenAlex's `abstract_inverted_index` (its words in
  position order, joined by single spaces, are the text), Crossref's JATS `abstract`;
- publishers' landing pages at `/landing/<path>` and DOI links that redirect to them, giving the
  abstract as citation_abstract, Dublin Core, Open Graph, JSON-LD, several at once, or not at
  all, or refusing the request (engines.landing: which paper gets which kind).

Ids are hashes: a paper is found by id (`/paper/{id}`, `/works/{id}`, a landing path) once the
simulator has served a result page of its query (engines.paper_ids.PaperIndex), as a real API
knows the papers it handed out.
"""
