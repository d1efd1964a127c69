"""What every lyra command does as it starts; a module without a command (Scrapy lists nothing)."""

from __future__ import annotations

import argparse
import gc


class FreezeAtStart:
    """A command mixin: what the process has loaded when its command starts (Scrapy, every
    command module, the backends' statements, the config's schemas) lives as long as the
    process, so it is moved out of the cyclic collector's reach (`gc.freeze`, as the crawl
    session does again once its spider opens). Left in, every full pass of the collector
    scanned it all again: about a fifth of the CPU of a short command (export-papers, report,
    select), a twentieth of a crawl's start."""

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)  # ScrapyCommand's, next in the command's classes
        gc.freeze()
