"""Measurement: the one speedup measurement of speculation against the target alone (speedup),
and the benchmark harness behind `python -m playground bench` (bench). Run statistics are
playground.metrics, beside the events they count."""
