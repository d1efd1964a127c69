"""Indexes kept on disk (lyra_crawl.retrieval.index_cache): an index updated to new documents is
the one a build of them makes; a kept index is loaded when its documents' version is current,
checked, updated or built again otherwise, and says which; one that cannot be read or written
is said so, never used stale."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.records import SelectionCorpus
from lyra_crawl.retrieval import Document, DocumentIndex, DocumentSelector
from lyra_crawl.retrieval.index_cache import KEPT_FILE, KeptIndex, corpus_key, file_stamp
from tests.test_retrieval_selection import CORPUS

POLICY = load_config().retrieval
QUESTIONS = ("do peat fires emit methane?", "sea ice", "rice paddies", "underground fires")
KEY = corpus_key(SelectionCorpus(task_id="peat"), "sqlite:////data/lyra.sqlite3")


def answers(index: DocumentIndex) -> list[list[tuple[str, float]]]:
    selector = DocumentSelector(index)
    return [
        [(hit.document_id, round(hit.scores.final or 0.0, 6)) for hit in selector.select(q).hits]
        for q in QUESTIONS
    ]


def changed(documents: list[Document]) -> list[Document]:
    """The corpus a day later: one paper gone, one abstract longer, one with new facets, one
    new paper."""
    later = [d for d in documents if d.id != "coal"]
    later = [replace(d, text=d.text + " Fires smoulder.") if d.id == "haze" else d for d in later]
    later = [replace(d, facets={"year": 2023}) if d.id == "ice" else d for d in later]
    return [*later, Document("bog", "Bog fires and methane", "Burning bogs emit methane.")]


def test_an_index_brought_to_new_documents_is_the_one_a_build_of_them_makes() -> None:
    index = DocumentIndex.build(CORPUS, POLICY)
    update = index.sync(changed(CORPUS))
    fresh = DocumentIndex.build(changed(CORPUS), POLICY)

    assert (update.added, update.replaced, update.refaceted, update.removed) == (1, 1, 1, 1)
    assert update.chunks == 2, "only the new and the changed documents are embedded"
    assert update.describe() == "1 new, 1 changed, 1 with new facets, 1 gone"
    assert index.version == fresh.version
    assert sorted(c.text for c in index.chunks) == sorted(c.text for c in fresh.chunks)
    assert answers(index) == answers(fresh)
    assert index.sync(changed(CORPUS)).describe() == "no document changed"


def test_a_kept_index_is_loaded_checked_updated_or_built_and_says_which(tmp_path: Path) -> None:
    kept = KeptIndex(tmp_path, KEY, POLICY)
    assert kept.index is None and not kept.is_current("v1")
    built, report = kept.refresh("v1", CORPUS)
    assert report.how == "built" and report.detail == "8 documents, 8 chunks"
    assert report.describe().startswith("index built in ")

    again = KeptIndex(tmp_path, KEY, POLICY)
    assert again.is_current("v1")
    loaded, report = again.refresh("v1")
    assert (report.how, report.detail) == ("loaded", "8 documents, 8 chunks, unchanged")
    assert answers(loaded) == answers(built) and loaded.version == built.version
    with pytest.raises(ValueError, match="give its documents"):
        again.refresh("v2")

    files = sorted(p.name for p in again.folder.iterdir())
    # The store moved on (another task's crawl): the documents read again are the same.
    _, report = KeptIndex(tmp_path, KEY, POLICY).refresh("v2", CORPUS)
    assert (report.how, report.detail) == ("checked", "8 documents, 8 chunks; no document changed")
    assert sorted(p.name for p in again.folder.iterdir()) == files, "only the stamp is new"
    assert KeptIndex(tmp_path, KEY, POLICY).is_current("v2")

    _, report = KeptIndex(tmp_path, KEY, POLICY).refresh("v3", changed(CORPUS))
    assert report.how == "updated"
    assert report.detail == "8 documents, 8 chunks; 1 new, 1 changed, 1 with new facets, 1 gone"
    reloaded, report = KeptIndex(tmp_path, KEY, POLICY).refresh("v3")
    assert report.how == "loaded"
    assert answers(reloaded) == answers(DocumentIndex.build(changed(CORPUS), POLICY))
    assert DocumentSelector(reloaded).select("burning bogs").hits[0].document_id == "bog"
    assert len(list(again.folder.iterdir())) == 4, "the files of earlier saves are gone"


def test_other_models_or_corpora_keep_indexes_of_their_own(tmp_path: Path) -> None:
    KeptIndex(tmp_path, KEY, POLICY).refresh("v1", CORPUS)
    other_chunks = replace(POLICY, chunk_size=100, chunk_overlap=10)
    kept = KeptIndex(tmp_path, KEY, other_chunks)
    assert kept.index is None and kept.problem == ""
    assert KeptIndex(tmp_path, corpus_key(SelectionCorpus(task_id="haze")), POLICY).index is None
    keys = {
        corpus_key(SelectionCorpus(task_id="peat"), "sqlite:////a.sqlite3"),
        corpus_key(SelectionCorpus(task_id="peat"), "sqlite:////b.sqlite3"),
        corpus_key(SelectionCorpus(batch_id=3), "sqlite:////a.sqlite3"),
        corpus_key(SelectionCorpus(query_ids=(1, 2)), "sqlite:////a.sqlite3"),
        corpus_key(SelectionCorpus(whole_store=True), "sqlite:////a.sqlite3"),
        corpus_key(SelectionCorpus(file=str(tmp_path / "corpus.jsonl"))),
    }
    assert len(keys) == 6
    assert corpus_key(SelectionCorpus(task_id="p/../x y"), "s").startswith("task-p_.._x_y-")


def test_a_kept_index_that_cannot_be_read_is_built_again_saying_why(tmp_path: Path) -> None:
    kept = KeptIndex(tmp_path, KEY, POLICY)
    kept.refresh("v1", CORPUS)
    token = json.loads((kept.folder / KEPT_FILE).read_text())["token"]
    (kept.folder / f"{token}.semantic.npz").write_bytes(b"not numpy")

    broken = KeptIndex(tmp_path, KEY, POLICY)
    assert broken.index is None and not broken.is_current("v1")
    assert broken.problem.startswith("it cannot be read (")
    _, report = broken.refresh("v1", CORPUS)
    assert report.how == "rebuilt" and "it cannot be read (" in report.detail
    assert KeptIndex(tmp_path, KEY, POLICY).is_current("v1")

    (kept.folder / KEPT_FILE).write_text("{not json")
    assert KeptIndex(tmp_path, KEY, POLICY).problem.startswith(f"its {KEPT_FILE} cannot be read")


def test_an_index_that_cannot_be_kept_is_used_and_said_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where the folder would be")
    index, report = KeptIndex(tmp_path / "file", KEY, POLICY).refresh("v1", CORPUS)
    assert report.how == "built" and len(index.documents) == len(CORPUS)
    assert report.note.startswith("not kept: ") and "cannot be written" in report.note


def test_a_corpus_files_version_is_its_content(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "1", "title": "t", "text": "x"}\n')
    first = file_stamp(path)
    path.write_text('{"_id": "1", "title": "t", "text": "y"}\n')
    assert file_stamp(path) != first
    path.write_text('{"_id": "1", "title": "t", "text": "x"}\n')
    assert file_stamp(path) == first
