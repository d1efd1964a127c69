"""The simulator's HTTP server: `/<engine>/<engine's own path>?<engine's own parameters>`.

Every request is logged as one JSON line (time, engine, method, path, params). Faults are
injected per engine and page: CAPTCHA pages (the engine's template, or a captured real challenge
page served as it is), HTTP status codes (429 with Retry-After), dropped connections, slow
answers, answers held until released, the engine's no-results page after a given page, results
in a layout no parse rule reads, bodies cut off halfway; and latency on every answer. Pages that
are not result pages (a token-bearing home page, a follow-up answer, the page a CAPTCHA redirect
lands on, the citation graph, landing pages, the publishers' robots.txt at `/robots.txt`) are
answered before any fault, unless the engine's are all to answer with an HTTP status
(`other_status`).
`/llm/v1/chat/completions` is an OpenAI-compatible chat endpoint rating passages, its faults
asked for by the model name (lyra_crawl.simulator.llm).
Every query a result page is asked for joins the PaperIndex, so its papers can then be looked
up by id.

A page held (`--hold-at`) waits until its release: `GET /_control/held?engine=E&page=N&count=C`
answers once C requests for it are waiting (408 after `timeout` seconds, default 30), and
`POST /_control/release?engine=E&page=N` lets them and every later request for it go. Tests wait
for these events instead of for time; control requests are not logged.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import parse_qsl, urlsplit

from lyra_crawl.simulator import llm
from lyra_crawl.simulator.corpus import CorpusShape, page_results, shape_for_query
from lyra_crawl.simulator.engines import SimEngine, SimPage, build_engines
from lyra_crawl.simulator.engines.landing import PUBLISHERS_ROBOTS_TXT
from lyra_crawl.simulator.engines.paper_ids import PaperIndex
from lyra_crawl.simulator.page_weight import with_chrome

PageKey = tuple[str, int]
LOGGED_HEADERS = ("x-api-key",)
CONTROL_PREFIX = "/_control/"
HELD_TIMEOUT_S = 30.0


class Hold:
    """A page's answers held until `release`: how many have come, and whether they may go."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.arrived = 0
        self.released = False

    def wait_for_release(self) -> None:
        with self._changed:
            self.arrived += 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.released)

    def wait_for_arrivals(self, count: int, timeout_s: float) -> bool:
        """Whether `count` requests have come within `timeout_s` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.arrived >= count, timeout_s)

    def release(self) -> None:
        with self._changed:
            self.released = True
            self._changed.notify_all()


@dataclass
class Faults:
    captcha_at: set[PageKey] = field(default_factory=set)
    # Engines whose CAPTCHA pages are a captured real challenge page: its bytes, served as 200.
    challenge_pages: dict[str, bytes] = field(default_factory=dict)
    status_at: dict[PageKey, int] = field(default_factory=dict)
    drop_at: set[PageKey] = field(default_factory=set)
    slow_at: dict[PageKey, int] = field(default_factory=dict)
    # Pages whose answers wait until a test releases them (`/_control/release`).
    hold_at: set[PageKey] = field(default_factory=set)
    empty_after: dict[str, int] = field(default_factory=dict)
    # Pages answered with the previous page's content: a quietly throttling engine.
    repeat_at: set[PageKey] = field(default_factory=set)
    # Pages cut off halfway (a truncated JSON or HTML body), as a dropped upstream stream does.
    malformed_at: set[PageKey] = field(default_factory=set)
    # Result pages whose result containers changed (an engine's redesign): layout_changed.
    layout_changed_at: set[PageKey] = field(default_factory=set)
    # Engines whose pages other than result pages (the citation graph's, follow-ups) all answer
    # with this HTTP status.
    other_status: dict[str, int] = field(default_factory=dict)
    # Engines whose database replicas lag this many seconds: a request that asks not to be
    # served then (MediaWiki's maxlag) gets the engine's lag answer instead of results.
    replica_lag_s: dict[str, int] = field(default_factory=dict)
    latency_ms: int = 0
    retry_after_s: int = 2


@dataclass
class SimulatorState:
    shape: CorpusShape
    faults: Faults
    log: IO[str] | None = None
    shape_by_query: bool = False
    google_js: bool = True
    # HTML results pages padded to about this many KB (0: as built), as heavy as real ones.
    page_kb: int = 0
    papers: PaperIndex = field(default_factory=PaperIndex)
    engines: dict[str, SimEngine] = field(init=False)
    holds: dict[PageKey, Hold] = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.engines = build_engines(google_js=self.google_js, papers=self.papers)
        self.holds = {key: Hold() for key in self.faults.hold_at}

    def shape_for(self, query: str) -> CorpusShape:
        return shape_for_query(query) if self.shape_by_query else self.shape

    def record(self, entry: dict[str, object]) -> None:
        if self.log is None:
            return
        line = json.dumps(entry, ensure_ascii=False)
        with self.lock:
            self.log.write(line + "\n")
            self.log.flush()


def make_handler(state: SimulatorState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle's algorithm on, the body waits
        # for the client's delayed ACK of the headers (~40 ms on Linux) on every keep-alive
        # request, which real engines' servers do not make a crawler wait.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass  # the JSON request log replaces the default stderr lines

        def do_GET(self) -> None:
            self._serve({})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            engine_name, _, rest = urlsplit(self.path).path.lstrip("/").partition("/")
            if engine_name == llm.PREFIX:
                state.record({"time": time.time(), "engine": llm.PREFIX, "path": "/" + rest})
                self._send(llm.chat_answer("/" + rest, body))
                return
            form = body.decode("utf-8", errors="replace")
            self._serve(dict(parse_qsl(form, keep_blank_values=True)))

        def _serve(self, form: dict[str, str]) -> None:
            parts = urlsplit(self.path)
            engine_name, _, rest = parts.path.lstrip("/").partition("/")
            params = dict(parse_qsl(parts.query, keep_blank_values=True))
            params.update(form)
            if parts.path.startswith(CONTROL_PREFIX):
                self._send(self._control(parts.path[len(CONTROL_PREFIX) :], params))
                return
            state.record(
                {
                    "time": time.time(),
                    "engine": engine_name,
                    "method": self.command,
                    "path": "/" + rest,
                    "params": params,
                    # Credentials sent as headers, so tests can see they travel (and only then).
                    "headers": {
                        name: self.headers[name] for name in LOGGED_HEADERS if name in self.headers
                    },
                    "user_agent": self.headers.get("User-Agent", ""),
                }
            )
            if parts.path == "/robots.txt":
                self._send(SimPage(200, PUBLISHERS_ROBOTS_TXT, "text/plain; charset=utf-8"))
                return
            engine = state.engines.get(engine_name)
            if engine is None:
                self._send(SimPage(404, f"unknown engine {engine_name!r}", "text/plain"))
                return
            page = engine.other_page("/" + rest, params)
            if page is not None:
                status = state.faults.other_status.get(engine_name)
                self._send(page if status is None else self._status_page(status), engine_name)
                return
            page_number = engine.page_number(params)
            if page_number is None:
                self._send(engine.refused(), engine_name)
                return
            self._answer(engine_name, engine, params, page_number)

        def _answer(
            self, engine_name: str, engine: SimEngine, params: dict[str, str], page_number: int
        ) -> None:
            faults = state.faults
            key = (engine_name, page_number)
            delay_ms = faults.slow_at.get(key, faults.latency_ms)
            if delay_ms:
                time.sleep(delay_ms / 1000)
            if key in state.holds:
                state.holds[key].wait_for_release()
            if key in faults.drop_at:
                self.close_connection = True
                self.connection.close()
                return
            query = engine.query(params)
            state.papers.remember(query)
            if key in faults.captcha_at:
                captured = faults.challenge_pages.get(engine_name)
                page = (
                    engine.captcha_page(query)
                    if captured is None
                    else SimPage(200, captured, "text/html")
                )
                self._send(page, engine_name)
                return
            if key in faults.status_at:
                self._send(self._status_page(faults.status_at[key]))
                return
            lag_s = faults.replica_lag_s.get(engine_name)
            lagged = engine.lagged_page(params, lag_s) if lag_s else None
            if lagged is not None:
                self._send(lagged)
                return
            limit = faults.empty_after.get(engine_name)
            empty = limit is not None and page_number > limit
            if key in faults.repeat_at:
                page_number -= 1
            results = (
                []
                if empty
                else page_results(query, page_number, engine.per_page, state.shape_for(query))
            )
            if key in faults.layout_changed_at and results:
                page = engine.changed_layout_page(query, page_number, results)
            else:
                page = engine.results_page(query, page_number, results)
            if state.page_kb and page.content_type.startswith("text/html"):
                page = replace(page, body=with_chrome(page.body, state.page_kb))
            if key in faults.malformed_at:
                page = replace(page, body=page.body[: len(page.body) // 2])
            self._send(page)

        def _control(self, action: str, params: dict[str, str]) -> SimPage:
            """A test's control of a held page: wait for its requests, or release them."""
            key = (params.get("engine", ""), int(params.get("page") or 0))
            hold = state.holds.get(key)
            if hold is None:
                return SimPage(404, f"no --hold-at {key[0]}:{key[1]}", "text/plain")
            if action == "release":
                hold.release()
                return SimPage(200, "released", "text/plain")
            if action == "held":
                count = int(params.get("count") or 1)
                timeout_s = float(params.get("timeout") or HELD_TIMEOUT_S)
                if hold.wait_for_arrivals(count, timeout_s):
                    return SimPage(200, f"{hold.arrived} held", "text/plain")
                return SimPage(408, f"{hold.arrived} of {count} held", "text/plain")
            return SimPage(404, f"unknown control {action!r}: held or release", "text/plain")

        def _status_page(self, status: int) -> SimPage:
            """An answer with only an HTTP status; a 429 says when to come back."""
            retry_after = str(state.faults.retry_after_s)
            headers = (("Retry-After", retry_after),) if status == 429 else ()
            return SimPage(status, f"HTTP {status}", "text/plain", headers)

        def _send(self, page: SimPage, engine_name: str = "") -> None:
            body = page.body if isinstance(page.body, bytes) else page.body.encode("utf-8")
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in page.headers:
                if name == "Location" and value.startswith("/"):
                    value = f"/{engine_name}{value}"  # the engine's own path, under its prefix
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def serve(host: str, port: int, state: SimulatorState) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), make_handler(state))
    server.daemon_threads = True
    return server


def open_log(path: str | None) -> IO[str] | None:
    if not path:
        return None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return open(path, "a", encoding="utf-8")
