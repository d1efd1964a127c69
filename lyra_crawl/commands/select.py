"""`scrapy select "QUESTION"`: the documents a task collected that answer a question.

Documents: `--task T`, `--batch ID`, `--query-id N` (repeatable), the whole store (none of
these), or `--corpus FILE.jsonl` (BEIR's corpus shape plus optional facet fields). The stages
are lyra_crawl.retrieval's, set by engines.yaml `retrieval:`; the LLM stage by LYRA_LLM_URL,
LYRA_LLM_MODEL and LYRA_LLM_API_KEY. `--questions FILE` (BEIR queries) answers each question
of the file over one index, one JSON line each. `--conversation NAME` carries the facets of
NAME's last question to a question that names none (kept under LYRA_DATA_DIR/conversations).

The index is kept under LYRA_DATA_DIR/indexes, per corpus and models
(lyra_crawl.retrieval.index_cache): the next selection over the same documents loads it, one
whose documents changed since (a crawl added papers, the file changed) updates it first; one
line on standard error says which. Every selection over the store is recorded in it
(`selections`, the audit: question, facets, each candidate's score at every stage, models and
versions, final ranks, the corpus and its version, when), and its id printed; `--record` records
those over a `--corpus` file too. `--show ID` prints a recorded selection's audit; `scrapy
export-papers --selection ID` writes the papers it chose.

Exit status 0 with hits, 1 with no relevant evidence (with --questions: for none of them), 2 for
a usage, config, model or store error, with one line saying which and the fix.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.backend_urls import backend_target, urls_from_settings
from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.backends.protocols import ResultStore
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, RetrievalPolicy, load_config
from lyra_crawl.records import (
    BackendError,
    SelectionCorpus,
    SelectionRecord,
    StageScores,
)
from lyra_crawl.session.saved_pages import data_dir

if TYPE_CHECKING:
    from lyra_crawl.retrieval import (
        Document,
        DocumentIndex,
        DocumentSelector,
        LlmEndpoint,
        Selection,
    )
    from lyra_crawl.retrieval.index_cache import IndexReport

# lyra_crawl.retrieval (numpy, tokenizers, bm25s: a quarter of a second) is imported when a
# selection runs, not here: Scrapy imports every command module at the start of every command,
# `scrapy crawl` too.

CONVERSATIONS_FOLDER = "conversations"
INDEXES_FOLDER = "indexes"
# Characters of a hit's text shown in the plain output.
SHOWN_CHARS = 300
# A question's id (--questions) and its selection; a selection's id once recorded.
Answers = list[tuple[str, "Selection", SelectionRecord]]


class NothingToSelect(Exception):
    """The store has no query of the task, batch or ids asked for."""


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return (
            '"QUESTION" [--task T | --batch ID | --query-id N | --corpus FILE.jsonl [--record]] '
            "[--questions FILE] [-k 3] [--initial-k N] [--conversation NAME] [--json] [--explain]"
            " | --show ID [--json]"
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
        parser.add_argument(
            "--record", action="store_true", help="with --corpus: record it in the store too"
        )
        parser.add_argument(
            "--show", type=int, metavar="ID", help="print the audit of recorded selection ID"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from lyra_crawl.retrieval.corpus import CorpusError
        from lyra_crawl.retrieval.facets import ConversationError

        if opts.show is not None:
            self._show(args, opts)
            return
        questions = self._questions(args, opts)
        for name in ("k", "initial_k"):
            value = getattr(opts, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be 1 or more (got {value})")
        if opts.record and not opts.corpus:
            raise UsageError("--record is for --corpus: a selection over the store is recorded")
        try:
            policy = load_config(self.settings.get("LYRA_CONFIG_DIR")).retrieval
            llm = self._llm(policy)
            if opts.corpus:
                answers, report = self._on_corpus(policy, llm, questions, opts)
            else:
                answers, report = run_sync(
                    with_backends(
                        self.settings,
                        lambda b: self._on_store(b.store, policy, llm, questions, opts),
                    )
                )
        except (ConfigError, BackendError, CorpusError, ConversationError, NothingToSelect) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        print(report.describe(), file=sys.stderr)
        for question_id, selection, record in answers:
            print(
                _shown(
                    selection,
                    record,
                    question_id,
                    as_json=opts.json or bool(opts.questions),
                    explain=opts.explain,
                )
            )
        self.exitcode = 0 if any(s.hits for _, s, _ in answers) else 1

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

    def _on_corpus(
        self,
        policy: RetrievalPolicy,
        llm: LlmEndpoint | None,
        questions: list[tuple[str, str]],
        opts: argparse.Namespace,
    ) -> tuple[Answers, IndexReport]:
        """Selections over a corpus file's documents, recorded in the store with --record."""
        from lyra_crawl.retrieval.corpus import CorpusError, read_corpus
        from lyra_crawl.retrieval.index_cache import KeptIndex, corpus_key, file_stamp

        path = Path(opts.corpus)
        corpus = SelectionCorpus(file=str(path.resolve()))
        try:
            stamp = file_stamp(path)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot be read ({exc.strerror}): check the path") from None
        kept = KeptIndex(self._indexes(), corpus_key(corpus), policy)
        index, report = kept.refresh(stamp, None if kept.is_current(stamp) else read_corpus(path))
        answers = self._answers(index, llm, questions, corpus, opts)
        if opts.record:

            async def record(backends: Backends) -> Answers:
                return await _recorded(backends.store, answers)

            answers = run_sync(with_backends(self.settings, record))
        return answers, report

    async def _on_store(
        self,
        store: ResultStore,
        policy: RetrievalPolicy,
        llm: LlmEndpoint | None,
        questions: list[tuple[str, str]],
        opts: argparse.Namespace,
    ) -> tuple[Answers, IndexReport]:
        """Selections over the documents of the queries asked for, each recorded."""
        from lyra_crawl.retrieval.index_cache import KeptIndex, corpus_key

        corpus = SelectionCorpus(
            task_id=opts.task,
            batch_id=opts.batch,
            query_ids=tuple(opts.query_id or ()),
            whole_store=not (opts.task or opts.batch is not None or opts.query_id),
        )
        ids = await _query_ids(store, corpus)
        if not ids:
            raise NothingToSelect(f"{corpus} has no query: check the id (scrapy report lists them)")
        # Which queries, and what the store says of their documents.
        which = hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:12]
        stamp = f"{which}:{await store.documents_version(ids)}"
        where = backend_target(urls_from_settings(self.settings).store)
        kept = KeptIndex(self._indexes(), corpus_key(corpus, where), policy)
        documents = None if kept.is_current(stamp) else await _stored_documents(store, ids)
        index, report = kept.refresh(stamp, documents)
        answers = self._answers(index, llm, questions, corpus, opts)
        return await _recorded(store, answers), report

    def _indexes(self) -> Path:
        return data_dir(self.settings) / INDEXES_FOLDER

    def _answers(
        self,
        index: DocumentIndex,
        llm: LlmEndpoint | None,
        questions: list[tuple[str, str]],
        corpus: SelectionCorpus,
        opts: argparse.Namespace,
    ) -> Answers:
        selector = self._selector(index, llm)
        answers = []
        for question_id, text in questions:
            selection = self._select(selector, text, opts)
            answers.append((question_id, selection, selection.record(corpus)))
        return answers

    def _selector(self, index: DocumentIndex, llm: LlmEndpoint | None) -> DocumentSelector:
        from lyra_crawl.retrieval import ConversationsInFolder, CrossEncoder, DocumentSelector

        policy = index.policy
        cross_encoder = CrossEncoder(policy.cross_encoder) if policy.cross_encoder.model else None
        folder = data_dir(self.settings) / CONVERSATIONS_FOLDER
        return DocumentSelector(
            index,
            cross_encoder=cross_encoder,
            llm=llm,
            conversations=ConversationsInFolder(folder),
        )

    def _show(self, args: list[str], opts: argparse.Namespace) -> None:
        if args or opts.questions:
            raise UsageError("--show ID prints a recorded selection: give no question with it")

        async def read(backends: Backends) -> SelectionRecord | None:
            return await backends.store.selection(opts.show)

        try:
            record = run_sync(with_backends(self.settings, read))
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        if record is None:
            print(
                f"error: the store (LYRA_DB_URL) has no selection {opts.show}: scrapy select"
                " prints the id of each selection it records",
                file=sys.stderr,
            )
            self.exitcode = 2
            return
        if opts.json:
            print(json.dumps(record.as_dict(), ensure_ascii=False))
        else:
            print(_shown_record(record))

    @staticmethod
    def _select(selector: DocumentSelector, question: str, opts: argparse.Namespace) -> Selection:
        return selector.select(
            question, k=opts.k, initial_k=opts.initial_k, conversation=opts.conversation
        )


