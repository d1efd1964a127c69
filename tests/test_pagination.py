import pytest
from hypothesis import given
from hypothesis import strategies as st

from lyra_crawl.paging.relevance import harvest_rate
from lyra_crawl.paging.stop_rules import (
    EXHAUSTIVE_PAGES_WITHOUT_CAP,
    PageContext,
    PaginationConfig,
    PaginationDecision,
    PaginationStrategy,
    StopReason,
    Strategy,
    calculate_novelty_rate,
    max_page,
)

ALL = [Strategy.FIXED, Strategy.AUTO, Strategy.EXHAUSTIVE]


def decide(strategy: Strategy, serp_max_pages: int = 10, **ctx: object) -> PaginationDecision:
    """Decision for one page; a healthy mid-crawl page unless `ctx` says otherwise."""
    fields: dict[str, object] = {
        "page_number": 1,
        "serp_page": 1,
        "results_on_page": 10,
        "novelty_rate": 1.0,
        "harvest_rate": 1.0,
    }
    fields.update(ctx)
    config = PaginationConfig(serp_max_pages=serp_max_pages, strategy=strategy)
    return PaginationStrategy(config).should_fetch_next(PageContext(**fields))  # type: ignore[arg-type]


def assert_stops(decision: PaginationDecision, reason: StopReason) -> None:
    assert decision == PaginationDecision(False, reason, decision.detail)
    assert decision.detail


def assert_continues(decision: PaginationDecision) -> None:
    assert decision.fetch_next, decision.detail
    assert decision.reason is None


# --- config validation ---------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.AUTO])
@pytest.mark.parametrize("pages", [0, 11])
def test_serp_max_pages_out_of_range_rejected_for_fixed_and_auto(
    strategy: Strategy, pages: int
) -> None:
    with pytest.raises(
        ValueError, match=rf"serp_max_pages .*\(got {pages}\); pass serp_max_pages="
    ):
        PaginationConfig(serp_max_pages=pages, strategy=strategy)


def test_serp_max_pages_too_large_names_the_limit_and_the_alternative() -> None:
    with pytest.raises(ValueError) as err:
        PaginationConfig(serp_max_pages=11, strategy=Strategy.AUTO)
    assert "between 1 and 10" in str(err.value)
    assert "serp_max_pages=10 or fewer" in str(err.value)
    assert "strategy=exhaustive" in str(err.value)


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.AUTO])
@pytest.mark.parametrize("pages", [1, 10])
def test_serp_max_pages_bounds_accepted(strategy: Strategy, pages: int) -> None:
    assert PaginationConfig(serp_max_pages=pages, strategy=strategy).serp_max_pages == pages


def test_exhaustive_accepts_serp_max_pages_above_ten_but_not_zero() -> None:
    PaginationConfig(serp_max_pages=11, strategy=Strategy.EXHAUSTIVE)
    with pytest.raises(ValueError, match=r"at least 1 \(got 0\)"):
        PaginationConfig(serp_max_pages=0, strategy=Strategy.EXHAUSTIVE)


def test_serp_max_pages_must_be_an_int() -> None:
    with pytest.raises(TypeError, match="whole number"):
        PaginationConfig(serp_max_pages="5")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["min_novelty_rate", "min_harvest_rate"])
@pytest.mark.parametrize("rate", [-0.01, 1.01, float("nan")])
def test_rates_outside_unit_interval_rejected(name: str, rate: float) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be between 0 and 1"):
        PaginationConfig(**{name: rate})


@pytest.mark.parametrize("rate", [0.0, 1.0])
def test_rate_bounds_accepted(rate: float) -> None:
    PaginationConfig(min_novelty_rate=rate, min_harvest_rate=rate)


def test_strategy_given_as_string_is_coerced() -> None:
    assert PaginationConfig(strategy="fixed").strategy is Strategy.FIXED  # type: ignore[arg-type]


def test_unknown_strategy_rejected_with_choices() -> None:
    with pytest.raises(ValueError, match=r"fixed\|auto\|exhaustive \(got 'deep'\)"):
        PaginationConfig(strategy="deep")  # type: ignore[arg-type]


def test_defaults() -> None:
    assert PaginationConfig() == PaginationConfig(10, 0.1, 0.05, Strategy.AUTO)


# --- last page ---------------------------------------------------------------------------


def test_max_page() -> None:
    assert max_page(3, 2) == 4
    assert max_page(1, 10) == 10
    assert max_page(1, 1) == 1


def test_max_page_rejects_page_zero() -> None:
    with pytest.raises(ValueError, match=r"serp_page must be at least 1 \(got 0\)"):
        max_page(0, 5)


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.AUTO])
def test_last_page_is_max_page_or_engine_cap_whichever_is_lower(strategy: Strategy) -> None:
    paginator = PaginationStrategy(PaginationConfig(serp_max_pages=2, strategy=strategy))
    assert paginator.last_page(3, None) == 4
    assert paginator.last_page(3, 20) == 4
    paginator = PaginationStrategy(PaginationConfig(serp_max_pages=10, strategy=strategy))
    assert paginator.last_page(1, 5) == 5


