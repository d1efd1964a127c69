"""`scrapy select "QUESTION"`: the documents a task collected that answer a question.

Documents: `--task T`, `--batch ID`, `--query-id N` (repeatable), the whole store (none of
these), or `--corpus FILE.jsonl` (BEIR's corpus shape plus optional facet fields). The stages
are lyra_crawl.retrieval's, set by engines.yaml `retrieval:`; the LLM stage by LYRA_LLM_URL,
LYRA_LLM_MODEL and LYRA_LLM_API_KEY. `--questions FILE` (BEIR queries) answers each question
of the file over one index, one JSON line each. `--conversation NAME` carries the facets of
NAME's last question to a question that names none (kept under LYRA_DATA_DIR/conversations).

Exit status 0 with hits, 1 with no relevant evidence (with --questions: for none of them), 2 for
a usage, config, model or store error, with one line saying which and the fix.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.backends.records import BackendError
from lyra_crawl.config import ConfigError, RetrievalPolicy, load_config
from lyra_crawl.session.saved_pages import data_dir

if TYPE_CHECKING:
    from lyra_crawl.retrieval import Document, DocumentSelector, LlmEndpoint, Selection

# lyra_crawl.retrieval (numpy, tokenizers, bm25s: a quarter of a second) is imported when a
# selection runs, not here: Scrapy imports every command module at the start of every command,
# `scrapy crawl` too.

CONVERSATIONS_FOLDER = "conversations"
# Characters of a hit's text shown in the plain output.
SHOWN_CHARS = 300


class NothingToSelect(Exception):
    """The store has no query of the task, batch or ids asked for."""


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            '"QUESTION" [--task T | --batch ID | --query-id N | --corpus FILE.jsonl] '
            "[--questions FILE] [-k 3] [--initial-k N] [--conversation NAME] [--json] [--explain]"
        )

    def short_desc(self) -> str:
        return "Choose the documents that answer a question among what a task collected"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--task", metavar="T", help="the documents of this task_id's queries")
        which.add_argument("--batch", type=int, metavar="ID", help="of this batch's queries")
        which.add_argument(
            "--query-id", type=int, action="append", metavar="N", help="of this query (repeatable)"
        )
        which.add_argument(
            "--corpus", metavar="FILE", help="a JSONL corpus (BEIR shape + facet fields)"
        )
        parser.add_argument(
            "--questions", metavar="FILE", help="BEIR queries JSONL: one JSON line of hits each"
        )
        parser.add_argument("-k", type=int, metavar="K", help="hits returned (retrieval.final_k)")
        parser.add_argument(
            "--initial-k", type=int, metavar="N", help="each retriever's depth (initial_k)"
        )
        parser.add_argument(
            "--conversation", metavar="NAME", help="carry facets from NAME's last question"
        )
        parser.add_argument("--json", action="store_true", help="one JSON object per question")
        parser.add_argument(
            "--explain", action="store_true", help="every stage's scores and the facet filter"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from lyra_crawl.retrieval.corpus import CorpusError
        from lyra_crawl.retrieval.facets import ConversationError

        questions = self._questions(args, opts)
        for name in ("k", "initial_k"):
            value = getattr(opts, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be 1 or more (got {value})")
        try:
            policy = load_config(self.settings.get("LYRA_CONFIG_DIR")).retrieval
            llm = self._llm(policy)
            selector = self._selector(policy, self._documents(opts), llm)
            selections = [
                (question_id, self._select(selector, text, opts)) for question_id, text in questions
            ]
        except (ConfigError, BackendError, CorpusError, ConversationError, NothingToSelect) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        for question_id, selection in selections:
            print(
                _shown(
                    selection,
                    question_id,
                    as_json=opts.json or bool(opts.questions),
                    explain=opts.explain,
                )
            )
        self.exitcode = 0 if any(s.hits for _, s in selections) else 1

    def _questions(self, args: list[str], opts: argparse.Namespace) -> list[tuple[str, str]]:
        from lyra_crawl.retrieval.corpus import CorpusError, read_questions

        if opts.questions:
            if args:
                raise UsageError("give the QUESTION or --questions FILE, not both")
            try:
                return read_questions(Path(opts.questions))
            except CorpusError as exc:
                raise UsageError(str(exc)) from None
        if len(args) != 1 or not args[0].strip():
            raise UsageError('give one QUESTION in quotes: scrapy select "which papers say X?"')
        return [("", args[0])]

    def _llm(self, policy: RetrievalPolicy) -> LlmEndpoint | None:
        from lyra_crawl.retrieval import LlmEndpoint

        url = (self.settings.get("LYRA_LLM_URL") or "").strip()
        if not url:
            return None
        model = (self.settings.get("LYRA_LLM_MODEL") or "").strip() or policy.llm.model
        if not model:
            raise ConfigError(
                "LYRA_LLM_URL is set but no model is named: set LYRA_LLM_MODEL or "
                "retrieval.llm.model in engines.yaml"
            )
        return LlmEndpoint(url, model, self.settings.get("LYRA_LLM_API_KEY") or "")

    def _documents(self, opts: argparse.Namespace) -> list[Document]:
        from lyra_crawl.retrieval.corpus import read_corpus

        if opts.corpus:
            return read_corpus(Path(opts.corpus))
        found = run_sync(with_backends(self.settings, lambda b: _stored_documents(b, opts)))
        if found is None:
            if opts.task:
                which = f"task {opts.task!r}"
            elif opts.batch is not None:
                which = f"batch {opts.batch}"
            elif opts.query_id:
                which = f"query {', '.join(map(str, opts.query_id))}"
            else:
                which = "the store"
            raise NothingToSelect(f"{which} has no query: check the id (scrapy report lists them)")
        return found

    def _selector(
        self, policy: RetrievalPolicy, documents: list[Document], llm: LlmEndpoint | None
    ) -> DocumentSelector:
        from lyra_crawl.retrieval import (
            ConversationsInFolder,
            CrossEncoder,
            DocumentIndex,
            DocumentSelector,
        )

        cross_encoder = CrossEncoder(policy.cross_encoder) if policy.cross_encoder.model else None
        index = DocumentIndex.build(documents, policy)
        folder = data_dir(self.settings) / CONVERSATIONS_FOLDER
        return DocumentSelector(
            index,
            cross_encoder=cross_encoder,
            llm=llm,
            conversations=ConversationsInFolder(folder),
        )

    @staticmethod
    def _select(selector: DocumentSelector, question: str, opts: argparse.Namespace) -> Selection:
        return selector.select(
            question, k=opts.k, initial_k=opts.initial_k, conversation=opts.conversation
        )


async def _stored_documents(backends: Backends, opts: argparse.Namespace) -> list[Document] | None:
    """The documents of the queries asked for; None when there is no such query."""
    from lyra_crawl.retrieval.collected import collected_documents

    store = backends.store
    if opts.task:
        ids = await store.query_ids(task_id=opts.task)
    elif opts.batch is not None:
        ids = await store.batch_query_ids(opts.batch)
    elif opts.query_id:
        ids = [i for i in opts.query_id if await store.query(i) is not None]
    else:
        ids = await store.query_ids()
    if not ids:
        return None
    papers, items = [], []
    for query_id in ids:
        papers.extend(await store.papers_of(query_id))
        items.extend(await store.items(query_id))
    return collected_documents(papers, items)


def _shown(selection: Selection, question_id: str, *, as_json: bool, explain: bool) -> str:
    if as_json:
        return json.dumps(_as_json(selection, question_id, explain), ensure_ascii=False)
    lines = [f"question: {selection.question}"]
    if explain:
        lines += [
            f"  {stage.name}: {stage.detail}" + (f" [{stage.model}]" if stage.model else "")
            for stage in selection.stages
        ]
    else:
        lines.append(f"  facets: {selection.facets.describe()}")
        lines += [
            f"  {s.name}: {s.detail}"
            for s in selection.stages
            if not s.ran and s.name in ("cross_encoder", "llm")
        ]
    if not selection.hits:
        lines.append(f"no relevant evidence: {selection.reason}")
    for rank, hit in enumerate(selection.hits, start=1):
        chunk = hit.chunk
        part = f" (chunk {chunk.index + 1})" if chunk.index else ""
        lines.append(
            f"{rank}. [{hit.document_id}]{part} {chunk.document.title}  "
            f"final {hit.scores.final:.3f}"
        )
        body = chunk.body.replace("\n", " ")
        if body:
            lines.append(f"   {body[:SHOWN_CHARS]}{'...' if len(body) > SHOWN_CHARS else ''}")
    if explain:
        lines.append("candidates: rank document keyword(rank) semantic(rank) fused CE LLM final")
        lines += [f"  {_scores_line(c)}" for c in selection.candidates]
    return "\n".join(lines)


def _scores_line(candidate: Any) -> str:
    s = candidate.scores

    def number(value: float | None, rank: int | None = None) -> str:
        if value is None:
            return "-"
        return f"{value:.3f}" + (f"({rank})" if rank is not None else "")

    return " ".join(
        [
            str(s.fused_rank),
            candidate.document_id,
            number(s.keyword, s.keyword_rank),
            number(s.semantic, s.semantic_rank),
            number(s.fused),
            number(s.cross_encoder),
            number(s.llm),
            number(s.final),
        ]
    )


def _as_json(selection: Selection, question_id: str, explain: bool) -> dict[str, Any]:
    answer: dict[str, Any] = {"question": selection.question}
    if question_id:
        answer = {"_id": question_id, **answer}
    answer["status"] = "hits" if selection.hits else "no_relevant_evidence"
    if selection.reason:
        answer["reason"] = selection.reason
    answer["facets"] = selection.facets.describe()
    answer["hits"] = [
        {
            "rank": rank,
            "document_id": hit.document_id,
            "chunk": hit.chunk.index,
            "title": hit.chunk.document.title,
            "text": hit.chunk.body,
            "score": hit.scores.final,
            "scores": _scores(hit.scores),
        }
        for rank, hit in enumerate(selection.hits, start=1)
    ]
    answer["stages"] = [
        {"name": s.name, "ran": s.ran, "detail": s.detail, "model": s.model}
        for s in selection.stages
    ]
    if explain:
        answer["audit"] = selection.record().as_dict()
    return answer


def _scores(scores: Any) -> dict[str, float | int | None]:
    return {name: value for name, value in vars(scores).items() if value is not None}
