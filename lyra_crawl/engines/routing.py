"""Send engine requests to the bundled simulator instead of the real host. Pure.

With LYRA_SIMULATOR_URL set, `https://html.duckduckgo.com/html/?q=x` becomes
`<simulator>/duckduckgo/html/?q=x`: the real URL building runs, only the host changes.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def route_to_simulator(url: str, engine: str, simulator_url: str | None) -> str:
    if not simulator_url:
        return url
    parts = urlsplit(url)
    query = f"?{parts.query}" if parts.query else ""
    return f"{simulator_url.rstrip('/')}/{engine}{parts.path or '/'}{query}"


def engine_url(
    response_url: str, requested_url: str, engine: str, simulator_url: str | None
) -> str:
    """The URL as the real engine would have shown it: the inverse of route_to_simulator.

    Parsers read the host (Wikipedia's language) and the path (a redirect to /sorry/), so a
    simulated response is given the requested engine's host with the path it really ended on.
    """
    if not simulator_url:
        return response_url
    prefix = f"{simulator_url.rstrip('/')}/{engine}"
    if not response_url.startswith(prefix):
        return response_url
    parts = urlsplit(requested_url)
    return f"{parts.scheme}://{parts.netloc}{response_url[len(prefix) :]}"
