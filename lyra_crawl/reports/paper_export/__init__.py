"""A task's canonical papers in the formats reference managers and screening tools read.

`scrapy export-papers` streams the papers a task's, a batch's or one query's queries found
(ResultStore.papers_found, a page at a time) through one writer: RIS (`ris.py`, rispy), BibTeX
(`bibtex.py`, bibtexparser v2), CSL-JSON (`csljson.py`, per the CSL data schema) or CSV
(`table.py`, the columns ASReview reads). `records.py` makes each paper the record every writer
reads (its citation key, URL, keywords, provenance notes); `names.py` splits author names the way
BibTeX does; `streaming.py` runs the pages through a writer.
"""
