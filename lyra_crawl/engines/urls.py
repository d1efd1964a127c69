"""URL normalisation (the dedupe key) and unwrapping of engines' redirect links. Pure."""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

TRACKING_PARAMS = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "igshid",
        "ref_src",
        "_hsenc",
        "_hsmi",
        "srsltid",
    }
)
TRACKING_PREFIXES = ("utm_",)

# A URL already in its normal form but for the "/" of an empty path: lower-case http(s) scheme
# and host (labels IDNA leaves alone), no port, user, query or fragment, a path of unreserved
# characters with no segment starting with a dot ("." and ".." get resolved). Most results are
# such URLs, and matching them costs a twentieth of the full normalisation. With no query there
# is no redirect to unwrap either.
_NORMAL_URL = re.compile(
    r"https?://(?!xn--)[a-z0-9-]{1,63}(?:\.(?!xn--)[a-z0-9-]{1,63})*((?:/(?!\.)[A-Za-z0-9._~-]*)*)"
)


def unwrap_redirect(url: str) -> str:
    """Return the target of an engine's click-tracking link, or `url` unchanged."""
    for _ in range(3):  # wrappers can nest (a Bing link to a DuckDuckGo link, …)
        target = _unwrap_once(url)
        if target is None or target == url:
            return url
        url = target
    return url


def _unwrap_once(url: str) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = parts.path
    if host.endswith("duckduckgo.com") and path.startswith("/l/"):
        return _query_params(parts.query).get("uddg")
    if (host.startswith("google.") or ".google." in host or host == "") and path == "/url":
        params = _query_params(parts.query)
        return params.get("q") or params.get("url")
    if host.endswith("bing.com") and path.startswith("/ck/a"):
        return _bing_target(_query_params(parts.query).get("u", ""))
    return None


def _query_params(query: str) -> dict[str, str]:
    # Read only for a redirect link: most result URLs are none, and parsing costs more than
    # the rest of the check.
    return dict(parse_qsl(query, keep_blank_values=True))


def _bing_target(value: str) -> str | None:
    # Bing's `u` is "a1" followed by the target URL in unpadded URL-safe base64.
    if not value.startswith("a1"):
        return None
    encoded = value[2:]
    try:
        decoded = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return decoded if decoded.startswith(("http://", "https://")) else None


def is_web_url(url: str) -> bool:
    """True for absolute http(s) URLs with a host: the only results worth storing."""
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # an unbalanced IPv6 bracket, a port out of range
        return False


def normalize_url(url: str) -> str:
    """The dedupe key: unwrapped, canonical, lower-case host, no fragment, no tracking params."""
    url = url.strip()
    normal = _NORMAL_URL.fullmatch(url)
    if normal is not None:
        return url if normal.group(1) else f"{url}/"
    url = unwrap_redirect(url)
    parts = urlsplit(url)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() not in TRACKING_PARAMS and not key.lower().startswith(TRACKING_PREFIXES)
    ]
    host = (parts.hostname or "").lower().rstrip(".")
    default_port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: keep the host alone
        port = None
    netloc = host if port in (None, default_port) else f"{host}:{port}"
    rebuilt = urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", urlencode(query), ""))
    return canonicalize_url(rebuilt, keep_fragments=False)
