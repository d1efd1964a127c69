"""Build the request for page N of an engine from its spec. Pure.

Query text only ever reaches the URL as an encoded parameter value, and every built URL is
checked against the engine's configured host, so no query can change where a request goes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode, urlsplit

from w3lib.url import url_query_cleaner

from lyra_crawl.config import SECRET_PLACEHOLDERS, SECRET_SETTINGS, EngineSpec
from lyra_crawl.config.fields import placeholders
from lyra_crawl.engines.base import PageRequest
from lyra_crawl.quoting import show

# The name lyra gives itself to engines that ask (EngineSpec.identify).
TOOL_NAME = "lyra_crawl"

_LANGUAGE_RE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})?$")


class QueryError(ValueError):
    """A query or search option the engine cannot take; the message says what to change."""


class HostMismatchError(ValueError):
    """A built URL points somewhere other than the engine's configured host."""


def page_offset(spec: EngineSpec, page_number: int) -> int:
    return (page_number - 1) * spec.results_per_page + spec.offset_base


def page_index(spec: EngineSpec, page_number: int) -> int:
    return page_number - 1 + spec.page_base


def resolve_region(spec: EngineSpec, region: str | None) -> str:
    """The engine's value for our region code ('' when neither given nor defaulted)."""
    if region is None:
        return spec.region.get(spec.default_region, "") if spec.default_region else ""
    if region not in spec.region:
        supported = ", ".join(sorted(spec.region)) or "none"
        raise QueryError(
            f"engine '{spec.name}' does not support region {show(region)}: use one of {supported}"
        )
    return spec.region[region]


def resolve_time_range(spec: EngineSpec, time_range: str | None) -> str:
    if time_range is None:
        return ""
    if time_range not in spec.time_range:
        supported = ", ".join(spec.time_range) or "none"
        raise QueryError(
            f"engine '{spec.name}' does not support time_range {show(time_range)}: "
            f"use one of {supported}, or leave it out"
        )
    return spec.time_range[time_range]


def check_query(spec: EngineSpec, query: str) -> None:
    if not query.strip():
        raise QueryError('query is empty: pass the search text with -a query="..."')
    if len(query) > spec.max_query_length:
        raise QueryError(
            f"query is {len(query)} characters, engine '{spec.name}' takes at most "
            f"{spec.max_query_length}: shorten the query"
        )


def check_query_options(
    spec: EngineSpec,
    query: str,
    *,
    region: str | None = None,
    time_range: str | None = None,
    first_page: int = 1,
) -> None:
    """Whether the engine takes this query from page `first_page`, checked before any request
    is built: QueryError saying what to change when it does not (the query's length, the
    region, the time range, the first page)."""
    check_query(spec, query)
    expected_host(spec, region)
    resolve_time_range(spec, time_range)
    if first_page > spec.max_pages:
        raise QueryError(
            f"serp_page {first_page} is beyond engine '{spec.name}''s last page "
            f"{spec.max_pages}: use -a serp_page=1..{spec.max_pages}"
        )
    if first_page > 1 and spec.next_page == "form":
        # Page N+1 is asked for with a token page N's answer hands over.
        raise QueryError(
            f"engine '{spec.name}' hands a token from page to page: start at serp_page=1"
        )


def expected_host(spec: EngineSpec, region: str | None = None) -> str:
    """The host every request to this engine must go to."""
    language = resolve_region(spec, region)
    host = spec.host
    if "{language}" in spec.url:
        if not _LANGUAGE_RE.match(language):
            raise QueryError(f"engine '{spec.name}' needs a language code, got {show(language)}")
        host = urlsplit(spec.url.format(language=language)).hostname or ""
    return host


