"""A backend URL as logs and messages may show it. Apart from backends/__init__.py, which opens
the backends, so that the backends it opens import it without importing their opener."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """`url` without its password, fit for logs and messages; never raises."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL urllib can read (a bad IPv6 host): show only its scheme
        return f"{url.partition(':')[0]}://***"
    if not password:
        return url
    # Rebuilt from the netloc as written: `hostname` would drop an IPv6 host's brackets.
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
