"""Indexes kept on disk: a selection over the documents a selection already indexed loads that
index instead of building it again, and never uses it stale. Pure.

One index is kept per corpus and settings, in `<root>/<corpus key>/<settings key>/`: the corpus
key names what the documents are (a store and the task, batch or queries whose documents they
are, or the whole store; a corpus file: `corpus_key`), the settings key the models, their
versions and the chunking (`pipeline.settings_digest`), so that another model never reads an
index made by another. The index is kept with its stamp: the version of its documents when it
was saved (for a store, what `SelectionStore.documents_version` says of the queries and which
queries they are; for a corpus file, a digest of the file). `KeptIndex` then says what it did:

- `loaded`: the stamp is the documents' version now: only the cache was read;
- `checked`: the version moved (another task's crawl saved papers) but the documents, read
  again, are the index's own: kept as it is, with the new stamp;
- `updated`: new or changed documents added (only those embedded), vanished ones removed;
- `built`: none was kept; `rebuilt`: the kept one could not be read (the reason given).

An index is written whole or not at all: its files are named after a token of their own, and
the file naming the token (`kept.json`) is replaced last, so a reader never mixes two saves.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lyra_crawl.config import RetrievalPolicy
from lyra_crawl.records import SelectionCorpus
from lyra_crawl.retrieval.documents import Document
from lyra_crawl.retrieval.pipeline import DocumentIndex, settings_digest
from lyra_crawl.retrieval.semantic import Embedder, load_embedder

KEPT_FILE = "kept.json"
# What a kept index's files are: another format is built again, not read.
FORMAT = 1


def corpus_key(corpus: SelectionCorpus, store: str = "") -> str:
    """The folder name of a corpus's indexes: `store` (where the store is, no password) and the
    queries of `corpus`, or its file; readable, and unique by a digest of what it names."""
    if corpus.file is not None:
        where = str(Path(corpus.file).resolve())
        name = f"file-{Path(corpus.file).stem}"
    else:
        where = json.dumps([store, corpus.task_id, corpus.batch_id, list(corpus.query_ids)])
        if corpus.task_id is not None:
            name = f"task-{corpus.task_id}"
        elif corpus.batch_id is not None:
            name = f"batch-{corpus.batch_id}"
        elif corpus.query_ids:
            name = f"queries-{corpus.query_ids[0]}"
        else:
            name = "store"
    safe = re.sub(r"[^\w.-]", "_", name)[:40]
    return f"{safe}-{hashlib.sha256(where.encode()).hexdigest()[:12]}"


def file_stamp(path: Path) -> str:
    """A corpus file's version: the digest of its bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()[:24]


@dataclass(frozen=True)
class IndexReport:
    """What opening a kept index did (`how`: loaded, checked, updated, built, rebuilt), in
    words, and in how many seconds; `note`: why the index is not kept, if it could not be."""

    how: str
    detail: str
    seconds: float
    note: str = ""

    def describe(self) -> str:
        text = f"index {self.how} in {self.seconds:.2f} s: {self.detail}"
        return f"{text}; {self.note}" if self.note else text


class KeptIndex:
    """The index kept in `root` for one corpus, read if it is there; `refresh` brings it to
    the documents' version and keeps it."""

    def __init__(
        self,
        root: Path,
        key: str,
        policy: RetrievalPolicy,
        embedder: Embedder | None = None,
    ) -> None:
        self._started = time.perf_counter()
        self._policy = policy
        self._embedder = embedder or load_embedder(policy.semantic)
        self.folder = root / key / settings_digest(policy, self._embedder)
        self.index: DocumentIndex | None = None
        self.stamp = ""
        self._token = ""
        # Why a kept index could not be read.
        self.problem = ""
        self._load()

    def _load(self) -> None:
        try:
            kept = json.loads((self.folder / KEPT_FILE).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return
        except (OSError, ValueError) as exc:
            self.problem = f"its {KEPT_FILE} cannot be read ({exc})"
            return
        try:
            if kept.get("format") != FORMAT:
                raise ValueError(f"it is of format {kept.get('format')}, not {FORMAT}")
            self.index = DocumentIndex.load(
                self.folder, kept["token"], self._policy, self._embedder
            )
            self.stamp, self._token = str(kept["stamp"]), kept["token"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.problem = f"it cannot be read ({exc})"

    def is_current(self, stamp: str) -> bool:
        """Whether the kept index holds the documents of version `stamp`."""
        return self.index is not None and self.stamp == stamp

    def refresh(
        self, stamp: str, documents: Sequence[Document] | None = None
    ) -> tuple[DocumentIndex, IndexReport]:
        """The index of the documents of version `stamp`, kept on disk; `documents` are read
        only when the kept one is not current (None: it must be)."""
        index = self.index
        if index is not None and self.stamp == stamp:
            return index, self._report("loaded", f"{_size(index)}, unchanged")
        if documents is None:
            raise ValueError(f"the kept index is not of version {stamp}: give its documents")
        if index is None:
            index = DocumentIndex.build(documents, self._policy, self._embedder)
            how, detail = ("rebuilt", self.problem) if self.problem else ("built", "")
        else:
            update = index.sync(documents)
            how = "updated" if update.changed else "checked"
            detail = update.describe()
        detail = f"{_size(index)}; {detail}" if detail else _size(index)
        # Checked: the files kept are the index's; only the stamp is new.
        note = self._keep(index, stamp, self._token if how == "checked" else "")
        self.index, self.stamp = index, stamp
        return index, self._report(how, detail, note)

    def _report(self, how: str, detail: str, note: str = "") -> IndexReport:
        return IndexReport(how, detail, time.perf_counter() - self._started, note)

    def _keep(self, index: DocumentIndex, stamp: str, token: str = "") -> str:
        """Save `index` with `stamp` (with `token`: its files are there already); empty, or why
        it could not be kept (the selection goes on without)."""
        written: list[Path] = []
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            if not token:
                token = secrets.token_hex(6)
                written = index.save(self.folder, token)
            part = self.folder / f"{token}.{KEPT_FILE}"
            part.write_text(
                json.dumps({"format": FORMAT, "token": token, "stamp": stamp}), encoding="utf-8"
            )
            os.replace(part, self.folder / KEPT_FILE)
        except OSError as exc:
            for path in written:
                _remove(path)
            return f"not kept: {self.folder} cannot be written ({exc.strerror or exc})"
        self._token = token
        # Another selection may have kept its own since: its files stay with ours.
        kept = {token, _kept_token(self.folder)}
        for path in self.folder.iterdir():
            if path.name != KEPT_FILE and path.name.split(".", 1)[0] not in kept:
                _remove(path)
        return ""


def _kept_token(folder: Path) -> str:
    """The token of the index `folder`'s kept.json names now ("" if none can be read)."""
    try:
        return str(json.loads((folder / KEPT_FILE).read_text(encoding="utf-8"))["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _size(index: DocumentIndex) -> str:
    return f"{len(index.documents)} documents, {len(index.chunks)} chunks"


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
