"""The project's `scrapy` commands (COMMANDS_MODULE).

Scrapy names a project command after its module (scrapy.cmdline._get_commands_from_module) and
loads these modules with importlib, which accepts the hyphen of a documented name such as
`parse-serp` that an import statement could not spell. So each command lives in the one module
named as users type it, and a module without a command class (`page_outcome.py`) lists nothing.
"""
