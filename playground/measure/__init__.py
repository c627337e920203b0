"""Measurement: the one speedup measurement of speculation against the target alone (speedup), one run beside
the target alone as generate reports it (compared),
the K and temperature sweeps and Compare drafts of the Experiments tab and the CLI
(sweeps), and the benchmark harness behind `python -m playground bench` (bench), with what one pass
costs (pass_costs), its rows as people read them (report) and the machine they ran on (machine). Run
statistics are playground.metrics, beside the events they count."""
