"""Run the benchmarks: `python -m benchmarks [NAME ...]` (NAME = bench module without `bench_`).

Each `benchmarks/bench_*.py` exposes `run(shared_dir) -> dict[str, float]`. Figures are printed
as a table and written to benchmarks/results.json as name -> number, so runs can be compared.
"""

from __future__ import annotations

import compileall
import importlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"


def shared_dir() -> Path:
    return Path(os.environ.get("LYRA_SHARED_DIR") or HERE.parent.parent / "shared")


def main(argv: list[str]) -> int:
    names = argv or sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    # The crawl processes the benchmarks start load the package from bytecode, as an installed
    # one does (pip compiles on install, Python on first import): without it, where
    # PYTHONDONTWRITEBYTECODE is set (this machine's environment), each process would compile
    # every module again, ~0.3 s of its start counted in the wall-time figures.
    compileall.compile_dir(HERE.parent / "lyra_crawl", quiet=1)
    figures: dict[str, float] = {}
    for name in names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        measured = module.run(shared_dir())
        for key, value in measured.items():
            print(f"   {key:<40} {value:>12.4g}", flush=True)
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
        figures.update(measured)
    previous = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.write_text(json.dumps({**previous, **figures}, indent=1, sort_keys=True) + "\n")
    print(f"\n{len(figures)} figures written to {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
