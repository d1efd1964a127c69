"""Retry-After in both its forms (RFC 9110 §10.2.3): seconds, or an HTTP-date counted from the
answer's own Date (the server's clock), else from now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from scrapy.http import Response

from lyra_crawl.middlewares.circuit_breaker import retry_after
from lyra_crawl.politeness.retry_after import retry_after_s

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)  # IMF-fixdate: "Wed, 04 Mar 2026 05:06:07 GMT"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("1.5", 1.5),
        (http_date(NOW + timedelta(minutes=5)), 300.0),
        # An obsolete form servers still send (RFC 850), read all the same.
        ("Wednesday, 04-Mar-26 05:16:07 GMT", 600.0),
    ],
)
def test_seconds_and_http_dates_give_the_wait(value, seconds):
    assert retry_after_s(value, now=NOW.timestamp()) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value", [None, "", "0", "-5", "soon", http_date(NOW - timedelta(seconds=1)), "Mon, 99 Foo"]
)
def test_absent_unreadable_or_past_values_ask_for_no_wait(value):
    assert retry_after_s(value, now=NOW.timestamp()) is None


def test_a_date_is_counted_from_the_answer_s_own_date_not_this_clock():
    # This machine's clock is 10 minutes behind the server's: the server's Date says when.
    server_now = NOW + timedelta(minutes=10)
    value = http_date(server_now + timedelta(seconds=90))

    assert retry_after_s(value, now=NOW.timestamp(), date=http_date(server_now)) == 90.0
    assert retry_after_s(value, now=NOW.timestamp()) == 690.0


def test_the_breaker_reads_an_http_date_from_a_real_answer():
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=40)
    answer = Response(
        "https://www.mojeek.com/search?q=x",
        status=429,
        headers={"Retry-After": http_date(later), "Date": http_date(later - timedelta(seconds=40))},
    )

    assert retry_after(answer) == 40.0
