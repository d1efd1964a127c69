"""Backends: where results are kept and what crawls coordinate through. Only this package
speaks SQL (or, later, Redis).

The protocols are in protocols.py, the records they exchange in records.py. `open_backends`
opens the ResultStore named by LYRA_DB_URL and the Coordinator named by LYRA_COORDINATION_URL
(default: the same SQLite file, then one connection serves both).
"""
