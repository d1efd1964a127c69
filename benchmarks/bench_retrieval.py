"""Benchmark of document selection (lyra_crawl.retrieval) on BEIR SciFact's train claims.

Run as ``python -m benchmarks retrieval`` or call ``run(shared_dir)``. Reads
``shared_dir/ir/scifact`` (the corpus, the 809 train claims and their judgements; SciFact's
test claims are kept aside and never read). One run measures, side by side, with the shipped
defaults (engines.yaml `retrieval:`; no CrossEncoder, no LLM; facets off, the corpus has none):

* nDCG@10, Recall@20 (what a CrossEncoder would see) and Recall@100 of BM25 alone, of the
  embedded semantic model (WordLlama) alone and of their weighted RRF fusion, each retriever
  read to depth 100 (`--initial-k 100`), beside BM25's published SciFact figure (BEIR paper,
  0.665 nDCG@10 on the test claims);
* ``candidates_recall_initial_k``: the recall of the candidates a selection scores at the
  default initial_k (each retriever's top 10, fused);
* the floors that say "no relevant evidence" without a CrossEncoder (`semantic.floor`,
  `keyword.floor`): the share of train claims still answered (``floor_claims_answered``) and
  the share of 20 off-topic questions answered with no document
  (``floor_offtopic_no_evidence``);
* at 5,000 documents (the corpus's first 5,000): index build seconds and the median time of
  one ``select`` (default k and initial_k), wall and CPU (the machine is shared: CPU time is
  the work's own cost, wall time what a user waits);
* the embedded model's cost: its wheel's size on disk, load seconds, resident memory added;
* the index kept on disk (lyra_crawl.retrieval.index_cache) at 5,000 documents: building it
  and keeping it (what a first ``scrapy select`` does) beside loading it (a second one on the
  same documents), and updating it with 100 new documents; its size on disk.

With ``LYRA_BENCH_CROSS_ENCODER`` set to a local ONNX cross-encoder folder (or a Hugging Face
name in the local cache), nDCG@10 of the fused list re-ranked by it on the first 200 claims is
measured beside the fused list's on the same claims; without one the run says so.
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from lyra_crawl.config import CrossEncoderStage, load_config
from lyra_crawl.retrieval import CrossEncoder, Document, DocumentIndex, DocumentSelector
from lyra_crawl.retrieval.index_cache import KeptIndex
from lyra_crawl.retrieval.models import load_wordllama

PUBLISHED_BM25_NDCG10 = 0.665  # BEIR (Thakur et al., 2021), SciFact test, Anserini BM25
DEPTH = 100
TIMED_DOCUMENTS = 5000
TIMED_QUESTIONS = 200
# Documents added to a kept index of TIMED_DOCUMENTS, to time its update.
KEPT_ADDED = 100
CROSS_ENCODER_CLAIMS = 200
# Questions no SciFact abstract answers: the floor should answer them with no document.
OFF_TOPIC = (
    "best pizza dough hydration for a home oven",
    "how do I tune a guitar to drop D",
    "cheap flights from Lisbon to Oslo in winter",
    "which football club won the league last season",
    "how to fix a squeaky door hinge",
    "lyrics of a famous jazz standard",
    "best hiking trails near the lake",
    "how to write a cover letter for a job",
    "recipe for lemon tart with meringue",
    "what time does the museum open on sundays",
    "how much does a used car cost",
    "tips for learning to swim as an adult",
    "the plot of a detective novel set in Paris",
    "which smartphone has the best camera",
    "how to make sourdough starter",
    "schedule of the next train to the airport",
    "how to grow tomatoes on a balcony",
    "the rules of chess castling",
    "where to buy cheap concert tickets",
    "how to clean a leather sofa",
)


def run(shared_dir: Path) -> dict[str, float]:
    folder = shared_dir / "ir" / "scifact"
    documents = [
        Document(line["_id"], line["title"], line["text"])
        for line in map(json.loads, (folder / "corpus.jsonl").open(encoding="utf-8"))
    ]
    claims = {
        line["_id"]: line["text"]
        for line in map(json.loads, (folder / "queries.jsonl").open(encoding="utf-8"))
    }
    judged: dict[str, set[str]] = {}
    for row in (folder / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        claim, doc, _ = row.split("\t")
        judged.setdefault(claim, set()).add(doc)
    claims = {claim: text for claim, text in claims.items() if claim in judged}

    figures = _embedded_model_cost()
    policy = replace(load_config().retrieval, facets={})
    index = DocumentIndex.build(documents, policy)
    selector = DocumentSelector(index)
    lists: dict[str, dict[str, list[str]]] = {"bm25": {}, "semantic": {}, "fused": {}}
    default_candidates: dict[str, list[str]] = {}
    for claim, text in claims.items():
        found = selector.hybrid(text, DEPTH)
        lists["bm25"][claim] = [c.document.id for c in found.keyword.chunks]
        lists["semantic"][claim] = [c.document.id for c in found.semantic.chunks]
        lists["fused"][claim] = [c.document_id for c in found.fused]
        top = selector.hybrid(text, policy.initial_k)
        default_candidates[claim] = [c.document_id for c in top.fused]
    for name, ranked in lists.items():
        figures[f"{name}_ndcg10"] = _mean(ndcg(ranked[c], judged[c], 10) for c in claims)
        figures[f"{name}_recall20"] = _mean(recall(ranked[c], judged[c], 20) for c in claims)
        figures[f"{name}_recall100"] = _mean(recall(ranked[c], judged[c], 100) for c in claims)
    figures["bm25_published_ndcg10"] = PUBLISHED_BM25_NDCG10
    figures["fused_minus_bm25_ndcg10"] = figures["fused_ndcg10"] - figures["bm25_ndcg10"]
    figures["fused_minus_bm25_recall20"] = figures["fused_recall20"] - figures["bm25_recall20"]
    figures["candidates_recall_initial_k"] = _mean(
        recall(default_candidates[c], judged[c], len(default_candidates[c]) or 1) for c in claims
    )
    figures.update(_floor(selector, claims))
    figures.update(_timed(documents[:TIMED_DOCUMENTS], policy, list(claims.values())))
    figures.update(_kept(documents[: TIMED_DOCUMENTS + KEPT_ADDED], policy))
    figures.update(_cross_encoder(policy, selector, claims, judged, lists["fused"]))
    return {f"retrieval_{name}": value for name, value in figures.items()}


def ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    gain = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:k]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return gain / ideal


def recall(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant)


def _mean(values) -> float:
    return statistics.fmean(values)


def _floor(selector: DocumentSelector, claims: dict[str, str]) -> dict[str, float]:
    """What the floors do: claims they still answer, off-topic questions they answer with none."""
    policy = selector.index.policy
    answered = sum(bool(selector.select(text).hits) for text in claims.values())
    empty = sum(not selector.select(question).hits for question in OFF_TOPIC)
    return {
        "semantic_floor": policy.semantic.floor,
        "keyword_floor": policy.keyword.floor,
        "floor_claims_answered": answered / len(claims),
        "floor_offtopic_no_evidence": empty / len(OFF_TOPIC),
    }


def _timed(documents: list[Document], policy, questions: list[str]) -> dict[str, float]:
    """Wall and CPU time: on a shared machine the CPU time is what the work itself costs."""
    started, cpu = time.perf_counter(), time.process_time()
    index = DocumentIndex.build(documents, policy)
    build, build_cpu = time.perf_counter() - started, time.process_time() - cpu
    selector = DocumentSelector(index)
    times, cpu_times = [], []
    for question in questions[:TIMED_QUESTIONS]:
        started, cpu = time.perf_counter(), time.process_time()
        selector.select(question)
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu)
    return {
        "build_seconds_5000": build,
        "build_cpu_seconds_5000": build_cpu,
        "select_median_ms_5000": 1000 * statistics.median(times),
        "select_median_cpu_ms_5000": 1000 * statistics.median(cpu_times),
        "chunks_5000": float(len(index.chunks)),
    }


def _kept(documents: list[Document], policy) -> dict[str, float]:
    """Wall seconds of a kept index's build (with its save), load and update, side by side."""
    first, added = documents[:TIMED_DOCUMENTS], documents[TIMED_DOCUMENTS:]
    with tempfile.TemporaryDirectory() as root:
        started = time.perf_counter()
        built, report = KeptIndex(Path(root), "bench", policy).refresh("v1", first)
        build = time.perf_counter() - started
        assert report.how == "built", report.describe()
        started = time.perf_counter()
        loaded, report = KeptIndex(Path(root), "bench", policy).refresh("v1")
        load = time.perf_counter() - started
        assert report.how == "loaded" and loaded.version == built.version, report.describe()
        started = time.perf_counter()
        _, report = KeptIndex(Path(root), "bench", policy).refresh("v2", documents)
        update = time.perf_counter() - started
        assert report.how == "updated", report.describe()
        size = sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())
    print(
        f"   kept index at {TIMED_DOCUMENTS} documents: built and kept in {build:.2f} s,"
        f" loaded in {load:.2f} s ({build / load:.0f}x), {len(added)} added in {update:.2f} s;"
        f" {size / 1e6:.0f} MB on disk",
        flush=True,
    )
    return {
        "kept_build_seconds_5000": build,
        "kept_load_seconds_5000": load,
        "kept_load_speedup_5000": build / load,
        "kept_update_100_seconds_5000": update,
        "kept_disk_mb_5000": size / 1e6,
    }


