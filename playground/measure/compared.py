"""One run as the CLI's generate reports it, for a library caller too: the run, beside it the target alone,
interleaved and measured (playground.measure.speedup), and more samples of other seeds."""
import dataclasses
import threading

from playground import session
from playground.measure import speedup
from playground.metrics import comparison_json


def compared_run(pair, prompt_ids: list[int], cfg, baseline: bool = True, num_samples: int = 1, constraint=None,
                 stop: threading.Event | None = None, progress=None) -> dict:
    """The run (with `baseline`, beside the target alone, measured: `speedup`, its interval in `speedup_measure`,
    `identical_to_baseline`) as JSON, what `generate --json` prints (but its `settings` and `note`); `num_samples` > 1:
    seeds cfg.seed.. each its `samples` entry. Once `stop` is set (the CLI's Ctrl-C) the run ends at its next round
    with what came, the measurement with the estimate before the block it cut short, and no further sample starts.
    `progress(fraction, message)` is told while passes compile (cfg.compile). A stop before the first run wrote
    anything raises KeyboardInterrupt (there is nothing to report)."""
    prompt_ids = session.as_token_ids(prompt_ids)
    stop = stop or threading.Event()
    compile_s = session.compile_graphs(pair, len(prompt_ids), cfg, progress, constrained=constraint is not None)
    if baseline:  # the target alone interleaved beside the run, measured by playground.measure.speedup
        make = speedup.engine_block(pair, [prompt_ids], cfg, constraint, should_stop=stop.is_set, whole_base=True)  # (its
        first = make()  # text in the JSON)
        if not first.spec_runs:  # Ctrl-C in the warm-up: nothing written yet
            raise KeyboardInterrupt
        events = first.spec_runs[0]
        result = session.collect(pair, events, constraint=constraint, guide=first.guides[0], prompt_ids=prompt_ids)
    else:
        result = session.run(pair, prompt_ids, cfg, constraint=constraint, should_stop=stop.is_set)
    out = result.as_json()
    if cfg.compile:
        out["compile_s"] = compile_s
        out["compile_note"] = session.compile_fallback(pair, cfg, prompt_len=len(prompt_ids))
    if baseline:
        base = session.collect(pair, first.base_runs[0], prompt_ids=prompt_ids)
        measured = speedup.measure(make, [first], speedup.least_blocks(cfg), should_stop=stop.is_set)  # (Ctrl-C: the estimate before the block it cut)
        out |= comparison_json(result, base, measured, cfg.sampling.greedy,  # as the page's download
                               form=session.baseline_form(pair, cfg, first.base_runs[0]))
    if num_samples > 1:  # the first is the run above; each its seed, text and tokens
        runs = [result]
        for i in range(1, num_samples):
            if stop.is_set():
                break
            runs.append(session.run(pair, prompt_ids, dataclasses.replace(cfg, seed=cfg.seed + i), constraint=constraint,
                                    should_stop=stop.is_set))
        out["samples"] = [{"seed": cfg.seed + i, "text": run.text, "token_ids": run.token_ids, "stats": run.stats,
                           "finish_reason": run.finish_reason, "valid": run.valid,  # (stats: each draw's acceptance,
                           "validation_error": run.validation_error, "open_end": run.open_end}  # what a sampling study
                          for i, run in enumerate(runs)]  # reads; the first's alone was given, a scripting review)
    return out
