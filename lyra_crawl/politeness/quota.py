"""Daily quotas count requests per engine and UTC day. Pure."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_date() -> str:
    """Today in UTC, as the quota's key (YYYY-MM-DD)."""
    return datetime.now(UTC).date().isoformat()
