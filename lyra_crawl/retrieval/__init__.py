"""Document selection over what a task collected, or any documents (pure: no Scrapy, no SQL).

The stages, in order (DESIGN.md "Selection flow"): the facets a question names filter the
documents (a question naming none carries its conversation's last facets); BM25 and a semantic
model each find their top `initial_k`, fused by weighted reciprocal rank fusion; a CrossEncoder
scores every candidate (skipped, saying so, when none is configured); an LLM rates them 0-10
when more than 5 remain; the final score weighs the stages that ran, drops candidates below the
CrossEncoder's threshold (or the semantic floor without one) and returns the top `final_k`, or
"no relevant evidence" with the reason. Every score and every skip is kept on the result.

    from lyra_crawl.retrieval import Document, DocumentIndex, DocumentSelector

    index = DocumentIndex.build([Document("1", "Peat fires", "Peat fires emit methane...",
                                          {"year": 2021})])
    selection = DocumentSelector(index).select("do peat fires emit methane?", k=3)
    for hit in selection.hits:
        print(hit.document_id, hit.scores.final, hit.chunk.text)

Settings are a `RetrievalPolicy` (engines.yaml `retrieval:`); `DocumentIndex.add` updates an
index with new or changed documents; `Selection.record()` is the audit record, which a store
keeps (`scrapy select` records every selection over the store).
"""

from lyra_crawl.records import (
    CandidateRecord,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
)
from lyra_crawl.retrieval.cross_encoder import CrossEncoder
from lyra_crawl.retrieval.documents import Chunk, Document
from lyra_crawl.retrieval.facets import (
    ConversationsInFolder,
    ConversationsInMemory,
    FacetDecision,
    FacetFilter,
)
from lyra_crawl.retrieval.llm import LlmEndpoint
from lyra_crawl.retrieval.pipeline import DocumentIndex, DocumentSelector, IndexUpdate
from lyra_crawl.retrieval.records import Candidate, Selection

__all__ = [
    "Candidate",
    "CandidateRecord",
    "Chunk",
    "ConversationsInFolder",
    "ConversationsInMemory",
    "CrossEncoder",
    "Document",
    "DocumentIndex",
    "DocumentSelector",
    "FacetDecision",
    "FacetFilter",
    "IndexUpdate",
    "LlmEndpoint",
    "Selection",
    "SelectionCorpus",
    "SelectionRecord",
    "StageRun",
    "StageScores",
]
