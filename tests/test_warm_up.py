"""The start-up warm-up of a GPU host (playground.ui.warm_up), run here on a CPU with compiled
passes asked for: the first visitor's run then compiles nothing, and a failing warm-up never stops
the page from starting."""
import dataclasses
import logging

import torch

from playground import session
from playground.presets import Settings
from playground.ui import inputs as page_inputs, live, warm_up


def test_a_run_after_the_warm_up_compiles_nothing(caplog, monkeypatch):
    """Neither a pass nor a round's programs (kept with the pair, which later runs are given again:
    each run had a pair of its own, and captured its rounds again)."""
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})  # rounds as programs, as on a GPU
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), compile=True, max_new_tokens=24)
    with caplog.at_level(logging.INFO, logger="playground.warm_up"):
        assert warm_up.warm_up(settings) > 0
    assert any("compiling the target's" in r.getMessage() for r in caplog.records)  # progress goes to the log
    graphs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    made = dict(session.load_pair(settings.target, settings.draft).programs)
    other = dataclasses.replace(settings, prompt=settings.prompt * 3, max_new_tokens=40)  # another prompt, same capacity
    told = []
    pair, ids, cfg, _ = live.prepare(other, progress=lambda fraction, message: told.append(message))
    result = session.run(pair, ids, cfg)
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs and result.token_ids
    assert made and pair.programs == made and not told  # nothing made again, nothing to wait for


def test_a_failing_warm_up_is_logged_and_the_page_starts(caplog):
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), target="no/such-model")
    with caplog.at_level(logging.INFO, logger="playground.warm_up"):
        assert warm_up.warm_up(settings) is None
    assert any("warming up failed" in r.getMessage() and "no/such-model" in r.exc_text for r in caplog.records)


def test_only_hosts_that_compile_by_default_warm_up(monkeypatch):
    assert not warm_up.wanted()  # a CPU host: the page starts at once
    monkeypatch.setattr(warm_up, "compiles_by_default", lambda: True)
    assert warm_up.wanted()
    monkeypatch.setenv("PLAYGROUND_WARM_UP", "0")
    assert not warm_up.wanted()
