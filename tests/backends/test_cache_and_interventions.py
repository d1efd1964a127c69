"""The SearchCache and InterventionQueue roles on every store backend (a real SQLite file, a
real PostgreSQL): a cache entry answers until it expires and a newer one replaces it; a block
page waits for a person until resolved, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tests.backends.test_store import record

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_a_cache_entry_answers_until_it_expires_and_a_newer_one_replaces_it(store):
    async def work(backends):
        cache = backends.store
        first, second = [await cache.start_query(record()) for _ in range(2)]
        hour = timedelta(hours=1)
        await cache.store_cache_entry("k", first, created_at=NOW, expires_at=NOW + hour)
        found = [
            await cache.fresh_cache_entry("k", NOW),
            await cache.fresh_cache_entry("k", NOW + 2 * hour),
            await cache.fresh_cache_entry("other", NOW),
            # The same instant in another zone: compared as instants.
            await cache.fresh_cache_entry("k", (NOW + hour / 2).astimezone(timezone(hour * 2))),
        ]
        await cache.store_cache_entry("k", second, created_at=NOW, expires_at=NOW + 3 * hour)
        return first, second, found, await cache.fresh_cache_entry("k", NOW + 2 * hour)

    first, second, found, replaced = store.run(work)

    assert found == [first, None, None, first]
    assert replaced == second


def test_a_block_page_waits_for_a_person_until_resolved_once(store):
    async def work(backends):
        queue = backends.store
        query_id = await queue.start_query(record())
        captcha = await queue.add_intervention(
            engine="mojeek", url="https://m/?q=1", query_id=query_id, kind="captcha", detail=""
        )
        denied = await queue.add_intervention(
            engine="brave", url="https://b/", query_id=None, kind="access_denied", detail="403"
        )
        waiting = await queue.open_interventions()
        resolved = [await queue.resolve_intervention(captcha) for _ in range(2)]
        return query_id, captcha, denied, waiting, resolved, await queue.open_interventions()

    query_id, captcha, denied, waiting, resolved, left = store.run(work)

    assert [(i.id, i.engine, i.query_id, i.kind, i.status) for i in waiting] == [
        (captcha, "mojeek", query_id, "captcha", "open"),
        (denied, "brave", None, "access_denied", "open"),
    ]
    assert resolved == [True, False], "resolved once"
    assert [i.id for i in left] == [denied]
