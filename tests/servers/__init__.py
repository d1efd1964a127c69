"""Real database servers for tests and benchmarks, started on free loopback ports in temporary
folders from Debian's packages (`make test` installs them when missing)."""