async def _query_ids(store: ResultStore, corpus: SelectionCorpus) -> list[int]:
    if corpus.task_id is not None:
        return await store.query_ids(task_id=corpus.task_id)
    if corpus.batch_id is not None:
        return await store.batch_query_ids(corpus.batch_id)
    if corpus.query_ids:
        return [i for i in corpus.query_ids if await store.query(i) is not None]
    return await store.query_ids()


async def _stored_documents(store: ResultStore, ids: list[int]) -> list[Document]:
    """The documents of these queries: their papers and the results no paper took in."""
    from lyra_crawl.retrieval.collected import collected_documents

    papers, items = [], []
    for query_id in ids:
        papers.extend(await store.papers_of(query_id))
        items.extend(await store.items(query_id))
    return collected_documents(papers, items)


async def _recorded(store: ResultStore, answers: Answers) -> Answers:
    """The answers with their records as the store keeps them: with their ids."""
    return [
        (question_id, selection, replace(record, id=await store.record_selection(record)))
        for question_id, selection, record in answers
    ]


def _shown(
    selection: Selection,
    record: SelectionRecord,
    question_id: str,
    *,
    as_json: bool,
    explain: bool,
) -> str:
    if as_json:
        return json.dumps(_as_json(selection, record, question_id, explain), ensure_ascii=False)
    lines = [f"question: {selection.question}"]
    if explain:
        lines += [f"  {_stage_line(stage)}" for stage in selection.stages]
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
        lines.append(CANDIDATES_HEAD)
        lines += [f"  {_scores_line(c.document_id, c.scores)}" for c in selection.candidates]
    if record.id is not None:
        lines.append(f"recorded as selection {record.id} (scrapy select --show {record.id})")
    return "\n".join(lines)


