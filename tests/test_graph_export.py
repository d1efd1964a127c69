"""`scrapy export-graph`: a task's citation graph written as GraphML and as CSV tables, read back
with networkx (and each the same graph as the store's); titles with markup characters and stray
control characters survive the round trip."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import networkx as nx
import pytest_twisted

from lyra_crawl.records import CitationEdge, CitationGraph, StoredPaper
from lyra_crawl.reports.graph_export import csv_tables, graphml
from tests.conftest import query_db, run_scrapy, scrapy_env
from tests.test_citations_e2e import SMALL, graph_crawl


def paper(paper_id: int, title: str, **fields: object) -> StoredPaper:
    return StoredPaper(
        id=paper_id, title=title, normalized_title=title.lower(), attribution="api_only", **fields
    )


def csv_graph(nodes_text: str, edges_text: str) -> nx.DiGraph:
    """A graph from the two tables, as a reader of the CSV files would build it."""
    graph = nx.DiGraph()
    for row in csv.DictReader(io.StringIO(nodes_text)):
        values = {name: value for name, value in row.items() if name != "id" and value}
        if "year" in values:
            values["year"] = int(values["year"])
        graph.add_node(row["id"], **values)
    for row in csv.DictReader(io.StringIO(edges_text)):
        graph.add_edge(row["source"], row["target"], sources=row["sources"])
    return graph


def test_graphml_and_csv_are_the_same_directed_graph_with_every_attribute() -> None:
    graph = CitationGraph(
        papers=[
            paper(
                1, "Floods & <surges>: \x0ba review", year=2020, doi="10.1/a", evidence="abstract"
            ),
            paper(2, 'Rivers, "deltas" and tides', evidence="fetch"),
            paper(3, "Sediment", year=1999),
        ],
        edges=[
            CitationEdge(1, 2, "semantic_scholar"),
            CitationEdge(1, 2, "openalex"),
            CitationEdge(3, 1, "openalex"),
        ],
    )

    read = nx.read_graphml(io.StringIO(graphml(graph, "task/1")))

    assert isinstance(read, nx.DiGraph) and not read.is_multigraph()
    assert dict(read.nodes(data=True)) == {
        "1": {
            "title": "Floods & <surges>: a review",
            "year": 2020,
            "doi": "10.1/a",
            "evidence": "abstract",
        },
        "2": {"title": 'Rivers, "deltas" and tides', "evidence": "fetch"},
        "3": {"title": "Sediment", "year": 1999},
    }
    assert sorted(read.edges(data=True)) == [
        ("1", "2", {"sources": "openalex,semantic_scholar"}),
        ("3", "1", {"sources": "openalex"}),
    ]
    from_csv = csv_graph(*csv_tables(graph))
    assert dict(from_csv.nodes(data=True)) == dict(read.nodes(data=True))
    assert sorted(from_csv.edges(data=True)) == sorted(read.edges(data=True))


@pytest_twisted.ensureDeferred
async def test_export_graph_writes_the_tasks_graph_as_the_store_has_it(
    start_simulator, db_path, tmp_path: Path
):
    simulator = start_simulator(*SMALL)
    await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=2)
    env = scrapy_env(simulator, db_path)
    target = tmp_path / "coasts.graphml"

    done = run_scrapy("export-graph", "--task", "coasts", "-o", str(target), env=env)
    tables = run_scrapy(
        "export-graph",
        "--task",
        "coasts",
        "--format",
        "csv",
        "-o",
        str(tmp_path / "g.csv"),
        env=env,
    )

    assert done.returncode == 0, done.stderr
    assert tables.returncode == 0, tables.stderr
    graph = nx.read_graphml(target)
    edges = query_db(db_path, "SELECT DISTINCT citing_paper_id, cited_paper_id FROM citations")
    assert set(graph.edges) == {(str(e[0]), str(e[1])) for e in edges} and graph.edges
    found = query_db(db_path, "SELECT DISTINCT paper_id FROM serp_items")
    ends = {str(end) for edge in edges for end in edge}
    assert set(graph.nodes) == {str(row["paper_id"]) for row in found} | ends
    for node, values in graph.nodes(data=True):
        (row,) = query_db(db_path, "SELECT * FROM papers WHERE id = ?", (int(node),))
        assert values["title"] == row["title"] and values.get("year") == row["year"]
        assert values.get("doi") == row["doi"] and values["evidence"] == row["evidence"]
    assert f"{graph.number_of_nodes()} papers, {graph.number_of_edges()} citations" in done.stdout
    from_csv = csv_graph(
        (tmp_path / "g-nodes.csv").read_text(), (tmp_path / "g-edges.csv").read_text()
    )
    assert dict(from_csv.nodes(data=True)) == dict(graph.nodes(data=True))
    assert sorted(from_csv.edges(data=True)) == sorted(graph.edges(data=True))

    unknown = run_scrapy("export-graph", "--task", "nope", env=env)
    assert unknown.returncode == 1 and "task 'nope' has no query" in unknown.stderr
