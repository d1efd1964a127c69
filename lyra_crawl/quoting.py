"""A value quoted in a message: short, on one line, whatever it is. Pure.

Every error that quotes what a user gave (an argument, a batch entry, a config field) quotes it
through `show`: a megabyte string or a list a YAML alias stands for ends a message in at most
QUOTE_CHARS characters and its length, never in the whole of it. A URL that may hold a password
(a backend's) is shown through `redact_url`, and a driver's message that may quote it through
`without_password`.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

# The most of a value a message quotes.
QUOTE_CHARS = 100

# Whole numbers beyond this many bits (about 90 digits) are described, not quoted.
_INT_BITS = 300
_DIGITS_PER_BIT = 0.30103
# Containers are quoted a few items deep: `repr` would walk every value an alias stands for.
_CONTAINERS = reprlib.Repr()
_CONTAINERS.maxlevel = 2
_CONTAINERS.maxtuple = _CONTAINERS.maxlist = _CONTAINERS.maxdict = _CONTAINERS.maxset = 4
_CONTAINERS.maxstring = _CONTAINERS.maxother = 30


def show(value: Any) -> str:
    """`value` as Python quotes it (so a line break in it stays on the message's line), cut to
    QUOTE_CHARS characters with its length: `'xxx…' (5,000 characters)`."""
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        shown = _CONTAINERS.repr(value)
        if len(shown) <= QUOTE_CHARS and "..." not in shown:
            return shown
        kind = "mapping" if isinstance(value, Mapping) else type(value).__name__
        cut = shown if len(shown) <= QUOTE_CHARS else f"{shown[:QUOTE_CHARS]}…"
        return f"{cut} (a {kind} of {len(value):,} item{'' if len(value) == 1 else 's'})"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _INT_BITS:
        # str() of a long enough int even raises (Python's limit on digits).
        return f"a whole number of about {int(value.bit_length() * _DIGITS_PER_BIT) + 1:,} digits"
    shown = repr(value)
    if len(shown) <= QUOTE_CHARS:
        return shown
    return f"{shown[:QUOTE_CHARS]}… ({len(shown):,} characters)"


def _cut(text: str) -> str:
    shown = repr(text)
    if len(shown) <= QUOTE_CHARS + 2:
        return shown
    head = text[:QUOTE_CHARS]
    # Escapes (\x00, \n) make a character several in the quote: shorten until it fits.
    while len(repr(head)) > QUOTE_CHARS + 2:
        head = head[: len(head) - max(1, (len(repr(head)) - QUOTE_CHARS - 2) // 4)]
    quoted = repr(head)
    return f"{quoted[:-1]}…{quoted[-1]} ({len(text):,} characters)"


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


def without_password(text: str, url: str) -> str:
    """`text` (a driver's message, which may quote it) with `url`'s password as ***."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return text
    return text.replace(password, "***") if password else text
