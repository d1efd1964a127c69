import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lyra_crawl.paging.relevance import RelevanceConfig, RelevanceScorer, harvest_rate, tokenize

CLIMATE_ON_TOPIC = [
    (
        "Climate change adaptation strategies for cities",
        "Cities adopt adaptation plans to cope with climate change impacts.",
    ),
    (
        "Adaptation to climate change - Wikipedia",
        "Climate change adaptation is the process of adjusting to effects of climate change.",
    ),
    ("Climate change: evidence and causes", "An overview of the science of climate change."),
]
OFF_TOPIC = [
    ("Best pizza recipes", "How to make the perfect pizza dough at home."),
    ("The history of Rome", "Rome was founded in 753 BC and grew to an empire."),
]
JAPANESE = [
    ("気候変動への適応策", "地方自治体の気候変動適応計画について解説します。"),
    ("気候変動適応情報プラットフォーム", "国立環境研究所による適応の取り組み"),
]


# --- tokenisation --------------------------------------------------------------------------


def test_tokenize_words_casefolded_and_split_on_punctuation() -> None:
    assert tokenize("Climate-Change, ADAPTATION: 2023_report!") == [
        "climate",
        "change",
        "adaptation",
        "2023",
        "report",
    ]


def test_tokenize_casefold_and_nfkc() -> None:
    assert tokenize("STRASSE Straße") == ["strasse", "strasse"]
    assert tokenize("Ｆｕｌｌｗｉｄｔｈ ｶﾀｶﾅ") == ["fullwidth", "カタ", "タカ", "カナ"]
    assert tokenize("ﬁle") == ["file"]


def test_tokenize_cyrillic_greek_and_combining_marks() -> None:
    assert tokenize("Изменение климата — κλιματική αλλαγή") == [
        "изменение",
        "климата",
        "κλιματική",
        "αλλαγή",
    ]
    # Devanagari vowel signs and virama are combining marks, not word breaks.
    assert tokenize("जलवायु परिवर्तन") == ["जलवायु", "परिवर्तन"]


def test_tokenize_cjk_runs_into_bigrams() -> None:
    assert tokenize("気候変動 適応") == ["気候", "候変", "変動", "適応"]
    assert tokenize("気候変動への適応") == ["気候", "候変", "変動", "動へ", "への", "の適", "適応"]
    assert tokenize("기후 변화") == ["기후", "변화"]


def test_tokenize_single_cjk_character_is_a_unigram() -> None:
    assert tokenize("雨 と 風") == ["雨", "と", "風"]


def test_tokenize_katakana_middle_dot_separates_words() -> None:
    assert tokenize("ジョン・スミス") == ["ジョ", "ョン", "スミ", "ミス"]


def test_tokenize_mixed_scripts() -> None:
    assert tokenize("COVID-19ワクチンの効果 (vaccine) 효과") == [
        "covid",
        "19",
        "ワク",
        "クチ",
        "チン",
        "ンの",
        "の効",
        "効果",
        "vaccine",
        "효과",
    ]


def test_tokenize_nothing_to_index() -> None:
    assert tokenize("") == []
    assert tokenize(" — !!! … ") == []


# --- config --------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["threshold", "b", "coverage_weight"])
@pytest.mark.parametrize("value", [-0.1, 1.1, float("nan")])
def test_config_fractions_validated(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"relevance {field} must be between 0 and 1"):
        RelevanceConfig(**{field: value})


def test_config_k1_validated() -> None:
    with pytest.raises(ValueError, match=r"k1 must be >= 0 \(got -1"):
        RelevanceConfig(k1=-1.0)


def test_query_without_words_rejected() -> None:
    with pytest.raises(ValueError, match="query '!!!' has no words"):
        RelevanceScorer("!!!")


# --- scoring -------------------------------------------------------------------------------


def test_on_topic_results_pass_and_off_topic_do_not() -> None:
    scorer = RelevanceScorer("climate change adaptation strategies")
    scores = scorer.score_page(CLIMATE_ON_TOPIC + OFF_TOPIC)
    on_topic, off_topic = scores[:3], scores[3:]
    assert all(scorer.is_relevant(s) for s in on_topic), scores
    assert not any(scorer.is_relevant(s) for s in off_topic), scores
    assert min(on_topic) > 0.4
    assert off_topic == [0.0, 0.0]
    assert scores[0] > scores[2]  # all four query terms beat two of them


def test_full_match_scores_one_and_no_match_zero() -> None:
    scorer = RelevanceScorer("solar wind")
    assert scorer.score_page([("Solar wind", ""), ("Lunar tides", "")]) == [1.0, 0.0]


def test_scores_within_unit_interval_even_for_repeated_terms() -> None:
    scorer = RelevanceScorer("wind")
    scores = scorer.score_page([("wind wind wind", "wind"), ("calm", "air is still today")])
    assert scores == [1.0, 0.0]


def test_query_terms_counted_once() -> None:
    docs = [("solar panels", ""), ("wind farms", "")]
    assert RelevanceScorer("solar solar wind").score_page(docs) == RelevanceScorer(
        "solar wind"
    ).score_page(docs)


