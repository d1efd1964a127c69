"""The landing-page reader's rules that the real pages (test_landing_realworld.py) do not
exercise alone: JSON-LD abstracts, markup inside a field, labels, the order of trust."""

from __future__ import annotations

from lyra_crawl.papers.landing import LandingOutcome, clean_text, read_abstract

ABSTRACT = (
    "We measure how often landing pages carry their abstract in metadata. Most do; "
    "some give only a teaser."
)


def page(head: str, title: str = "Landing pages and their abstracts") -> str:
    return f"<html><head><title>{title}</title>{head}</head><body></body></html>"


def test_jsonld_abstract_of_an_article_in_a_graph_beats_og_description() -> None:
    jsonld = (
        '{"@context": "https://schema.org", "@graph": [{"@type": "WebPage"}, '
        '{"@type": ["http://schema.org/ScholarlyArticle"], "abstract": "' + ABSTRACT + '\n"}]}'
    )
    teaser = f"Landing pages and abstracts, a teaser of {'x' * 80}."
    html = page(
        '<script type="application/ld+json">{ broken</script>'
        f'<script type="application/ld+json">{jsonld}</script>'
        f'<meta property="og:description" content="{teaser}">'
    )

    found = read_abstract(html, min_chars=40)

    assert (found.outcome, found.field, found.abstract) == (
        LandingOutcome.ABSTRACT,
        "json-ld abstract",
        ABSTRACT,
    )


def test_a_short_citation_abstract_gives_way_to_dublin_core() -> None:
    html = page(
        '<meta name="citation_abstract" content="No abstract available.">'
        f'<meta name="DCTERMS.abstract" content="{ABSTRACT}">'
    )

    found = read_abstract(html, min_chars=40)

    assert (found.field, found.abstract) == ("dcterms.abstract", ABSTRACT)


def test_markup_escaped_twice_is_removed_and_comparisons_stay_text() -> None:
    raw = (
        "&lt;h3&gt;Abstract&lt;/h3&gt; "
        "&lt;p&gt;Doses p<0.05 and x < y > z &amp;amp; more.&lt;/p&gt;"
    )

    assert clean_text(raw) == "Doses p<0.05 and x < y > z & more."


def test_a_heading_glued_to_the_text_is_dropped_but_not_a_first_word() -> None:
    assert clean_text("AbstractFood packaging is reviewed.") == "Food packaging is reviewed."
    assert clean_text("ABSTRACTION layers are compared.") == "ABSTRACTION layers are compared."


def test_a_field_saying_its_text_twice_is_read_once() -> None:
    assert clean_text(f"{ABSTRACT}  {ABSTRACT}") == ABSTRACT


def test_a_page_without_any_field_has_no_metadata() -> None:
    found = read_abstract(page('<meta name="citation_title" content="X">'), min_chars=40)

    assert (found.outcome, found.abstract, found.field) == (LandingOutcome.NO_METADATA, None, None)