def test_exhaustive_last_page_is_the_engine_cap_ignoring_serp_max_pages() -> None:
    paginator = PaginationStrategy(PaginationConfig(serp_max_pages=2, strategy=Strategy.EXHAUSTIVE))
    assert paginator.last_page(3, 25) == 25


def test_exhaustive_without_engine_cap_is_bounded() -> None:
    paginator = PaginationStrategy(PaginationConfig(serp_max_pages=2, strategy=Strategy.EXHAUSTIVE))
    assert EXHAUSTIVE_PAGES_WITHOUT_CAP == 10
    assert paginator.last_page(3, None) == 12


@pytest.mark.parametrize("strategy", ALL)
def test_serp_page_beyond_engine_cap_rejected(strategy: Strategy) -> None:
    paginator = PaginationStrategy(PaginationConfig(strategy=strategy))
    with pytest.raises(ValueError, match="serp_page 6 is beyond the engine's max_pages 5"):
        paginator.last_page(6, 5)


# --- max pages -----------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.AUTO])
def test_stops_at_max_page(strategy: Strategy) -> None:
    assert_continues(decide(strategy, serp_max_pages=2, serp_page=3, page_number=3))
    decision = decide(strategy, serp_max_pages=2, serp_page=3, page_number=4)
    assert_stops(decision, StopReason.MAX_PAGES)
    assert "4" in decision.detail


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.AUTO])
def test_single_page_crawl_stops_after_first_page(strategy: Strategy) -> None:
    assert_stops(
        decide(strategy, serp_max_pages=1, serp_page=5, page_number=5), StopReason.MAX_PAGES
    )


@pytest.mark.parametrize("strategy", ALL)
def test_engine_cap_lower_than_max_page_stops_at_cap(strategy: Strategy) -> None:
    assert_continues(decide(strategy, serp_max_pages=10, page_number=4, engine_max_pages=5))
    assert_stops(
        decide(strategy, serp_max_pages=10, page_number=5, engine_max_pages=5),
        StopReason.MAX_PAGES,
    )


def test_exhaustive_goes_past_serp_max_pages_to_the_engine_cap() -> None:
    for page in range(1, 30):
        assert_continues(
            decide(Strategy.EXHAUSTIVE, serp_max_pages=2, page_number=page, engine_max_pages=30)
        )
    assert_stops(
        decide(Strategy.EXHAUSTIVE, serp_max_pages=2, page_number=30, engine_max_pages=30),
        StopReason.MAX_PAGES,
    )


def test_exhaustive_without_cap_stops_at_its_bound() -> None:
    assert_continues(decide(Strategy.EXHAUSTIVE, serp_max_pages=2, serp_page=3, page_number=11))
    assert_stops(
        decide(Strategy.EXHAUSTIVE, serp_max_pages=2, serp_page=3, page_number=12),
        StopReason.MAX_PAGES,
    )


# --- empty, blocked, error, quota ----------------------------------------------------------


@pytest.mark.parametrize("strategy", ALL)
def test_empty_page_stops(strategy: Strategy) -> None:
    assert_stops(decide(strategy, results_on_page=0, novelty_rate=0.0), StopReason.EMPTY_PAGE)


@pytest.mark.parametrize("strategy", ALL)
def test_one_result_is_not_an_empty_page(strategy: Strategy) -> None:
    assert_continues(decide(strategy, results_on_page=1))


@pytest.mark.parametrize("strategy", ALL)
@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("blocked", StopReason.BLOCKED),
        ("error", StopReason.ERROR),
        ("quota_spent", StopReason.QUOTA),
    ],
)
def test_block_error_and_quota_stop(strategy: Strategy, flag: str, reason: StopReason) -> None:
    assert_stops(decide(strategy, **{flag: True}), reason)


@pytest.mark.parametrize(
    ("ctx", "reason"),
    [
        ({"blocked": True, "error": True, "quota_spent": True}, StopReason.BLOCKED),
        ({"error": True, "quota_spent": True, "results_on_page": 0}, StopReason.ERROR),
        ({"quota_spent": True, "results_on_page": 0}, StopReason.QUOTA),
        ({"results_on_page": 0, "page_number": 10, "novelty_rate": 0.0}, StopReason.EMPTY_PAGE),
        ({"page_number": 10, "novelty_rate": 0.0, "harvest_rate": 0.0}, StopReason.MAX_PAGES),
        ({"novelty_rate": 0.0, "harvest_rate": 0.0}, StopReason.NOVELTY),
        ({"harvest_rate": 0.0}, StopReason.HARVEST),
    ],
)
def test_stop_reason_precedence(ctx: dict[str, object], reason: StopReason) -> None:
    assert_stops(decide(Strategy.AUTO, **ctx), reason)


# --- novelty and harvest -------------------------------------------------------------------