def _embedded_model_cost() -> dict[str, float]:
    before = _resident_mb()
    started = time.perf_counter()
    model = load_wordllama()
    seconds = time.perf_counter() - started
    import wordllama

    wheel = Path(wordllama.__file__).parent
    size = sum(p.stat().st_size for p in wheel.rglob("*") if p.is_file())
    del model
    return {
        "wordllama_load_seconds": seconds,
        "wordllama_resident_mb": _resident_mb() - before,
        "wordllama_installed_mb": size / 1e6,
    }


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 1e6


def _cross_encoder(policy, selector, claims, judged, fused) -> dict[str, float]:
    model = os.environ.get("LYRA_BENCH_CROSS_ENCODER")
    if not model:
        print(
            "   no CrossEncoder here (none installable without a model hub): set "
            "LYRA_BENCH_CROSS_ENCODER to a local ONNX cross-encoder folder to measure one",
            flush=True,
        )
        return {}
    encoder = CrossEncoder(CrossEncoderStage(model=model))
    chosen = list(claims)[:CROSS_ENCODER_CLAIMS]
    before, after = [], []
    for claim in chosen:
        found = selector.hybrid(claims[claim], policy.initial_k)
        texts = [c.chunk.text for c in found.fused]
        scores = encoder.score(claims[claim], texts) if texts else []
        order = sorted(range(len(texts)), key=lambda i: -scores[i])
        reranked = [found.fused[i].document_id for i in order]
        before.append(ndcg([c.document_id for c in found.fused], judged[claim], 10))
        after.append(ndcg(reranked, judged[claim], 10))
    return {"fused_ndcg10_200": _mean(before), "cross_encoder_ndcg10_200": _mean(after)}


if __name__ == "__main__":
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[2] / "shared"
    for key, value in run(shared).items():
        print(f"{key:<45} {value:.4f}")