def ensure_engine_host(spec: EngineSpec, url: str, region: str | None = None) -> str:
    """Return `url` if it goes to the engine's host over http(s); raise otherwise."""
    parts = urlsplit(url)
    host = expected_host(spec, region)
    if parts.scheme not in ("http", "https") or (parts.hostname or "") != host:
        raise HostMismatchError(
            f"refusing request for engine '{spec.name}' to {parts.hostname!r}: "
            f"only {host} is configured"
        )
    return url


def build_page_request(
    spec: EngineSpec,
    query: str,
    page_number: int,
    *,
    region: str | None = None,
    time_range: str | None = None,
    tokens: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
) -> PageRequest:
    """The GET (or POST) request for page `page_number` computed from the spec's formula.

    `tokens` are fields a token page handed over (Startpage's `sc`), sent along unchanged.
    `secrets` fill the secret placeholders (see secrets_from_settings); a parameter or header
    whose secret is missing or empty is left out.
    """
    if page_number < 1:
        raise QueryError(f"page numbers start at 1 (got {page_number})")
    check_max_pages(spec, page_number)
    check_query(spec, query)
    region_value = resolve_region(spec, region)
    values = {
        "query": query,
        "offset": str(page_offset(spec, page_number)),
        "page": str(page_index(spec, page_number)),
        "results_per_page": str(spec.results_per_page),
        "time_range": resolve_time_range(spec, time_range),
        "region": region_value,
        "language": region_value,
    }
    given, missing = _secret_values(secrets)
    values.update(given)
    omitted = spec.first_page_omits if page_number == 1 else ()
    params = _rendered(
        {key: value for key, value in spec.params.items() if key not in omitted}, values, missing
    )
    params.extend((tokens or {}).items())
    headers = _headers(spec, values, missing)
    base = spec.url.format(language=region_value) if "{language}" in spec.url else spec.url
    url = f"{base}?{urlencode(params)}" if params else base
    ensure_engine_host(spec, url, region)
    if spec.method == "POST":
        return PageRequest(url=base, method="POST", formdata=tuple(params), headers=headers)
    return PageRequest(url=url, headers=headers)


def build_api_request(
    spec: EngineSpec,
    url: str,
    params: Sequence[tuple[str, str]],
    *,
    secrets: Mapping[str, str] | None = None,
) -> PageRequest:
    """A GET to another endpoint of an API engine (a paper's references, say), with the
    engine's credentials as its page requests carry them: its headers, and the parameters that
    hold only secrets (api_key, mailto). One whose secret is missing is left out."""
    values, missing = _secret_values(secrets)
    query = [*params, *_credentials(spec, values, missing)]
    full = f"{url}?{urlencode(query)}" if query else url
    ensure_engine_host(spec, full)
    return PageRequest(url=full, headers=_headers(spec, values, missing))


def with_credentials(
    spec: EngineSpec, page: PageRequest, secrets: Mapping[str, str] | None
) -> PageRequest:
    """`page` (a follow-up a parser built, without the secrets) with the engine's credentials
    as its page requests carry them: its headers, and the parameters that hold only secrets."""
    values, missing = _secret_values(secrets)
    extra = _credentials(spec, values, missing)
    url = page.url
    if extra:
        url = f"{url}{'&' if urlsplit(url).query else '?'}{urlencode(extra)}"
    return replace(page, url=url, headers=(*page.headers, *_headers(spec, values, missing)))


def _credentials(
    spec: EngineSpec, values: Mapping[str, str], missing: Sequence[str]
) -> list[tuple[str, str]]:
    """The engine's parameters that hold only secrets (api_key, mailto), filled in; one whose
    secret is missing is left out."""
    templates = {
        key: template
        for key, template in spec.params.items()
        if placeholders(template) and placeholders(template) <= SECRET_PLACEHOLDERS
    }
    return _rendered(templates, values, missing)


def identifying_user_agent(tool: str, contact_email: str) -> str:
    """A User-Agent naming the tool and, when given, how to reach its operator, as
    Wikimedia's User-Agent policy and Crossref's etiquette ask of clients that are not
    browsers (a browser's User-Agent on a script's traffic is taken for an attempt to hide)."""
    return f"{tool} (+mailto:{contact_email})" if contact_email else tool


