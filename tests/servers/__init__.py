"""Real servers the backends' tests run against, started on loopback in temporary folders."""
