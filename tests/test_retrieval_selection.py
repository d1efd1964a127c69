"""Selection's stages, each on and off: hybrid search, the CrossEncoder (a real small ONNX model
built here), the LLM (the simulator's chat endpoint over HTTP, with every fault), the final
choice and its "no relevant evidence", chunking, index updates and the audit record."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lyra_crawl.config import (
    ConfigError,
    CrossEncoderStage,
    Fusion,
    RetrievalPolicy,
    SemanticSearch,
    load_config,
)
from lyra_crawl.retrieval import (
    CrossEncoder,
    Document,
    DocumentIndex,
    DocumentSelector,
    FacetFilter,
    LlmEndpoint,
)
from tests import onnx_models

CORPUS = [
    Document(
        "peat", "Peat fires emit methane", "Smouldering peat fires release methane.", {"year": 2021}
    ),
    Document(
        "haze", "Haze from peat fires", "Peat fire haze raised hospital admissions.", {"year": 2016}
    ),
    Document(
        "wet", "Rewetting peatlands", "Rewetted peatlands change methane fluxes.", {"year": 2022}
    ),
    Document("coal", "Coal seam fires", "Underground coal fires burn for decades.", {"year": 2019}),
    Document("ice", "Arctic sea ice", "Sea ice extent declined in summer.", {"year": 2020}),
    Document(
        "prot", "Protein folding", "Neural networks predict protein structures.", {"year": 2021}
    ),
    Document("soil", "Soil carbon", "Soil carbon stocks under grassland.", {"year": 2018}),
    Document(
        "rice", "Rice paddies and methane", "Flooded rice paddies emit methane.", {"year": 2017}
    ),
]
WORDS = [f"{d.title} {d.text}" for d in CORPUS] + ["do fires emit methane"]
POLICY = replace(load_config().retrieval)


@pytest.fixture(scope="module")
def index() -> DocumentIndex:
    return DocumentIndex.build(CORPUS, POLICY)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> CrossEncoder:
    folder = onnx_models.cross_encoder(tmp_path_factory.mktemp("ce") / "model", WORDS)
    return CrossEncoder(CrossEncoderStage(model=str(folder)))


def ids(hits) -> list[str]:
    return [hit.document_id for hit in hits]


def test_without_cross_encoder_nor_llm_the_fused_order_decides_and_the_skips_say_why(
    index: DocumentIndex,
) -> None:
    selection = DocumentSelector(index).select("do peat fires emit methane?")
    assert ids(selection.hits)[0] == "peat" and len(selection.hits) == 3
    assert not selection.stage("cross_encoder").ran
    assert "no cross_encoder.model configured" in selection.stage("cross_encoder").detail
    assert not selection.stage("llm").ran
    assert "no LLM configured" in selection.stage("llm").detail
    assert selection.stage("keyword").model.startswith("bm25s-")
    assert selection.stage("semantic").model.startswith("wordllama-")
    top = selection.hits[0].scores
    assert top.keyword_rank == 1 and top.semantic is not None and top.fused_rank == 1
    assert top.final == 1.0 and top.cross_encoder is None and top.llm is None
    # Every candidate carries both retrievers' scores where they found it.
    assert all(c.scores.fused > 0 for c in selection.candidates)


def test_fusion_weights_turn_either_retriever_off(index: DocumentIndex) -> None:
    question = "sea ice"
    keyword_only = replace(POLICY, fusion=Fusion(semantic_weight=0.0, keyword_weight=1.0))
    selector = DocumentSelector(DocumentIndex.build(CORPUS, keyword_only))
    found = selector.hybrid(question, 10)
    assert ids(found.fused)[: len(found.keyword.chunks)] == [
        c.document.id for c in found.keyword.chunks
    ]
    semantic_only = replace(POLICY, fusion=Fusion(semantic_weight=1.0, keyword_weight=0.0))
    found = DocumentSelector(DocumentIndex.build(CORPUS, semantic_only)).hybrid(question, 10)
    assert ids(found.fused) == [c.document.id for c in found.semantic.chunks]


def test_facets_named_or_given_narrow_the_candidates(index: DocumentIndex) -> None:
    selector = DocumentSelector(index)
    selection = selector.select("papers since 2021 about methane")
    assert selection.stage("facets").ran
    assert set(ids(selection.candidates)) <= {"peat", "wet", "prot"}
    assert selection.facets.search_text == "papers about methane"
    given = (FacetFilter("year", "year", "year", low=2017, high=2017),)
    assert ids(selector.select("methane", facets=given).hits) == ["rice"]
    # Carried in a conversation, then replaced by a question naming its own.
    selector.select("papers since 2021 about methane", conversation="c")
    carried = selector.select("and on protein?", conversation="c")
    assert carried.facets.carried and ids(carried.hits)[0] == "prot"
    assert set(ids(carried.hits)) <= {"peat", "wet", "prot"}
    replaced = selector.select("fires before 2017", conversation="c")
    assert ids(replaced.hits) == ["haze"] and not replaced.facets.carried


def test_a_facet_that_keeps_nothing_is_no_relevant_evidence_with_the_reason(
    index: DocumentIndex,
) -> None:
    selection = DocumentSelector(index).select("methane on pubmed")
    assert selection.no_relevant_evidence and not selection.candidates
    assert selection.reason == (
        "the facets keep no document: no document has a source to match source=pubmed"
    )


def test_the_cross_encoder_scores_every_candidate_and_its_threshold_drops(
    index: DocumentIndex, cross_encoder: CrossEncoder
) -> None:
    selector = DocumentSelector(index, cross_encoder=cross_encoder)
    selection = selector.select("do fires emit methane?", k=3)
    stage = selection.stage("cross_encoder")
    assert stage.ran and stage.model.startswith(f"{cross_encoder.name} (model.onnx:")
    # "peat" shares fires, emit, methane: 4 x 3 - 5 = 7; "rice" shares emit, methane: 3.
    assert ids(selection.hits)[:2] == ["peat", "rice"]
    assert [h.scores.cross_encoder for h in selection.hits[:2]] == [7.0, 3.0]
    assert all(c.scores.cross_encoder >= -3.0 for c in selection.candidates)
    assert "below -3 dropped" in stage.detail
    # No candidate shares a word with the question: every score is -5, below -3.
    none = selector.select("quantum chromodynamics lattice")
    assert none.no_relevant_evidence
    assert none.reason.startswith("every candidate is below the CrossEncoder threshold")


def test_without_a_cross_encoder_the_floors_say_no_relevant_evidence(
    index: DocumentIndex,
) -> None:
    selection = DocumentSelector(index).select("quantum chromodynamics on a lattice of fires")
    assert selection.no_relevant_evidence and selection.candidates
    assert selection.reason.startswith("no document is semantically close (best 0.")
    assert "nor has most of the question's words (best 25% < keyword.floor 70%)" in (
        selection.reason
    )
    assert all(c.scores.keyword_coverage is not None for c in selection.candidates)
    answered = DocumentSelector(index).select("quantum fires emit methane")
    assert ids(answered.hits)[0] == "peat"


def test_the_cross_encoder_is_found_by_path_and_by_name_in_the_hub_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = tmp_path / "hub" / "models--lab--tiny-ce" / "snapshots" / "abc123"
    onnx_models.cross_encoder(snapshot, WORDS)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    by_name = CrossEncoder(CrossEncoderStage(model="lab/tiny-ce"))
    assert by_name.score("peat fires", ["peat fires", "sea ice"]).tolist() == [3.0, -5.0]
    with pytest.raises(ConfigError) as missing:
        CrossEncoder(CrossEncoderStage(model="lab/absent"))
    assert str(missing.value).startswith(
        "engines.yaml: retrieval.cross_encoder.model 'lab/absent' is neither a local folder nor "
        "in the Hugging Face cache"
    )
    with pytest.raises(ConfigError, match="folder '/nowhere/model' does not exist"):
        CrossEncoder(CrossEncoderStage(model="/nowhere/model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"has no model\.onnx or onnx/model\.onnx: export"):
        CrossEncoder(CrossEncoderStage(model=str(tmp_path / "empty")))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.onnx").write_bytes(b"not a model")
    (tmp_path / "broken" / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"cannot load .*model\.onnx") as broken:
        CrossEncoder(CrossEncoderStage(model=str(tmp_path / "broken")))
    assert "\n" not in str(broken.value)


def test_a_stronger_semantic_model_by_path_replaces_the_embedded_one(tmp_path: Path) -> None:
    folder = onnx_models.embedding_model(tmp_path / "embedder", WORDS)
    policy = replace(POLICY, semantic=SemanticSearch(model=str(folder)))
    selection = DocumentSelector(DocumentIndex.build(CORPUS, policy)).select("sea ice")
    assert selection.stage("semantic").model.startswith("model.onnx:")
    assert ids(selection.hits)[0] == "ice"


def test_long_texts_are_chunked_by_tokens_and_a_chunk_names_its_document() -> None:
    words = " ".join(f"word{i}." for i in range(1500))
    long = Document("long", "A long report", f"{words} Methane hydrates melt.")
    policy = replace(POLICY, chunk_size=600, chunk_overlap=75)
    index = DocumentIndex.build([long, *CORPUS], policy)
    chunks = [c for c in index.chunks if c.document.id == "long"]
    assert len(chunks) > 1 and all(c.text.startswith("A long report\n") for c in chunks)
    tokenizer = index.embedder.tokenizer
    sizes = [len(tokenizer.encode(c.body, add_special_tokens=False).ids) for c in chunks]
    assert max(sizes) <= 601  # a token split at a window's edge may count once more
    hit = DocumentSelector(index).select("methane hydrates").hits[0]
    assert hit.document_id == "long" and hit.chunk.index == len(chunks) - 1


def test_adding_documents_embeds_only_what_is_new_and_changes_the_version() -> None:
    index = DocumentIndex.build(CORPUS[:4], POLICY)
    first = index.version
    update = index.add(CORPUS[2:6])
    assert (update.added, update.replaced, update.unchanged) == (2, 0, 2)
    assert index.version != first and len(index.documents) == 6
    changed = replace(CORPUS[0], text="Peat fires emit carbon monoxide.")
    update = index.add([changed])
    assert (update.added, update.replaced) == (0, 1)
    hit = DocumentSelector(index).select("carbon monoxide from peat").hits[0]
    assert hit.document_id == "peat" and "monoxide" in hit.chunk.text


def llm_selector(
    index: DocumentIndex, url: str, model: str, cross_encoder: CrossEncoder | None = None, **llm
) -> DocumentSelector:
    policy = replace(index.policy, llm=replace(index.policy.llm, **llm))
    rebuilt = DocumentIndex.build(CORPUS, policy, embedder=index.embedder)
    endpoint = LlmEndpoint(f"{url}/llm/v1", model, "secret-key")
    return DocumentSelector(rebuilt, cross_encoder=cross_encoder, llm=endpoint)


def test_the_llm_rates_the_candidates_over_http_and_keeps_its_top_five(
    index: DocumentIndex, start_simulator
) -> None:
    simulator = start_simulator()
    selector = llm_selector(index, simulator.url, "sim", skip_at_most=2, keep=5)
    selection = selector.select("do peat fires emit methane?", k=3, initial_k=10)
    stage = selection.stage("llm")
    assert stage.ran and stage.detail.startswith("rated ") and stage.detail.endswith("kept 5")
    assert stage.model == f"sim at {simulator.url}/llm/v1"
    assert len(selection.candidates) == 5 and len(selection.hits) == 3
    # The simulator rates by the share of the question's words a passage has: peat, fires,
    # emit, methane all in "peat": 10 of 10.
    assert selection.hits[0].document_id == "peat" and selection.hits[0].scores.llm == 10.0
    ratings = [c.scores.llm for c in selection.candidates]
    assert ratings == sorted(ratings, reverse=True)
    assert "final = (0.6·norm(llm)) / 0.6" in selection.stage("final").detail
    assert simulator.requests("llm")[-1]["path"] == "/v1/chat/completions"
    # Few candidates: the LLM is not asked.
    few = llm_selector(index, simulator.url, "sim").select("sea ice", initial_k=2)
    assert not few.stage("llm").ran and "at most 5" in few.stage("llm").detail


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        ("sim-slow-3000", "did not answer within 0.5 s"),
        ("sim-429", "is rate limiting (429)"),
        ("sim-500", "failed (500)"),
        ("sim-malformed", "the answer is not the JSON ratings asked for"),
        ("sim-prose", "the answer is not the JSON ratings asked for"),
    ],
)
def test_every_llm_fault_skips_the_stage_with_its_reason_and_keeps_the_earlier_order(
    index: DocumentIndex, cross_encoder: CrossEncoder, start_simulator, model: str, reason: str
) -> None:
    simulator = start_simulator()
    plain = DocumentSelector(index, cross_encoder=cross_encoder).select("do fires emit methane?")
    selector = llm_selector(
        index, simulator.url, model, cross_encoder, skip_at_most=2, timeout_s=0.5
    )
    selection = selector.select("do fires emit methane?")
    stage = selection.stage("llm")
    assert not stage.ran and reason in stage.detail, stage.detail
    assert "secret-key" not in stage.detail
    assert ids(selection.hits) == ids(plain.hits)
    assert all(c.scores.llm is None for c in selection.candidates)


def test_credentials_in_the_llm_url_never_show(index: DocumentIndex, refused_port: int) -> None:
    endpoint = LlmEndpoint(f"http://user:pw@127.0.0.1:{refused_port}/v1", "m", "secret-key")
    selection = DocumentSelector(index, llm=endpoint).select(
        "do peat fires emit methane?", initial_k=10
    )
    stage = selection.stage("llm")
    assert "cannot be reached" in stage.detail
    assert "pw" not in stage.detail + stage.model and "secret" not in stage.detail + stage.model


def test_the_audit_record_keeps_every_stage_score_model_and_final_rank(
    index: DocumentIndex, cross_encoder: CrossEncoder
) -> None:
    selector = DocumentSelector(index, cross_encoder=cross_encoder)
    selector.select("papers since 2021 on methane", conversation="audit")
    selection = selector.select("and fires?", conversation="audit")
    record = selection.record()
    assert record.question == "and fires?" and record.conversation == "audit"
    assert record.facets_named == () and record.facets_carried == ("year=2021..",)
    assert record.corpus_version == index.version and len(record.corpus_version) == 16
    assert [s.name for s in record.stages] == [
        "facets",
        "keyword",
        "semantic",
        "fusion",
        "cross_encoder",
        "llm",
        "final",
    ]
    ranked = sorted((c for c in record.candidates if c.final_rank), key=lambda c: c.final_rank)
    assert [c.document_id for c in ranked] == ids(selection.hits)
    assert all(c.scores.cross_encoder is not None for c in record.candidates)
    as_dict = record.as_dict()
    assert as_dict["candidates"][0]["scores"]["fused_rank"] >= 1
    assert "text" not in str(as_dict["candidates"])


def test_an_empty_index_has_no_relevant_evidence() -> None:
    selection = DocumentSelector(DocumentIndex.build([], RetrievalPolicy())).select("methane")
    assert selection.no_relevant_evidence and selection.candidates == ()