def _headers(
    spec: EngineSpec, values: Mapping[str, str], missing: Sequence[str]
) -> tuple[tuple[str, str], ...]:
    """The engine's headers, lyra's own User-Agent first for an engine that asks for it."""
    headers = _rendered(spec.headers, values, missing)
    if spec.identify and "User-Agent" not in spec.headers:
        agent = identifying_user_agent(TOOL_NAME, values.get("contact_email", ""))
        headers.insert(0, ("User-Agent", agent))
    return tuple(headers)


def _secret_values(secrets: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """Each secret placeholder's value ('' when not given), and the placeholders left empty."""
    given = {name: (secrets or {}).get(name, "") for name in SECRET_PLACEHOLDERS}
    return given, [f"{{{name}}}" for name, value in given.items() if not value]


def with_query(spec: EngineSpec, page: PageRequest, query: str) -> PageRequest:
    """`page` (an engine's own next-page form) with our query in its query field.

    The form echoes the query through HTML, which cannot carry NUL and turns other control
    characters into U+FFFD: posted back as is, page N+1 would search for other text.
    """
    if page.formdata is None:
        return page
    keys = {key: template for key, template in spec.params.items() if "{query}" in template}
    formdata = tuple(
        (name, keys[name].replace("{query}", query) if name in keys else value)
        for name, value in page.formdata
    )
    return replace(page, formdata=formdata)


def _rendered(
    templates: Mapping[str, str], values: Mapping[str, str], missing: Sequence[str]
) -> list[tuple[str, str]]:
    """Each template filled in; left out when it comes out empty or needs a missing secret."""
    rendered = (
        (key, template.format_map(values))
        for key, template in templates.items()
        if not any(placeholder in template for placeholder in missing)
    )
    return [(key, value) for key, value in rendered if value]


def secrets_from_settings(settings: Mapping[str, Any]) -> dict[str, str]:
    """The secret placeholders' values from Scrapy settings (LYRA_S2_API_KEY, …); unset = ''.

    A value holding a line break or another control character is refused: it would end up in
    a header, where it could smuggle in headers of its own.
    """
    secrets = {}
    for placeholder, setting in SECRET_SETTINGS.items():
        value = str(settings.get(setting) or "").strip()
        if any(ord(char) < 32 or ord(char) == 127 for char in value):
            raise ValueError(f"setting {setting} holds a control character: set it again")
        secrets[placeholder] = value
    return secrets


# Credentials are kept out of stored page URLs and reports; a contact address is not one.
REDACTED_PLACEHOLDERS = ("{s2_api_key}", "{openalex_api_key}")


def redact_secrets(spec: EngineSpec, url: str) -> str:
    """`url` without the query parameters that carry an API key, for storage and logs."""
    secret_params = [
        key
        for key, template in spec.params.items()
        if any(placeholder in template for placeholder in REDACTED_PLACEHOLDERS)
    ]
    return url_query_cleaner(url, secret_params, remove=True) if secret_params else url


def check_max_pages(spec: EngineSpec, page_number: int) -> None:
    """Refuse a page past the engine's own cap, before any request is built."""
    if page_number > spec.max_pages:
        raise QueryError(
            f"engine '{spec.name}' serves at most {spec.max_pages} pages: page {page_number} "
            "is never requested"
        )


def build_follow_up(spec: EngineSpec, ids: Sequence[str]) -> PageRequest:
    """The request that completes a page from the ids it listed (PubMed's esummary)."""
    if spec.follow_up is None:
        raise ValueError(f"engine '{spec.name}' has no follow_up in its spec")
    params = [
        (key, template.format(ids=",".join(ids))) for key, template in spec.follow_up.params.items()
    ]
    return PageRequest(url=f"{spec.follow_up.url}?{urlencode(params)}")
