"""How long an answer's `Retry-After` asks a client to wait (RFC 9110 §10.2.3): a number of
seconds, or an HTTP-date. A date is counted from the answer's own `Date` when it has one (both
are the server's clock, so a skewed clock here does not matter), else from this machine's now."""

from __future__ import annotations

from email.utils import parsedate_to_datetime


def retry_after_s(value: str | None, *, now: float, date: str | None = None) -> float | None:
    """Seconds to wait, or None when `value` is absent, unreadable or asks for no wait."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        until = _timestamp(value)
        if until is None:
            return None
        sent = _timestamp(date) if date else None
        seconds = until - (sent if sent is not None else now)
    return seconds if seconds > 0 else None


def _timestamp(http_date: str) -> float | None:
    """The Unix time of an HTTP-date (IMF-fixdate or the obsolete forms email.utils reads)."""
    try:
        return parsedate_to_datetime(http_date).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
