"""`scrapy check-engines`: the documented, hyphenated name of the check_engines command.

Scrapy names a command after its module and loads COMMANDS_MODULE's modules with importlib,
which accepts a hyphen an import statement could not spell (see parse-serp.py); `scrapy
check_engines` works too.
"""

from lyra_crawl.commands import check_engines


class Command(check_engines.Command):
    """check_engines under the name check-engines."""
