"""Config for deep crawls of the simulator: the bundled files with every engine paginating.

Google, Bing and Brave have pagination switched off in the shipped policy (ten requests a day);
tests and benchmarks on the simulator need several pages of each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lyra_crawl.config import PARSERS_FILE, POLICY_FILE, load_config, read_bundled


def write_paging_config(folder: Path, **google: Any) -> Path:
    """Write that config to a new `folder`, with `google`'s fields changed in its engine spec."""
    folder.mkdir(parents=True)
    parsers = yaml.safe_load(read_bundled(PARSERS_FILE))
    parsers["engines"]["google"].update(google)
    policy = yaml.safe_load(read_bundled(POLICY_FILE))
    for engine in policy["engines"].values():
        engine["pagination_enabled"] = True
    (folder / PARSERS_FILE).write_text(yaml.safe_dump(parsers), encoding="utf-8")
    (folder / POLICY_FILE).write_text(yaml.safe_dump(policy), encoding="utf-8")
    load_config(folder)  # fail here, not in a crawl, if an edit made it invalid
    return folder
