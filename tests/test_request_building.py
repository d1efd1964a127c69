"""Page 1-3 requests of every engine, as the real engines page (not the old design table)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import yaml

from lyra_crawl.config import ConfigError, load_config, parse_config
from lyra_crawl.engines.request import (
    QueryError,
    build_follow_up,
    build_page_request,
    secrets_from_settings,
    with_credentials,
)
from tests.conftest import ROOT

CONFIG = load_config()
QUERY = "heat pumps"


def params(engine: str, page: int, **options: Any) -> dict[str, str]:
    request = build_page_request(CONFIG.engine(engine), QUERY, page, **options)
    if request.method == "POST":
        return dict(request.formdata or ())
    return dict(parse_qsl(urlsplit(request.url).query))


# engine, paging parameter, its value on pages 1, 2, 3 (None = absent)
PAGING = [
    ("google", "start", [None, "10", "20"]),
    ("bing", "first", ["1", "11", "21"]),
    ("mojeek", "s", [None, "11", "21"]),
    ("brave", "offset", [None, "1", "2"]),
    ("ecosia", "p", [None, "1", "2"]),
    ("startpage", "page", [None, "2", "3"]),
    ("marginalia", "page", [None, "2", "3"]),
    ("qwant", "offset", ["0", "10", "20"]),
    ("wikipedia", "sroffset", ["0", "20", "40"]),
    ("wikidata", "continue", ["0", "7", "14"]),
    ("arxiv", "start", ["0", "10", "20"]),
    ("pubmed", "retstart", ["0", "20", "40"]),
    ("semantic_scholar", "offset", ["0", "100", "200"]),
    ("openalex", "page", ["1", "2", "3"]),
    ("crossref", "offset", ["0", "100", "200"]),
]


@pytest.mark.parametrize(("engine", "param", "values"), PAGING, ids=[p[0] for p in PAGING])
def test_pages_one_to_three_follow_the_engine(engine: str, param: str, values: list) -> None:
    for page, value in enumerate(values, start=1):
        assert params(engine, page).get(param) == value, f"{engine} page {page}"


def test_duckduckgo_page_one_is_a_get_and_later_pages_come_from_its_form() -> None:
    spec = CONFIG.engine("duckduckgo")
    first = build_page_request(spec, QUERY, 1)

    assert first.method == "GET"
    assert dict(parse_qsl(urlsplit(first.url).query)) == {"q": QUERY, "kl": "wt-wt"}
    assert spec.next_page == "form" and "vqd" in (spec.next_page_form or "")


def test_startpage_posts_the_token_its_home_page_handed_over() -> None:
    request = build_page_request(CONFIG.engine("startpage"), QUERY, 1, tokens={"sc": "abc123"})

    assert request.method == "POST"
    assert request.url == "https://www.startpage.com/sp/search"
    assert dict(request.formdata or ()) == {"query": QUERY, "cat": "web", "sc": "abc123"}


@pytest.mark.parametrize("engine", ["wikipedia", "wikidata"])
def test_mediawiki_apis_are_asked_not_to_answer_while_their_replicas_lag(engine: str) -> None:
    assert [params(engine, page).get("maxlag") for page in (1, 2, 3)] == ["5", "5", "5"]


@pytest.mark.parametrize("engine", ["wikipedia", "wikidata", "crossref"])
def test_apis_that_ask_tools_to_say_who_they_are_get_lyras_user_agent(engine: str) -> None:
    spec = CONFIG.engine(engine)
    contact = {"contact_email": "lab@example.org"}

    assert dict(build_page_request(spec, QUERY, 1).headers)["User-Agent"] == "lyra_crawl"
    introduced = build_page_request(spec, QUERY, 2, secrets=contact)
    assert dict(introduced.headers)["User-Agent"] == "lyra_crawl (+mailto:lab@example.org)"


def test_pubmed_names_the_tool_and_the_contact_when_there_is_one() -> None:
    with_contact = params("pubmed", 1, secrets={"contact_email": "lab@example.org"})

    assert (with_contact["tool"], with_contact["email"]) == ("lyra_crawl", "lab@example.org")
    assert "email" not in params("pubmed", 1) and params("pubmed", 1)["tool"] == "lyra_crawl"


@pytest.mark.parametrize("engine", ["google", "mojeek", "semantic_scholar", "openalex"])
def test_other_engines_leave_the_user_agent_to_the_crawl(engine: str) -> None:
    request = build_page_request(CONFIG.engine(engine), QUERY, 1, secrets={"contact_email": "x"})

    assert "User-Agent" not in dict(request.headers)


def test_wikipedia_language_is_the_subdomain() -> None:
    request = build_page_request(CONFIG.engine("wikipedia"), QUERY, 1, region="de")

    assert urlsplit(request.url).hostname == "de.wikipedia.org"


@pytest.mark.parametrize(("engine", "cap"), [("qwant", 5), ("brave", 10), ("startpage", 18)])
def test_no_request_is_built_past_the_engines_max_pages(engine: str, cap: int) -> None:
    spec = CONFIG.engine(engine)
    assert spec.max_pages == cap
    build_page_request(spec, QUERY, cap, tokens={"sc": "x"})

    with pytest.raises(QueryError, match=f"at most {cap} pages"):
        build_page_request(spec, QUERY, cap + 1)


def test_google_caps_at_fifty_pages() -> None:
    assert CONFIG.engine("google").max_pages == 50


def test_pubmed_follow_up_asks_esummary_for_the_ids_in_order() -> None:
    request = build_follow_up(CONFIG.engine("pubmed"), ["3", "1", "2"])

    assert dict(parse_qsl(urlsplit(request.url).query)) == {
        "db": "pubmed",
        "id": "3,1,2",
        "retmode": "json",
        "tool": "lyra_crawl",
    }
    # The crawl adds the engine's credentials, which the parser building it does not hold.
    sent = with_credentials(CONFIG.engine("pubmed"), request, {"contact_email": "lab@example.org"})
    assert dict(parse_qsl(urlsplit(sent.url).query))["email"] == "lab@example.org"
    assert with_credentials(CONFIG.engine("pubmed"), request, {}).url == request.url


@pytest.mark.parametrize(
    ("engine", "change", "message"),
    [
        ("startpage", {"token_page": "https://evil.example/"}, "must be on the engine's host"),
        ("startpage", {"token_fields": None}, "token_page and token_fields go together"),
        ("qwant", {"parser": "nosuch"}, "parser must be one of"),
        ("bing", {"parser": "qwant"}, "html engines are parsed by their XPath rules"),
        ("duckduckgo", {"next_page_form": None}, "next_page_form is missing"),
        (
            "semantic_scholar",
            {"max_pages": 11},
            "max_pages 11 with results_per_page 100 reaches result 1100, past "
            "max_results_window 1000",
        ),
        ("semantic_scholar", {"max_results_window": 0}, "max_results_window must be >= 1"),
        ("openalex", {"scholarly": "yes"}, "scholarly must be true or false"),
        ("semantic_scholar", {"headers": {"x-api-key": "{query}"}}, "unknown placeholder {query}"),
        ("crossref", {"params": {"mailto": "{email}"}}, "unknown placeholder {email}"),
        (
            "pubmed",
            {
                "follow_up": {
                    "url": "https://eutils.ncbi.nlm.nih.gov/x",
                    "params": {"id": "{pmids}"},
                }
            },
            "unknown placeholder {pmids}",
        ),
    ],
)
def test_engine_fields_are_validated_with_a_clear_message(engine, change, message) -> None:
    parsers = yaml.safe_load((ROOT / "config" / "search_parsers.yaml").read_text())
    parsers["engines"][engine].update(change)
    policy = (ROOT / "config" / "engines.yaml").read_text()

    with pytest.raises(ConfigError, match=re.escape(message)) as error:
        parse_config(yaml.safe_dump(parsers), policy)
    assert str(error.value).startswith(f"search_parsers.yaml: engine '{engine}': ")


SECRETS = {"s2_api_key": "s2-secret", "openalex_api_key": "oa-secret", "contact_email": "a@b.org"}


def api_request(engine: str, page: int, secrets: dict[str, str] | None = None):
    request = build_page_request(CONFIG.engine(engine), QUERY, page, secrets=secrets)
    return request, dict(parse_qsl(urlsplit(request.url).query))


def test_semantic_scholar_pages_by_offset_and_limit_with_the_fields_it_parses() -> None:
    request, query = api_request("semantic_scholar", 3)

    assert urlsplit(request.url).path == "/graph/v1/paper/search"
    assert (query["query"], query["offset"], query["limit"]) == (QUERY, "200", "100")
    assert set(query["fields"].split(",")) >= {"title", "url", "year", "authors", "externalIds"}
    assert set(query["fields"].split(",")) >= {"venue", "abstract"}


def test_semantic_scholar_sends_its_key_as_a_header_only_when_set() -> None:
    without, _ = api_request("semantic_scholar", 1)
    with_key, query = api_request("semantic_scholar", 1, SECRETS)

    assert without.headers == ()
    assert with_key.headers == (("x-api-key", "s2-secret"),)
    assert "s2-secret" not in with_key.url and "api_key" not in query


def test_semantic_scholar_never_builds_a_page_past_its_1000_result_window() -> None:
    spec = CONFIG.engine("semantic_scholar")
    _, last = api_request("semantic_scholar", 10)
    assert int(last["offset"]) + int(last["limit"]) == spec.max_results_window == 1000

    with pytest.raises(QueryError, match="at most 10 pages"):
        build_page_request(spec, QUERY, 11)


def test_openalex_pages_by_page_and_sends_key_and_mailto_when_set() -> None:
    _, bare = api_request("openalex", 2)
    _, query = api_request("openalex", 2, SECRETS)

    assert bare == {"search": QUERY, "per-page": "100", "page": "2"}
    assert query == {**bare, "api_key": "oa-secret", "mailto": "a@b.org"}


def test_crossref_pages_by_rows_and_offset_with_mailto_when_set() -> None:
    _, bare = api_request("crossref", 3)
    _, query = api_request("crossref", 3, SECRETS)

    assert bare == {"query": QUERY, "rows": "100", "offset": "200"}
    assert query == {**bare, "mailto": "a@b.org"}


def test_secrets_come_from_settings_and_unset_ones_are_empty() -> None:
    settings = {"LYRA_S2_API_KEY": " s2-secret ", "LYRA_CONTACT_EMAIL": "a@b.org"}

    assert secrets_from_settings(settings) == {
        "s2_api_key": "s2-secret",
        "openalex_api_key": "",
        "contact_email": "a@b.org",
    }
    with pytest.raises(ValueError, match="LYRA_S2_API_KEY holds a control character"):
        secrets_from_settings({"LYRA_S2_API_KEY": "key\r\nX-Evil: 1"})


def test_a_header_needing_an_empty_secret_is_left_out_even_with_fixed_text() -> None:
    parsers = yaml.safe_load((ROOT / "config" / "search_parsers.yaml").read_text())
    parsers["engines"]["crossref"]["headers"] = {"Crossref-Plus-API-Token": "Bearer {s2_api_key}"}
    config = parse_config(yaml.safe_dump(parsers), (ROOT / "config" / "engines.yaml").read_text())
    spec = config.engine("crossref")

    assert "Crossref-Plus-API-Token" not in dict(build_page_request(spec, QUERY, 1).headers)
    headers = dict(build_page_request(spec, QUERY, 1, secrets=SECRETS).headers)
    assert headers["Crossref-Plus-API-Token"] == "Bearer s2-secret"


def test_scholarly_sources_are_marked() -> None:
    scholarly = {name for name, spec in CONFIG.engines.items() if spec.scholarly}

    assert scholarly == {"arxiv", "pubmed", "semantic_scholar", "openalex", "crossref"}