def test_score_of_a_page_of_nothing() -> None:
    scorer = RelevanceScorer("wind")
    assert scorer.score_page([]) == []
    assert scorer.score_page([("", ""), ("", "")]) == [0.0, 0.0]


def test_japanese_query_scores_japanese_results_not_english() -> None:
    scorer = RelevanceScorer("気候変動 適応")
    japanese = scorer.score_page(JAPANESE)
    english = scorer.score_page(CLIMATE_ON_TOPIC + OFF_TOPIC)
    assert all(s > 0.0 for s in japanese)
    assert harvest_rate(japanese, scorer.config.threshold) == 1.0
    assert english == [0.0] * len(english)
    assert harvest_rate(english, scorer.config.threshold) == 0.0


def test_shared_bigram_alone_is_not_relevant() -> None:
    scorer = RelevanceScorer("気候変動 適応")
    # 為替変動 (exchange-rate fluctuation) shares only the bigram 変動.
    scores = scorer.score_page([*JAPANESE, ("為替変動のリスク", "円安の影響")])
    assert 0.0 < scores[2] < scorer.config.threshold


def test_term_in_every_result_still_counts() -> None:
    # Okapi IDF would make "climate" worth nothing (or less) here; the results are on topic.
    scorer = RelevanceScorer("climate adaptation")
    scores = scorer.score_page([("Climate report", f"Climate news item {i}") for i in range(10)])
    assert all(scorer.is_relevant(s) for s in scores)

    bm25_only = RelevanceScorer("climate", RelevanceConfig(coverage_weight=0.0))
    scores = bm25_only.score_page([("climate", "one"), ("climate", "two")])
    assert all(s > 0.0 for s in scores)


def test_rarer_query_term_weighs_more() -> None:
    scorer = RelevanceScorer("climate adaptation", RelevanceConfig(coverage_weight=0.0))
    docs = [("climate news", "today")] * 8 + [("climate adaptation", "plan")]
    docs += [("adaptation notes", "today"), ("climate notes", "today")]
    scores = scorer.score_page(docs)
    assert scores[-2] > scores[-1] > 0.0


def test_idf_of_a_term_falls_as_the_corpus_fills_with_it() -> None:
    probe = [("solar notes", "today"), ("solar wind", "today")]
    config = RelevanceConfig(coverage_weight=0.0)

    fresh = RelevanceScorer("solar wind", config)
    fresh.score_page([("wind notes", "today"), ("lunar notes", "today")])
    before = fresh.score_page(probe)

    saturated = RelevanceScorer("solar wind", config)
    saturated.score_page([("wind notes", "today"), ("lunar notes", "today")])
    saturated.score_page([("solar notes", "today")] * 10)
    after = saturated.score_page(probe)

    assert after[0] < before[0]  # "solar" is now common in the corpus, so matching it counts less
    assert after[1] == before[1] == 1.0  # a full match stays a full match


def test_idf_uses_the_page_being_scored() -> None:
    # A term first seen on this page is rare within the corpus, not unknown.
    scorer = RelevanceScorer("solar wind", RelevanceConfig(coverage_weight=0.0))
    first = scorer.score_page([("solar notes", "today"), ("lunar notes", "today")])
    assert first[0] > 0.0


def test_coverage_keeps_partial_matches_comparable_across_queries() -> None:
    short = RelevanceScorer("climate adaptation", RelevanceConfig(coverage_weight=1.0))
    long = RelevanceScorer(
        "climate adaptation in coastal cities", RelevanceConfig(coverage_weight=1.0)
    )
    doc = [("climate adaptation", "report")]
    assert short.score_page(doc) == [1.0]
    assert long.score_page(doc) == [pytest.approx(0.4)]


def test_is_relevant_at_threshold_inclusive() -> None:
    scorer = RelevanceScorer("x", RelevanceConfig(threshold=0.2))
    assert scorer.is_relevant(0.2)
    assert not scorer.is_relevant(0.19999)


@given(
    query=st.text(min_size=1, max_size=20),
    docs=st.lists(st.tuples(st.text(max_size=40), st.text(max_size=80)), max_size=12),
)
def test_scores_are_fractions(query: str, docs: list[tuple[str, str]]) -> None:
    assume(tokenize(query))
    scorer = RelevanceScorer(query)
    scores = scorer.score_page(docs) + scorer.score_page(docs)
    assert len(scores) == 2 * len(docs)
    assert all(0.0 <= s <= 1.0 for s in scores)


# --- harvest rate --------------------------------------------------------------------------


def test_harvest_rate() -> None:
    assert harvest_rate([0.9, 0.1, 0.2, 0.0], threshold=0.2) == 0.5
    assert harvest_rate([0.9] + [0.0] * 19, threshold=0.2) == 0.05
    assert harvest_rate([0.1, 0.1], threshold=0.2) == 0.0


def test_harvest_rate_of_empty_page_is_zero() -> None:
    assert harvest_rate([], threshold=0.2) == 0.0
