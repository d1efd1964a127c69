"""Command line of the simulator: `python -m lyra_crawl.simulator --port 0 [options]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from lyra_crawl.simulator.corpus import CorpusShape
from lyra_crawl.simulator.engines import ENGINE_NAMES
from lyra_crawl.simulator.layouts import result_xpaths
from lyra_crawl.simulator.server import Faults, SimulatorState, open_log, serve


def _engine_numbers(shape: str) -> Callable[[str], tuple[str, ...]]:
    """The type of an option shaped `shape` (its metavar, ENGINE then numbers: ENGINE:PAGE,
    ENGINE:PAGE:MS, ENGINE:SECONDS): the engine and its numbers, as text."""

    def parse(value: str) -> tuple[str, ...]:
        parts = value.split(":")
        if (
            len(parts) != shape.count(":") + 1
            or parts[0] not in ENGINE_NAMES
            or not all(p.isdigit() for p in parts[1:])
        ):
            raise argparse.ArgumentTypeError(
                f"expected {shape} with ENGINE one of {', '.join(ENGINE_NAMES)} (got {value!r})"
            )
        return tuple(parts)

    return parse


_engine_page = _engine_numbers("ENGINE:PAGE")


def _html_engine_page(value: str) -> tuple[str, ...]:
    engine, page = _engine_page(value)
    if not result_xpaths(engine):
        html_engines = ", ".join(name for name in ENGINE_NAMES if result_xpaths(name))
        raise argparse.ArgumentTypeError(
            f"{engine} answers in JSON or XML, which has no layout to change: use one of "
            f"{html_engines} (got {value!r})"
        )
    return engine, page


def _engine_file(value: str) -> tuple[str, bytes]:
    """ENGINE=FILE: the engine and the bytes of the file, read now (a missing file stops here)."""
    engine, _, path = value.partition("=")
    if engine not in ENGINE_NAMES or not path:
        raise argparse.ArgumentTypeError(
            f"expected ENGINE=FILE with ENGINE one of {', '.join(ENGINE_NAMES)} (got {value!r})"
        )
    try:
        return engine, Path(path).read_bytes()
    except OSError as exc:
        raise argparse.ArgumentTypeError(
            f"cannot read {path!r} ({exc.strerror}): give a saved page"
        ) from None


def _share(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (got {value})")
    return number


def _engine_fault(
    parser: argparse.ArgumentParser, flag: str, help_text: str, shape: str = "ENGINE:PAGE"
) -> None:
    """A repeatable fault option shaped `shape` (ENGINE then numbers)."""
    parser.add_argument(
        flag,
        action="append",
        default=[],
        type=_engine_numbers(shape),
        metavar=shape,
        help=help_text,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lyra_crawl.simulator", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--request-log", help="append one JSON line per request to this file")
    _engine_fault(parser, "--captcha-at", "answer that page with a CAPTCHA page")
    parser.add_argument(
        "--challenge-page",
        action="append",
        default=[],
        type=_engine_file,
        metavar="ENGINE=FILE",
        help="answer the engine's --captcha-at pages with FILE as it is, with HTTP 200: a "
        "challenge page captured from the real engine (Brave serves its proof-of-work page so)",
    )
    _engine_fault(
        parser,
        "--status-at",
        "answer that page with an HTTP status (429 carries Retry-After)",
        "ENGINE:PAGE:CODE",
    )
    _engine_fault(parser, "--drop-at", "close the connection without an answer")
    _engine_fault(
        parser, "--empty-after", "pages after PAGE are the engine's no-results page (0: all)"
    )
    _engine_fault(parser, "--repeat-at", "answer that page with the page before it (a soft block)")
    _engine_fault(parser, "--malformed-at", "cut that page's body off halfway (truncated JSON)")
    parser.add_argument(
        "--layout-changed-at",
        action="append",
        default=[],
        type=_html_engine_page,
        metavar="ENGINE:PAGE",
        help="answer that page's results in a layout no rule of the bundled "
        "search_parsers.yaml reads (HTML engines)",
    )
    parser.add_argument(
        "--google-js",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Google pages insert their results with JavaScript, as the real engine does "
        "(--no-google-js: results in the raw HTML)",
    )
    _engine_fault(
        parser,
        "--slow-at",
        "answer that page after MS milliseconds (instead of --latency-ms)",
        "ENGINE:PAGE:MS",
    )
    _engine_fault(
        parser,
        "--hold-at",
        "hold that page's answers until POST /_control/release?engine=ENGINE&page=PAGE "
        "(GET /_control/held?engine=ENGINE&page=PAGE answers once one waits)",
    )
    _engine_fault(
        parser,
        "--other-status",
        "answer the engine's pages other than result pages (its citation graph, follow-ups) "
        "with an HTTP status",
        "ENGINE:CODE",
    )
    _engine_fault(
        parser,
        "--replica-lag",
        "the engine's database replicas lag SECONDS: MediaWiki's APIs answer a request "
        "whose maxlag is smaller with their maxlag error",
        "ENGINE:SECONDS",
    )
    parser.add_argument(
        "--page-kb",
        type=int,
        default=0,
        metavar="KB",
        help="pad every HTML results page to about KB kilobytes with inert menus, icons, styles "
        "and a state script, as real engines' pages carry them (parse-heavy pages)",
    )
    parser.add_argument("--latency-ms", type=int, default=0)
    parser.add_argument("--retry-after", type=int, default=2, help="Retry-After seconds on 429")
    parser.add_argument(
        "--overlap",
        type=_share,
        default=0.0,
        help="share of each later page's URLs repeated from earlier pages",
    )
    parser.add_argument(
        "--overlap-step",
        type=_share,
        default=0.0,
        help="overlap added per page after page 2 (overlap rises with depth)",
    )
    parser.add_argument(
        "--shape-by-query",
        action="store_true",
        help="give each query its own seeded overlap, drift and length",
    )
    parser.add_argument(
        "--drift",
        type=_share,
        default=0.0,
        help="share of on-topic results lost per page after the first",
    )
    parser.add_argument(
        "--results-total",
        type=int,
        default=200,
        help="results a query has in all; later pages are empty",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    faults = Faults(
        captcha_at={(e, int(p)) for e, p in args.captcha_at},
        challenge_pages=dict(args.challenge_page),
        status_at={(e, int(p)): int(c) for e, p, c in args.status_at},
        drop_at={(e, int(p)) for e, p in args.drop_at},
        slow_at={(e, int(p)): int(ms) for e, p, ms in args.slow_at},
        hold_at={(e, int(p)) for e, p in args.hold_at},
        empty_after={e: int(p) for e, p in args.empty_after},
        repeat_at={(e, int(p)) for e, p in args.repeat_at},
        malformed_at={(e, int(p)) for e, p in args.malformed_at},
        layout_changed_at={(e, int(p)) for e, p in args.layout_changed_at},
        other_status={e: int(code) for e, code in args.other_status},
        replica_lag_s={e: int(seconds) for e, seconds in args.replica_lag},
        latency_ms=args.latency_ms,
        retry_after_s=args.retry_after,
    )
    shape = CorpusShape(
        results_total=args.results_total,
        overlap=args.overlap,
        overlap_step=args.overlap_step,
        drift=args.drift,
    )
    state = SimulatorState(
        shape=shape,
        faults=faults,
        log=open_log(args.request_log),
        shape_by_query=args.shape_by_query,
        google_js=args.google_js,
        page_kb=args.page_kb,
    )
    server = serve(args.host, args.port, state)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
