"""The simulator's publisher landing pages over loopback HTTP: each kind gives the paper's
abstract where real publishers put it (metadata, microdata, the body only; or no abstract, or a
403), and DOI links lead there."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
import requests
from parsel import Selector
from protego import Protego

from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.simulator.citations import OUTSIDE_BASE, PaperKey
from lyra_crawl.simulator.corpus import abstract_of, abstract_withheld, make_result
from lyra_crawl.simulator.engines.landing import (
    LANDING_KINDS,
    PREVIEW_CHARS,
    PUBLISHER_BLURB,
    landing_kind,
)
from tests.conftest import Simulator

QUERY = "peatland carbon"
# The papers whose abstract the APIs withhold, one of each kind in LANDING_KINDS' order.
WITHHELD = [3 + 4 * step for step in range(len(LANDING_KINDS))]


def landing(simulator: Simulator, url: str) -> requests.Response:
    routed = route_to_simulator(url, "landing", simulator.url)
    return requests.get(routed, timeout=10, allow_redirects=False)


def asked(simulator: Simulator) -> Simulator:
    """`simulator` once a search for QUERY was answered (its papers resolve from then on)."""
    page = requests.get(f"{simulator.url}/mojeek/search", params={"q": QUERY}, timeout=10)
    assert page.status_code == 200
    return simulator


def metadata(page: Selector) -> dict[str, str]:
    """Each place a publisher may put the abstract, with what the page holds there."""
    found = {
        name: page.xpath(f'//meta[@name="{name}" or @property="{name}"]/@content').get()
        for name in ("citation_abstract", "DC.description", "og:description", "dc.description")
    }
    for script in page.xpath('//script[@type="application/ld+json"]/text()').getall():
        article = json.loads(script)
        if article.get("@type") == "ScholarlyArticle":
            found["json_ld"] = article.get("abstract")
    return {name: text for name, text in found.items() if text is not None}


def test_each_kind_of_publisher_page_gives_the_abstract_its_own_way(simulator: Simulator) -> None:
    asked(simulator)
    kinds = {}
    for number in WITHHELD:
        result = make_result(QUERY, number, on_topic=True)
        assert abstract_withheld(result)
        kind = kinds[number] = landing_kind(PaperKey(QUERY, number))
        answer = landing(simulator, result.landing_url)
        if kind == "forbidden":
            assert answer.status_code == 403 and "Access denied" in answer.text
            continue
        assert answer.status_code == 200, (number, answer.status_code)
        page = Selector(text=answer.text)
        found = metadata(page)
        abstract = abstract_of(result)
        expected = {
            "highwire": {"citation_abstract"},
            "dublin_core": {"DC.description"},
            "open_graph": {"og:description"},
            "json_ld": {"json_ld"},
            "combined": {"og:description", "dc.description", "json_ld"},
            "none": set(),
            "body": {"og:description"},
            "microdata": set(),
        }[kind]
        assert set(found) == expected, (kind, found)
        if kind == "body":  # a preview cut with an ellipsis, as ScienceDirect's
            assert found["og:description"] == abstract[:PREVIEW_CHARS].rstrip() + "…"
        else:
            # Unescaped from the attribute or JSON: the very text, `<`, `±` and `°C` included.
            assert all(text == abstract for text in found.values()), kind
        if kind == "none":
            assert abstract not in answer.text
            assert page.xpath('//meta[@name="description"]/@content').get() == PUBLISHER_BLURB
        elif kind == "body":
            blocks = page.css("#abstracts > div")
            assert [b.attrib["class"] for b in blocks] == [
                "abstract author-highlights",
                "abstract author",
                "abstract graphical",
            ]
            assert blocks[1].css("p::text").get() == abstract
        elif kind == "microdata":
            item = page.xpath('//*[@itemtype="http://schema.org/ScholarlyArticle"]')
            assert item.xpath('.//*[@itemprop="description"]/p/text()').get() == abstract
            assert item.xpath('.//*[@itemprop="headline"]/text()').get() == result.title
        else:
            assert page.css("section.abstract p::text").get() == abstract
        if kind in ("highwire", "combined", "none"):
            assert page.xpath('//meta[@name="citation_title"]/@content').get() == result.title
            assert len(page.xpath('//meta[@name="citation_author"]')) == len(result.authors)
    assert sorted(set(kinds.values())) == sorted(LANDING_KINDS)


def test_a_doi_link_redirects_to_the_publisher_page(simulator: Simulator) -> None:
    asked(simulator)
    result = make_result(QUERY, 20, on_topic=True)
    assert result.doi and result.url == f"https://doi.org/{result.doi}"

    answer = landing(simulator, result.url)

    assert answer.status_code == 302
    location = answer.headers["Location"]
    assert location == "/landing" + urlsplit(result.landing_url).path
    page = requests.get(simulator.url + location, timeout=10)
    assert page.status_code == 200
    assert Selector(text=page.text).css("h1::text").get() == result.title


@pytest.mark.parametrize(
    "url",
    [
        "https://www.nature.com/no-such-paper/1",
        # A paper of a query the simulator was never asked.
        make_result("never asked", 3, on_topic=True).landing_url,
    ],
)
def test_pages_of_no_known_paper_are_not_found(simulator: Simulator, url: str) -> None:
    asked(simulator)
    assert landing(simulator, url).status_code == 404


def test_papers_outside_the_results_have_pages_too(simulator: Simulator) -> None:
    asked(simulator)
    result = make_result(QUERY, OUTSIDE_BASE + 1, on_topic=True)

    answer = landing(simulator, result.landing_url)

    kind = landing_kind(PaperKey(QUERY, OUTSIDE_BASE + 1))
    assert answer.status_code == (403 if kind == "forbidden" else 200), kind


def test_an_open_access_pdf_is_a_pdf(simulator: Simulator) -> None:
    answer = landing(simulator, "https://repository.sim/pdf/0123456789ab.pdf")

    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/pdf"
    assert answer.content.startswith(b"%PDF-")


def test_the_publishers_robots_txt_keeps_each_querys_paper_19_off_limits(
    simulator: Simulator,
) -> None:
    def page(number: int) -> str:
        path = urlsplit(make_result(QUERY, number, on_topic=True).landing_url).path
        return f"{simulator.url}/landing{path}"

    robots = Protego.parse(requests.get(f"{simulator.url}/robots.txt", timeout=10).text)

    assert not robots.can_fetch(page(19), "lyra_crawl-papers")
    assert robots.can_fetch(page(191), "lyra_crawl-papers")
    assert robots.can_fetch(page(3), "lyra_crawl-papers")
