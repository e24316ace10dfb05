"""Benchmarks: each prints figures that can be compared run to run (``make bench``)."""
