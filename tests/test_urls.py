"""URL normalisation (the dedupe key) and redirect unwrapping."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_crawl.engines.urls import is_web_url, normalize_url, unwrap_redirect


def bing_link(target: str) -> str:
    encoded = base64.urlsafe_b64encode(target.encode()).decode().rstrip("=")
    return f"https://www.bing.com/ck/a?!&&p=abc&u=a1{encoded}&ntb=1"


@pytest.mark.parametrize(
    ("wrapped", "target"),
    [
        (
            "https://duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FFoo&rut=abc",
            "https://en.wikipedia.org/wiki/Foo",
        ),
        (
            "https://www.google.com/url?q=https://example.org/a%3Fb%3D1&sa=U",
            "https://example.org/a?b=1",
        ),
        ("/url?q=https://example.org/page&sa=U&ved=x", "https://example.org/page"),
        (bing_link("https://example.org/paper?id=7"), "https://example.org/paper?id=7"),
        ("https://example.org/plain", "https://example.org/plain"),
    ],
)
def test_redirect_wrappers_are_unwrapped(wrapped, target):
    assert unwrap_redirect(wrapped) == target


def test_a_broken_bing_wrapper_is_left_alone():
    link = "https://www.bing.com/ck/a?u=a1!!notbase64"
    assert unwrap_redirect(link) == link


@pytest.mark.parametrize(
    ("url", "normalized"),
    [
        ("HTTPS://Example.ORG/Path#section", "https://example.org/Path"),
        ("https://example.org:443/a?b=2&a=1", "https://example.org/a?a=1&b=2"),
        (
            "https://example.org/a?utm_source=x&utm_medium=y&id=3&gclid=z",
            "https://example.org/a?id=3",
        ),
        ("http://example.org", "http://example.org/"),
        ("https://example.org:8443/x", "https://example.org:8443/x"),
        (
            "https://duckduckgo.com/l/?uddg=https%3A%2F%2FExample.org%2Fa%3Futm_campaign%3Dq",
            "https://example.org/a",
        ),
    ],
)
def test_normalize_url(url, normalized):
    assert normalize_url(url) == normalized


def test_same_page_different_dress_same_key():
    variants = [
        "https://www.example.org/report?year=2024&lang=en",
        "https://WWW.EXAMPLE.ORG/report?lang=en&year=2024#top",
        "https://www.example.org/report?lang=en&year=2024&utm_source=newsletter",
    ]
    assert len({normalize_url(v) for v in variants}) == 1


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://example.org/", True),
        ("http://example.org", True),
        ("javascript:alert(1)", False),
        ("data:text/html,hi", False),
        ("/relative/path", False),
        ("ftp://example.org/file", False),
    ],
)
def test_only_web_urls_count(url, ok):
    assert is_web_url(url) is ok


# Results' URLs as engines show them: mostly already normal (lower case, no query), some not.
_RESULT_URLS = st.one_of(
    st.from_regex(
        r"https?://(?:[a-z0-9-]{1,8}\.){0,3}[a-z0-9-]{1,8}(?:/[A-Za-z0-9._~-]{0,6}){0,4}",
        fullmatch=True,
    ),
    st.from_regex(
        r"(?i:https?)://(?:[a-zA-Z0-9-]{1,8}\.){0,3}[a-zA-Z0-9-]{1,8}(?::[0-9]{1,5})?"
        r"(?:/[A-Za-z0-9._~%!$&'()*+,;=:@-]{0,8}){0,4}(?:\?[a-z0-9_=&%+.-]{0,12})?",
        fullmatch=True,
    ),
)


@settings(max_examples=2000, deadline=None)
@given(_RESULT_URLS)
def test_a_fragment_never_changes_the_key(url):
    # A fragment sends the URL through the full normalisation whatever its form, so this also
    # holds the shortcut for URLs already normal to what the full normalisation gives.
    assert normalize_url(url) == normalize_url(f"{url}#section")
