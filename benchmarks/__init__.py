"""`make bench`: every benchmarks/bench_*.py measured side by side, figures in results.json."""