CANDIDATES_HEAD = "candidates: rank document keyword(rank) semantic(rank) fused CE LLM final"


def _stage_line(stage: Any) -> str:
    return f"{stage.name}: {stage.detail}" + (f" [{stage.model}]" if stage.model else "")


def _scores_line(document_id: str, s: StageScores) -> str:
    def number(value: float | None, rank: int | None = None) -> str:
        if value is None:
            return "-"
        return f"{value:.3f}" + (f"({rank})" if rank is not None else "")

    return " ".join(
        [
            str(s.fused_rank),
            document_id,
            number(s.keyword, s.keyword_rank),
            number(s.semantic, s.semantic_rank),
            number(s.fused),
            number(s.cross_encoder),
            number(s.llm),
            number(s.final),
        ]
    )


def _shown_record(record: SelectionRecord) -> str:
    """A recorded selection's audit, as `--show` prints it."""
    lines = [
        f"selection {record.id}, {record.selected_at}, over {record.corpus}"
        f" (corpus version {record.corpus_version})",
        f"question: {record.question}",
    ]
    if record.conversation:
        lines.append(f"  conversation: {record.conversation}")
    named = ", ".join(record.facets_named) or "-"
    carried = ", ".join(record.facets_carried) or "-"
    lines.append(
        f"  searched {record.search_text!r}; facets named {named}, carried {carried};"
        f" {record.documents_kept} of {record.documents_total} documents kept"
    )
    lines += [f"  {_stage_line(stage)}" for stage in record.stages]
    hits = record.hits()
    if not hits:
        lines.append(f"no relevant evidence: {record.reason}")
    for hit in hits:
        paper = f" (paper {hit.paper_id})" if hit.paper_id is not None else ""
        final = "-" if hit.scores.final is None else f"{hit.scores.final:.3f}"
        lines.append(f"{hit.final_rank}. [{hit.document_id}]{paper} final {final}")
    lines.append(CANDIDATES_HEAD)
    lines += [f"  {_scores_line(c.document_id, c.scores)}" for c in record.candidates]
    return "\n".join(lines)


def _as_json(
    selection: Selection, record: SelectionRecord, question_id: str, explain: bool
) -> dict[str, Any]:
    answer: dict[str, Any] = {"question": selection.question}
    if question_id:
        answer = {"_id": question_id, **answer}
    if record.id is not None:
        answer["selection_id"] = record.id
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
        answer["audit"] = record.as_dict()
    return answer


def _scores(scores: StageScores) -> dict[str, float | int | None]:
    return {name: value for name, value in vars(scores).items() if value is not None}
