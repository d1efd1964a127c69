"""Results pages as heavy as real ones: the simulator's `--page-kb`.

Real engines' results pages weigh 200–900 KB (the captured ones in tests/data/realworld), most
of it the page's chrome: menus, icons, inline styles and a state script. The simulator's own
pages weigh 4–14 KB, so a benchmark of parsing-bound work needs the rest. The chrome added here
is inert for every rule: no links, forms or headings, class names no rule looks for, and no
word a block or no-results marker reads.
"""

from __future__ import annotations

import json
from functools import lru_cache

_STYLE = ".lc-row{display:flex;gap:4px}.lc-ico{width:16px;height:16px}.lc-lbl{font:13px sans}\n"
_ICON = (
    '<svg class="lc-ico" viewBox="0 0 24 24" aria-hidden="true">'
    '<path d="M12 2a10 10 0 1 0 0 20 10 10 0 1 0 0-20zm0 4a6 6 0 1 1 0 12 6 6 0 1 1 0-12z"/>'
    "</svg>"
)


def _row(n: int) -> str:
    return (
        f'<li class="lc-row" data-v-5e1c2a7b="" data-slot="{n}">{_ICON}'
        f'<span class="lc-lbl" data-v-5e1c2a7b="">Option {n}</span>'
        f'<span class="lc-hint" hidden="">Setting {n} of the display menu</span></li>'
    )


@lru_cache(maxsize=8)
def page_chrome(kilobytes: int) -> str:
    """About `kilobytes` KB of menus, icons, styles and a state script, half markup, the rest
    style and script, as real results pages carry them."""
    target = kilobytes * 1024
    rows: list[str] = []
    size = 0
    n = 0
    while size < target // 2:
        rows.append(_row(n))
        size += len(rows[-1])
        n += 1
    state = {"menu": [{"slot": i, "label": f"Option {i}", "on": i % 3 == 0} for i in range(n)]}
    script = json.dumps(state, separators=(",", ":"))
    styles = _STYLE * max(1, (target - size - len(script)) // len(_STYLE))
    return (
        f'<div class="lc-chrome"><style>{styles}</style><ul class="lc-menu">{"".join(rows)}</ul>'
        f'<script type="application/json" class="lc-state">{script}</script></div>'
    )


def with_chrome(body: str, kilobytes: int) -> str:
    """`body` with the chrome before its closing </body> (after it when there is none)."""
    chrome = page_chrome(kilobytes)
    at = body.rfind("</body>")
    return body + chrome if at < 0 else body[:at] + chrome + body[at:]
