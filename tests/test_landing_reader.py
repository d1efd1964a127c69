"""The landing-page reader's rules that the real pages (test_landing_realworld.py) do not
exercise alone: JSON-LD abstracts, markup inside a field, labels, the order of trust; RDFa,
microdata items, and the body's abstract section beside the blocks that are not the abstract."""

from __future__ import annotations

from lyra_crawl.papers.landing import LandingOutcome, clean_text, judge_fields, read_abstract

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


# Beyond the metadata: structured data, then the body. The real pages that exercise each layout
# are in test_landing_realworld.py (IOPscience's microdata, ScienceDirect's Highlights, Atypon's,
# APS's, PubMed's heading "Abstract", …); these pin the rules no real page there shows alone.

TITLE = "Peat carbon under drainage"
PEAT = (
    "We measured peat carbon in drained and rewetted bogs over ten years. Drained peat lost "
    "carbon twice as fast as models predicted; rewetting halted the loss within three years."
)


def body_page(body: str, head: str = "") -> str:
    return (
        f"<html><head><title>{TITLE} | Journal</title>"
        f'<meta name="citation_title" content="{TITLE}">{head}</head><body>{body}</body></html>'
    )


def read(html: str) -> tuple[str, str | None, str | None]:
    found = read_abstract(html, min_chars=100)
    return found.outcome.value, found.field, found.abstract


def test_rdfa_dcterms_abstract_is_read_with_its_prefix_resolved() -> None:
    html = body_page(
        '<div prefix="dct: http://purl.org/dc/terms/" about="#paper">'
        f'<p property="dct:abstract">{PEAT}</p></div>'
    )

    assert read(html) == ("abstract", "rdfa:dcterms:abstract", PEAT)


def test_microdata_abstract_beats_description_and_other_items_do_not_count() -> None:
    blurb = f"A shop selling {'peat ' * 20}bags of every size, delivered to your door."
    html = body_page(
        f'<div itemscope itemtype="https://schema.org/Product"><p itemprop="description">'
        f"{blurb}</p></div>"
        '<div itemscope itemtype="https://schema.org/ScholarlyArticle">'
        f'<p itemprop="description">{PEAT[:120]}.</p><p itemprop="abstract">{PEAT}</p></div>'
    )

    assert read(html) == ("abstract", "microdata:abstract", PEAT)
    fields = [v.field for v in judge_fields(html, min_chars=100)]
    assert fields.index("microdata:abstract") < fields.index("microdata:description")


def test_role_doc_abstract_comes_first_and_its_show_more_control_is_left_out() -> None:
    html = body_page(
        f'<div class="abstract">{PEAT.replace("twice", "thrice")}</div>'
        f'<section role="doc-abstract"><h2>Abstract</h2><p>{PEAT}</p>'
        '<button>Show more</button><a href="#">Expand</a></section>'
    )

    assert read(html) == ("abstract", "body:section[role=doc-abstract]", PEAT)


def test_highlights_graphical_abstract_keywords_and_summaries_are_left_out() -> None:
    html = body_page(
        '<div id="abstracts">'
        "<div class='abstract author-highlights'><h2>Highlights</h2>"
        "<ul><li>Drained peat loses carbon fast and the models do not say so.</li></ul></div>"
        "<div class='abstract'><h2>Simple Summary</h2><p>Wet bogs keep their carbon, dry "
        "ones lose it: this study of peat says how fast, and what rewetting does.</p></div>"
        f"<section class='abstract'><h2>Abstract</h2><p>{PEAT}</p>"
        "<div><h3>Keywords</h3><ul><li>peat</li><li>carbon</li></ul></div></section>"
        "<div class='abstract graphical'><h2>Graphical abstract</h2><figure>"
        "<img alt='x'><figcaption>Carbon of peat, drained and wet.</figcaption></figure></div>"
        "</div>"
    )

    assert read(html) == ("abstract", "body:section.abstract", PEAT)


def test_a_heading_abstract_gives_what_follows_it_up_to_the_next_heading() -> None:
    first, then = PEAT.split(" Drained ")
    html = body_page(
        f"<h1>{TITLE}</h1><h2>Abstract:</h2><p>{first}</p><p>Drained {then}</p>"
        "<h2>Introduction</h2><p>Peat covers three per cent of the land.</p>"
    )

    assert read(html) == ("abstract", 'body:h2 "Abstract:"', PEAT)


def test_the_abstracts_of_cited_papers_are_never_read() -> None:
    html = body_page(
        f'<ol class="references"><li><div class="abstract">{PEAT}</div></li></ol>'
        f'<div id="recommended-articles"><div class="abstract">{PEAT}</div></div>'
    )

    assert read(html)[0] == "no_metadata"


def test_a_body_section_is_judged_as_a_weak_field() -> None:
    blurb = (
        "Sim Publishing has published journals, books and data for scholars since 1901, "
        "from offices in three countries, for readers everywhere."
    )
    truncated = body_page(f'<div class="abstract"><p>{PEAT[:150]}…</p></div>')
    no_title_word = body_page(f'<div class="abstract"><p>{blurb}</p></div>')
    whole_article = body_page(f'<div class="abstract">{PEAT * 60}</div>')

    assert read(truncated)[:2] == ("truncated", "body:div.abstract")
    assert read(no_title_word)[:2] == ("not_an_abstract", "body:div.abstract")
    found = read_abstract(whole_article, min_chars=100)
    assert (found.outcome, found.field) == (LandingOutcome.NOT_AN_ABSTRACT, "body:div.abstract")
    assert "more than any abstract" in found.detail


def test_a_challenge_page_stays_blocked_whatever_its_body_holds() -> None:
    html = (
        "<html><head><title>Just a moment...</title></head><body>"
        f'<div class="abstract">{PEAT}</div></body></html>'
    )

    assert read(html) == ("blocked", None, None)


def test_the_metadata_wins_and_the_body_is_not_read_when_it_holds_the_abstract() -> None:
    html = body_page(
        f'<div class="abstract">{PEAT.replace("ten", "twelve")}</div>',
        head=f'<meta name="citation_abstract" content="{PEAT}">',
    )

    assert read(html) == ("abstract", "citation_abstract", PEAT)


def test_empty_meta_tags_give_way_to_the_body() -> None:
    """An older HighWire (bioRxiv) layout ships its abstract meta tags empty."""
    html = body_page(
        '<div class="section abstract" id="abstract-1"><h2>Abstract</h2>'
        f'<p id="p-2">{PEAT}</p></div>',
        head='<meta name="citation_abstract" content=""><meta name="DC.Description" content="">'
        '<meta property="og:description" content="">',
    )

    found = read_abstract(html, min_chars=100)

    assert (found.outcome, found.field, found.abstract) == (
        LandingOutcome.ABSTRACT,
        "body:div#abstract-1",
        PEAT,
    )
    verdicts = [(v.field, v.outcome.value) for v in judge_fields(html, min_chars=100)]
    assert verdicts[0] == ("citation_abstract", "too_short")
