"""A task's citation graph as GraphML, or as a nodes table and an edges table (CSV). Pure.

Nodes are papers: `id` (the `papers` row), `title`, `year`, `doi`, `evidence` (abstract or
fetch). Edges go from the citing paper to the cited one, one per pair of papers, `sources`
naming the APIs that list it (comma-separated: "openalex,semantic_scholar"), so a citation both
APIs know is one edge, not two parallel ones. GraphML is what networkx (`read_graphml`) and
Gephi read as a directed graph; the CSV tables use the column names Gephi's spreadsheet import
recognises (`id`; `source`, `target`), and a value absent is an empty cell.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from xml.etree import ElementTree

from lyra_crawl.records import CitationGraph, StoredPaper

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
# (name, GraphML type) of each node attribute, in column order.
NODE_FIELDS = (("title", "string"), ("year", "int"), ("doi", "string"), ("evidence", "string"))
EDGE_FIELDS = (("sources", "string"),)
# Characters XML 1.0 cannot carry (a title with a stray control character would make the whole
# file unreadable).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class GraphEdge:
    citing: int
    cited: int
    sources: tuple[str, ...]


def graph_edges(graph: CitationGraph) -> list[GraphEdge]:
    """One edge per (citing, cited) pair, with every source that lists it."""
    sources: dict[tuple[int, int], set[str]] = {}
    for edge in graph.edges:
        sources.setdefault((edge.citing, edge.cited), set()).add(edge.source)
    return [
        GraphEdge(citing, cited, tuple(sorted(named)))
        for (citing, cited), named in sorted(sources.items())
    ]


def node_values(paper: StoredPaper) -> dict[str, str]:
    """A paper's attributes as text; absent ones left out."""
    values = {name: getattr(paper, name) for name, _ in NODE_FIELDS}
    return {
        name: _NOT_XML.sub("", str(value)) for name, value in values.items() if value is not None
    }


def graphml(graph: CitationGraph, name: str) -> str:
    """The graph as a GraphML document named `name`."""
    ElementTree.register_namespace("", GRAPHML_NS)
    root = ElementTree.Element(f"{{{GRAPHML_NS}}}graphml")
    for scope, fields in (("node", NODE_FIELDS), ("edge", EDGE_FIELDS)):
        for field_name, kind in fields:
            ElementTree.SubElement(
                root,
                f"{{{GRAPHML_NS}}}key",
                {"id": field_name, "for": scope, "attr.name": field_name, "attr.type": kind},
            )
    body = ElementTree.SubElement(
        root, f"{{{GRAPHML_NS}}}graph", {"id": _NOT_XML.sub("", name), "edgedefault": "directed"}
    )
    for paper in sorted(graph.papers, key=lambda p: p.id):
        node = ElementTree.SubElement(body, f"{{{GRAPHML_NS}}}node", {"id": str(paper.id)})
        _data(node, node_values(paper).items())
    for edge in graph_edges(graph):
        element = ElementTree.SubElement(
            body, f"{{{GRAPHML_NS}}}edge", {"source": str(edge.citing), "target": str(edge.cited)}
        )
        _data(element, [("sources", ",".join(edge.sources))])
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _data(element: ElementTree.Element, values: Iterable[tuple[str, str]]) -> None:
    for key, value in values:
        ElementTree.SubElement(element, f"{{{GRAPHML_NS}}}data", {"key": key}).text = value


def csv_tables(graph: CitationGraph) -> tuple[str, str]:
    """The nodes table and the edges table, as CSV text."""
    nodes, edges = io.StringIO(), io.StringIO()
    node_writer = csv.writer(nodes, lineterminator="\n")
    node_writer.writerow(["id", *(name for name, _ in NODE_FIELDS)])
    for paper in sorted(graph.papers, key=lambda p: p.id):
        values = node_values(paper)
        node_writer.writerow([paper.id, *(values.get(name, "") for name, _ in NODE_FIELDS)])
    edge_writer = csv.writer(edges, lineterminator="\n")
    edge_writer.writerow(["source", "target", *(name for name, _ in EDGE_FIELDS)])
    for edge in graph_edges(graph):
        edge_writer.writerow([edge.citing, edge.cited, ",".join(edge.sources)])
    return nodes.getvalue(), edges.getvalue()
