"""`scrapy parse-serp`: the documented, hyphenated name of the parse_serp command.

Scrapy names a project command after its module (scrapy.cmdline._get_commands_from_module) and
loads the modules of COMMANDS_MODULE with importlib, which accepts a hyphen in a file name that
an import statement could not spell. So this file gives the command its name straight from a
fresh clone, with no install step; `scrapy parse_serp` works too.
"""

from lyra_crawl.commands import parse_serp


class Command(parse_serp.Command):
    """parse_serp under the name parse-serp."""
