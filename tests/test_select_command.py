"""`scrapy select` end to end: on a task crawled from the simulator, on a JSONL corpus, with
--questions, --conversation across runs, the LLM over the simulator, and its exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_twisted

from lyra_crawl.commands.select import CANDIDATES_HEAD
from tests import onnx_models
from tests.conftest import edited_config, query_db, run_crawl, run_scrapy, scrapy_env
from tests.test_paper_export import read_csv

CORPUS = [
    {
        "_id": "peat",
        "title": "Peat fires emit methane",
        "text": "Smouldering peat fires release methane.",
        "year": 2021,
        "source": ["openalex"],
    },
    {
        "_id": "haze",
        "title": "Haze from peat fires",
        "text": "Peat fire haze raised hospital admissions.",
        "year": 2016,
        "source": ["pubmed"],
    },
    {
        "_id": "wet",
        "title": "Rewetting peatlands",
        "text": "Rewetted peatlands change methane fluxes.",
        "year": 2022,
        "source": ["arxiv"],
    },
    {
        "_id": "coal",
        "title": "Coal seam fires",
        "text": "Underground coal fires burn for decades.",
        "year": 2019,
    },
    {
        "_id": "ice",
        "title": "Arctic sea ice",
        "text": "Sea ice extent declined in summer.",
        "year": 2020,
    },
    {
        "_id": "rice",
        "title": "Rice paddies and methane",
        "text": "Flooded rice paddies emit methane.",
        "year": 2017,
    },
    {
        "_id": "soil",
        "title": "Soil carbon",
        "text": "Soil carbon stocks under grassland.",
        "year": 2018,
    },
]


def corpus_file(folder: Path) -> Path:
    path = folder / "corpus.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in CORPUS))
    return path


def select(*args: str, env: dict[str, str] | None = None):
    return run_scrapy("select", *args, env=env or {})


@pytest.mark.subprocess
def test_select_on_a_corpus_answers_explains_and_exits_by_outcome(tmp_path: Path) -> None:
    corpus = str(corpus_file(tmp_path))
    env = {"LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_DB_PATH": str(tmp_path / "x.sqlite3")}
    found = select("do peat fires emit methane?", "--corpus", corpus, "--json", "-k", "2", env=env)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    assert answer["status"] == "hits" and answer["hits"][0]["document_id"] == "peat"
    assert len(answer["hits"]) == 2 and answer["hits"][0]["rank"] == 1
    assert answer["hits"][0]["scores"]["keyword_rank"] == 1
    skipped = {s["name"]: s["detail"] for s in answer["stages"] if not s["ran"]}
    assert "no cross_encoder.model configured" in skipped["cross_encoder"]
    assert "no LLM configured" in skipped["llm"]

    explained = select("peat fires since 2021", "--corpus", corpus, "--explain", env=env)
    assert explained.returncode == 0, explained.stderr
    text = explained.stdout
    assert "facets: year=2021.. (named): 2 of 7 documents" in text
    assert "candidates: rank document keyword(rank) semantic(rank) fused CE LLM final" in text
    assert "1. [peat] Peat fires emit methane" in text

    nothing = select("peat fires on crossref", "--corpus", corpus, env=env)
    assert nothing.returncode == 1
    assert "no relevant evidence: the facets keep no document: no document matches " in (
        nothing.stdout
    )
    off_topic = select("quantum chromodynamics lattice", "--corpus", corpus, "--json", env=env)
    assert off_topic.returncode == 1
    assert json.loads(off_topic.stdout)["status"] == "no_relevant_evidence"


@pytest.mark.subprocess
def test_questions_file_and_conversation_carry_over_across_runs(tmp_path: Path) -> None:
    corpus = str(corpus_file(tmp_path))
    env = {"LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_DB_PATH": str(tmp_path / "x.sqlite3")}
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        '{"_id": "q1", "text": "rewetting peatlands methane"}\n'
        '{"_id": "q2", "text": "quantum chromodynamics"}\n'
    )
    batch = select("--questions", str(questions), "--corpus", corpus, "--initial-k", "5", env=env)
    assert batch.returncode == 0, batch.stderr
    lines = [json.loads(line) for line in batch.stdout.splitlines()]
    assert [(a["_id"], a["status"]) for a in lines] == [
        ("q1", "hits"),
        ("q2", "no_relevant_evidence"),
    ]
    assert lines[0]["hits"][0]["document_id"] == "wet"

    first = select("methane since 2021", "--corpus", corpus, "--conversation", "c1", env=env)
    assert first.returncode == 0, first.stderr
    second = select("and fires?", "--corpus", corpus, "--conversation", "c1", "--json", env=env)
    answer = json.loads(second.stdout)
    assert answer["facets"].startswith("year=2021.. (carried from the conversation)")
    assert {h["document_id"] for h in answer["hits"]} <= {"peat", "wet"}
    assert (tmp_path / "data" / "conversations" / "c1.json").is_file()


@pytest.mark.subprocess
def test_usage_config_and_model_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    corpus = str(corpus_file(tmp_path))
    env = {"LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_DB_PATH": str(tmp_path / "x.sqlite3")}
    assert select("--corpus", corpus, env=env).returncode == 2
    assert select("q", "-k", "0", "--corpus", corpus, env=env).returncode == 2
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"_id": "1", "title": "t", "text": "x"}\n{"_id": "2", "title": 3}\n')
    failed = select("methane", "--corpus", str(bad_line), env=env)
    assert failed.returncode == 2
    assert failed.stderr.strip() == (
        f"error: {bad_line}:2: needs text fields 'title' and 'text' (BEIR's corpus shape)"
    )
    config = edited_config(
        tmp_path / "config",
        lambda p: p["retrieval"]["cross_encoder"].update(model=str(tmp_path / "absent")),
    )
    missing = select("methane", "--corpus", corpus, env={**env, "LYRA_CONFIG_DIR": str(config)})
    assert missing.returncode == 2
    assert missing.stderr.strip().startswith(
        f"error: engines.yaml: retrieval.cross_encoder.model folder '{tmp_path / 'absent'}' "
        "does not exist"
    )
    bad_rule = edited_config(
        tmp_path / "config2",
        lambda p: p["retrieval"]["facets"]["venue"].update(patterns=["(?P<value>[A-Z"]),
    )
    broken = select("methane", "--corpus", corpus, env={**env, "LYRA_CONFIG_DIR": str(bad_rule)})
    assert broken.returncode == 2 and len(broken.stderr.strip().splitlines()) == 1
    assert "retrieval.facets.venue.patterns[0] is not a valid regular expression" in (broken.stderr)
    no_model = select("methane", "--corpus", corpus, env={**env, "LYRA_LLM_URL": "http://x/v1"})
    assert no_model.returncode == 2
    assert "LYRA_LLM_URL is set but no model is named: set LYRA_LLM_MODEL" in no_model.stderr


def test_select_with_a_cross_encoder_and_the_llm_over_http(start_simulator, tmp_path: Path):
    simulator = start_simulator()
    corpus = str(corpus_file(tmp_path))
    words = [f"{d['title']} {d['text']}" for d in CORPUS] + ["do fires emit methane"]
    model = onnx_models.cross_encoder(tmp_path / "ce", words)

    def with_models(policy: dict) -> None:
        policy["retrieval"]["cross_encoder"]["model"] = str(model)
        # The CrossEncoder leaves 4 candidates above its threshold: let the LLM rate them.
        policy["retrieval"]["llm"]["skip_at_most"] = 1

    config = edited_config(tmp_path / "config", with_models)
    env = {
        "LYRA_DATA_DIR": str(tmp_path / "data"),
        "LYRA_DB_PATH": str(tmp_path / "x.sqlite3"),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_LLM_URL": f"{simulator.url}/llm/v1",
        "LYRA_LLM_MODEL": "sim",
        "LYRA_LLM_API_KEY": "secret-key",
    }
    done = select("do fires emit methane?", "--corpus", corpus, "--json", "--explain", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    stages = {s["name"]: s for s in answer["stages"]}
    assert stages["cross_encoder"]["ran"] and stages["llm"]["ran"], stages
    assert answer["hits"][0]["document_id"] == "peat"
    assert answer["hits"][0]["scores"]["cross_encoder"] == 7.0
    assert answer["hits"][0]["scores"]["llm"] == 10.0
    assert answer["audit"]["candidates"][0]["final_rank"] == 1
    assert "secret-key" not in done.stdout + done.stderr
    refused = select(
        "do fires emit methane?", "--corpus", corpus, env={**env, "LYRA_LLM_MODEL": "sim-429"}
    )
    assert refused.returncode == 0, refused.stderr
    assert "llm: skipped: " in refused.stdout and "is rate limiting (429)" in refused.stdout


@pytest_twisted.ensureDeferred
async def test_select_over_a_task_crawled_from_the_simulator(start_simulator, db_path, tmp_path):
    simulator = start_simulator("--results-total", "20")
    await run_crawl(
        simulator,
        db_path,
        query="peat bogs",
        engine="duckduckgo",
        sources="serp,openalex,arxiv",
        serp_max_pages=1,
        strategy="fixed",
        task_id="peat",
    )
    env = {**scrapy_env(simulator, db_path), "LYRA_DATA_DIR": str(tmp_path / "data")}
    (paper,) = query_db(
        db_path,
        "SELECT id, title, abstract, year FROM papers WHERE evidence = 'abstract' "
        "ORDER BY id LIMIT 1",
    )
    # What the paper is about: after "Peat Bogs: " (an API that repunctuates: "Peat Bogs - ").
    topic = re.split(r": | - ", paper["title"], maxsplit=1)[-1]
    found = select(topic, "--task", "peat", "--json", env=env)
    assert found.returncode == 0, found.stderr
    answer = json.loads(found.stdout)
    top = answer["hits"][0]
    assert top["document_id"] == f"paper:{paper['id']}" and top["title"] == paper["title"]
    assert top["text"] == paper["abstract"]

    year = paper["year"]
    dated = select(f"peat bogs since {year}", "--task", "peat", "--json", "-k", "10", env=env)
    hits = json.loads(dated.stdout)["hits"]
    stored = {
        f"paper:{row['id']}": row["year"]
        for row in query_db(db_path, "SELECT id, year FROM papers")
    }
    assert hits and all(stored[h["document_id"]] >= year for h in hits)

    by_query = select(topic, "--query-id", "1", "--json", env=env)
    assert json.loads(by_query.stdout)["hits"][0]["document_id"] == f"paper:{paper['id']}"
    whole = select(topic, env=env)
    assert whole.returncode == 0 and f"[paper:{paper['id']}]" in whole.stdout
    unknown = select(topic, "--task", "nope", env=env)
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        "error: task 'nope' has no query: check the id (scrapy report lists them)"
    )


@pytest.mark.subprocess
def test_a_corpus_index_is_kept_and_updated_and_a_recorded_selection_is_shown(tmp_path: Path):
    corpus = corpus_file(tmp_path)
    env = {"LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_DB_PATH": str(tmp_path / "x.sqlite3")}
    first = select("peat fires", "--corpus", str(corpus), "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert "index built in " in first.stderr and "selection_id" not in json.loads(first.stdout)
    assert not (tmp_path / "x.sqlite3").exists(), "a corpus selection needs no store"
    again = select("peat fires", "--corpus", str(corpus), "--json", "--record", env=env)
    assert "index loaded in " in again.stderr and "7 documents, 7 chunks, unchanged" in (
        again.stderr
    )
    recorded = json.loads(again.stdout)
    shown = select("--show", str(recorded["selection_id"]), env=env)
    assert shown.returncode == 0, shown.stderr
    assert f"over corpus {corpus.resolve()}" in shown.stdout
    assert "question: peat fires" in shown.stdout and "1. [peat] final " in shown.stdout
    refused = run_scrapy(
        "export-papers", "--selection", str(recorded["selection_id"]), "--format", "ris", env=env
    )
    assert refused.returncode == 1
    assert f"ran on corpus {corpus.resolve()}, not on the store's papers" in refused.stderr

    with corpus.open("a") as more:
        more.write(json.dumps({"_id": "bog", "title": "Bog fires", "text": "Bogs burn."}) + "\n")
    updated = select("bog fires", "--corpus", str(corpus), "--json", env=env)
    assert "index updated in " in updated.stderr and "8 documents, 8 chunks; 1 new" in (
        updated.stderr
    )
    assert json.loads(updated.stdout)["hits"][0]["document_id"] == "bog"
    missing = select("--show", "99", env=env)
    assert missing.returncode == 2
    assert "the store (LYRA_DB_URL) has no selection 99" in missing.stderr
    assert select("q", "--task", "t", "--record", env=env).returncode == 2


@pytest_twisted.ensureDeferred
async def test_a_tasks_kept_index_is_updated_when_a_crawl_adds_papers_and_selections_export(
    start_simulator, db_path, tmp_path
):
    simulator = start_simulator("--results-total", "20")
    crawl = {
        "engine": "duckduckgo",
        "sources": "serp,openalex,arxiv",
        "serp_max_pages": 1,
        "strategy": "fixed",
        "task_id": "peat",
    }
    await run_crawl(simulator, db_path, query="peat bogs", **crawl)
    env = {**scrapy_env(simulator, db_path), "LYRA_DATA_DIR": str(tmp_path / "data")}

    built = select("peat bogs", "--task", "peat", "--json", "--explain", env=env)
    assert built.returncode == 0, built.stderr
    assert "index built in " in built.stderr
    answer = json.loads(built.stdout)
    chosen = answer["selection_id"]
    loaded = select("peat bogs", "--task", "peat", env=env)
    assert "index loaded in " in loaded.stderr and ", unchanged" in loaded.stderr
    assert f"recorded as selection {chosen + 1} (scrapy select --show {chosen + 1})" in (
        loaded.stdout
    )

    shown = select("--show", str(chosen), "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    audit = json.loads(shown.stdout)
    assert audit == {**answer["audit"], "id": chosen}, "the record read back is the one written"
    assert audit["corpus"]["task_id"] == "peat" and audit["question"] == "peat bogs"
    models = {stage["name"]: stage["model"] for stage in audit["stages"]}
    assert models["keyword"].startswith("bm25s-") and models["semantic"].startswith("wordllama-")
    hit_papers = [
        c["paper_id"]
        for c in sorted(audit["candidates"], key=lambda c: c["final_rank"] or 99)
        if c["final_rank"] and c["paper_id"]
    ]
    assert [h["document_id"] for h in answer["hits"]] == [
        c["document_id"]
        for c in sorted(audit["candidates"], key=lambda c: c["final_rank"] or 99)
        if c["final_rank"]
    ]
    plain = select("--show", str(chosen), env=env).stdout
    assert plain.startswith(f"selection {chosen}, ") and "over task 'peat'" in plain
    assert CANDIDATES_HEAD in plain

    exported = run_scrapy("export-papers", "--selection", str(chosen), "--format", "csv", env=env)
    assert exported.returncode == 0, exported.stderr
    assert hit_papers and sorted(read_csv(exported.stdout)) == sorted(hit_papers)
    assert f"of selection {chosen} to standard output" in exported.stderr

    # Another query of the task adds papers: the next selection updates the kept index.
    await run_crawl(simulator, db_path, query="tidal marsh salt", **crawl)
    (new,) = query_db(
        db_path,
        "SELECT id, title FROM papers WHERE evidence = 'abstract'"
        " AND id IN (SELECT paper_id FROM serp_items WHERE query_id = 2)"
        " AND id NOT IN (SELECT paper_id FROM serp_items WHERE query_id = 1"
        " AND paper_id IS NOT NULL) ORDER BY id LIMIT 1",
    )
    topic = new["title"]
    updated = select(topic, "--task", "peat", "--json", env=env)
    assert updated.returncode == 0, updated.stderr
    assert "index updated in " in updated.stderr and " new" in updated.stderr
    assert json.loads(updated.stdout)["hits"][0]["document_id"] == f"paper:{new['id']}"
    assert "index loaded in " in select(topic, "--task", "peat", env=env).stderr