@pytest.mark.parametrize("novelty", [0.1, 1 / 10, 2 / 20, 1 - 0.9, 0.7 - 0.6])
def test_auto_novelty_exactly_at_minimum_continues(novelty: float) -> None:
    assert_continues(decide(Strategy.AUTO, novelty_rate=novelty))


@pytest.mark.parametrize("novelty", [0.0999, 1 / 11, 0.0])
def test_auto_novelty_just_under_minimum_stops(novelty: float) -> None:
    decision = decide(Strategy.AUTO, novelty_rate=novelty, page_number=3)
    assert_stops(decision, StopReason.NOVELTY)
    assert decision.detail.startswith("novelty ")
    assert decision.detail.endswith("< 0.1 at page 3")


@pytest.mark.parametrize("harvest", [0.05, 1 / 20, 2 / 40, 0.15 - 0.1])
def test_auto_harvest_exactly_at_minimum_continues(harvest: float) -> None:
    assert_continues(decide(Strategy.AUTO, harvest_rate=harvest))


@pytest.mark.parametrize("harvest", [0.0499, 1 / 21, 0.0])
def test_auto_harvest_just_under_minimum_stops(harvest: float) -> None:
    decision = decide(Strategy.AUTO, harvest_rate=harvest, page_number=2)
    assert_stops(decision, StopReason.HARVEST)
    assert decision.detail.startswith("harvest ")
    assert decision.detail.endswith("< 0.05 at page 2")


def test_auto_boundaries_from_computed_rates() -> None:
    page = [f"https://example.org/{i}" for i in range(20)]
    seen_all_but_two = set(page[2:])
    novelty = calculate_novelty_rate(page, seen_all_but_two)
    harvest = harvest_rate([0.9] + [0.0] * 19, threshold=0.2)
    assert_continues(decide(Strategy.AUTO, novelty_rate=novelty, harvest_rate=harvest))

    seen_all_but_one = set(page[1:])
    novelty = calculate_novelty_rate(page, seen_all_but_one)
    assert_stops(decide(Strategy.AUTO, novelty_rate=novelty), StopReason.NOVELTY)
    harvest = harvest_rate([0.0] * 20, threshold=0.2)
    assert_stops(decide(Strategy.AUTO, harvest_rate=harvest), StopReason.HARVEST)


def test_auto_ignores_harvest_when_relevance_not_computed() -> None:
    assert_continues(decide(Strategy.AUTO, harvest_rate=None))


def test_auto_uses_configured_minimums() -> None:
    config = PaginationConfig(min_novelty_rate=0.5, min_harvest_rate=0.0)
    paginator = PaginationStrategy(config)
    ctx = PageContext(
        page_number=1, serp_page=1, results_on_page=10, novelty_rate=0.4, harvest_rate=0.0
    )
    assert paginator.should_fetch_next(ctx).reason is StopReason.NOVELTY
    ctx = PageContext(
        page_number=1, serp_page=1, results_on_page=10, novelty_rate=0.5, harvest_rate=0.0
    )
    assert paginator.should_fetch_next(ctx).fetch_next


@pytest.mark.parametrize("strategy", [Strategy.FIXED, Strategy.EXHAUSTIVE])
def test_fixed_and_exhaustive_ignore_rates(strategy: Strategy) -> None:
    assert_continues(decide(strategy, novelty_rate=0.0, harvest_rate=0.0))


def test_fixed_runs_serp_page_to_max_page_whatever_the_rates() -> None:
    decisions = [
        decide(
            Strategy.FIXED,
            serp_max_pages=3,
            serp_page=2,
            page_number=page,
            novelty_rate=0.0,
            harvest_rate=0.0,
        )
        for page in (2, 3, 4)
    ]
    assert [d.fetch_next for d in decisions] == [True, True, False]
    assert decisions[-1].reason is StopReason.MAX_PAGES


# --- novelty rate --------------------------------------------------------------------------


def test_novelty_rate_counts_unseen_urls() -> None:
    assert calculate_novelty_rate(["a", "b", "c", "d"], {"a", "x"}) == 0.75
    assert calculate_novelty_rate(["a", "b"], set()) == 1.0
    assert calculate_novelty_rate(["a", "b"], ["b", "a"]) == 0.0


def test_novelty_rate_of_empty_page_is_zero() -> None:
    assert calculate_novelty_rate([], {"a"}) == 0.0


def test_novelty_rate_counts_a_url_repeated_on_the_page_once() -> None:
    assert calculate_novelty_rate(["a", "a", "a", "b"], {"b"}) == 0.5
    assert calculate_novelty_rate(["a", "b", "b"], {"a"}) == 0.5


@given(
    page=st.lists(st.sampled_from("abcdefgh"), max_size=30),
    seen=st.sets(st.sampled_from("abcdefgh")),
)
def test_novelty_rate_is_a_fraction(page: list[str], seen: set[str]) -> None:
    rate = calculate_novelty_rate(page, seen)
    assert 0.0 <= rate <= 1.0
    assert (rate == 0.0) == (not set(page) - seen)
