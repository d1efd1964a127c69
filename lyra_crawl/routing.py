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
