"""Sweeps for the Experiments tab: K or temperature over a prompt set, speculative against the
target alone, measured side by side in one process (interleaved per prompt, after a warm-up)."""
import csv
import dataclasses
import io
from collections.abc import Iterator

from playground import session
from playground.config import SpecConfig
from playground.limits import MAX_SWEEP_VALUES, at_most
from playground.metrics import engine_seconds

COLUMNS = ["k", "temperature", "acceptance_rate", "tokens_per_target_pass", "tokens_per_s", "baseline_tokens_per_s",
           "speedup", "speedup_low", "speedup_high", "prompts", "tokens"]  # low/high: the per-prompt spread


def prompt_lines(text: str) -> list[str]:
    """One prompt per non-empty line, with the two characters \\n standing for a newline."""
    return [line.replace("\\n", "\n") for line in (text or "").splitlines() if line.strip()]


def parse_values(text: str, kind=float) -> list:
    """'1, 2,4' -> [1, 2, 4]; raises ValueError with the offending item."""
    values = []
    for item in text.replace(";", ",").split(","):
        if item.strip():
            try:
                values.append(kind(item.strip()))
            except ValueError:
                raise ValueError(f"'{item.strip()}' is not a number") from None
    if not values:
        raise ValueError("give at least one value")
    at_most(len(values), MAX_SWEEP_VALUES, "the number of values")
    return values


def _timed(pair, ids, cfg, speculative, constraint) -> tuple[float, dict]:
    guide = session.new_guide(constraint, cfg)
    events = list(session.generate(pair, ids, cfg, speculative, guide))
    seconds = engine_seconds(events)
    return seconds, session.collect(pair, events, seconds, constraint, guide).stats


def _side_by_side(pair, ids, cfg, constraint, speculative_first: bool):
    """-> (speculative, target alone) (seconds, stats), run one right after the other."""
    first = _timed(pair, ids, cfg, speculative_first, constraint)
    second = _timed(pair, ids, cfg, not speculative_first, constraint)
    return (first, second) if speculative_first else (second, first)


def _with(cfg: SpecConfig, axis: str, value) -> SpecConfig:
    if axis == "k":
        return dataclasses.replace(cfg, k=int(value))
    return dataclasses.replace(cfg, sampling=dataclasses.replace(cfg.sampling, temperature=float(value)))


def sweep(pair, prompts: list[list[int]], cfg: SpecConfig, axis: str, values: list,
          constraint=None) -> Iterator[list[dict]]:
    """Yield the table so far after each value; every row aggregates all prompts."""
    for ids in prompts[:1]:  # warm-up, so one-time costs are in neither column
        _timed(pair, ids, dataclasses.replace(cfg, max_new_tokens=4), True, constraint)
    rows = []
    for value in values:
        run_cfg = _with(cfg, axis, value)
        totals = _zero_totals()
        for i, ids in enumerate(prompts):  # the target alone is re-measured beside every point, order alternating
            _add(totals, *_side_by_side(pair, ids, run_cfg, constraint, speculative_first=i % 2 == 0))
        rows.append(_row(run_cfg, totals, len(prompts)))
        yield rows


def _zero_totals() -> dict:
    return {"spec_s": 0.0, "base_s": 0.0, "tokens": 0, "base_tokens": 0, "proposed": 0, "accepted": 0, "passes": 0,
            "ratios": []}


def _add(totals: dict, spec: tuple[float, dict], base: tuple[float, dict]) -> None:
    """Add one prompt's speculative and target-only (seconds, stats) to the running totals."""
    (spec_s, stats), (base_s, base_stats) = spec, base
    totals["spec_s"] += spec_s
    totals["base_s"] += base_s
    totals["tokens"] += stats["generated_tokens"]
    totals["base_tokens"] += base_stats["generated_tokens"]
    totals["proposed"] += stats["proposed"]
    totals["accepted"] += stats["accepted"]
    totals["passes"] += stats["target_passes"]
    if spec_s and base_s and base_stats["generated_tokens"]:
        totals["ratios"].append((stats["generated_tokens"] / spec_s) / (base_stats["generated_tokens"] / base_s))


def _row(cfg: SpecConfig, t: dict, n_prompts: int) -> dict:
    spec_rate = t["tokens"] / t["spec_s"] if t["spec_s"] else 0.0
    base_rate = t["base_tokens"] / t["base_s"] if t["base_s"] else 0.0
    return {"k": cfg.k, "temperature": cfg.sampling.temperature,
            "acceptance_rate": t["accepted"] / t["proposed"] if t["proposed"] else 0.0,
            "tokens_per_target_pass": t["tokens"] / t["passes"] if t["passes"] else 0.0,
            "tokens_per_s": spec_rate, "baseline_tokens_per_s": base_rate,
            "speedup": spec_rate / base_rate if base_rate else 0.0, "speedup_low": min(t["ratios"], default=0.0),
            "speedup_high": max(t["ratios"], default=0.0), "prompts": n_prompts, "tokens": t["tokens"]}


def to_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in row.items()})
    return out.getvalue()


# Draft comparison: ways of drafting for one target, from the draft model of the current settings.
VARIANTS = {
    "draft model": ("{draft}", "fixed"),
    "prompt lookup": ("ngram", "fixed"),
    "cascade (lookup -> draft)": ("ngram+{draft}", "fixed"),
    "adaptive: schedule": ("{draft}", "schedule"),
    "adaptive: confidence": ("{draft}", "confidence"),
}
COMPARE_COLUMNS = ["variant", "speedup", "acceptance_rate", "tokens_per_target_pass", "tokens_per_s",
                   "baseline_tokens_per_s", "draft", "policy"]  # the result first: a narrow screen still shows it


def compare_drafts(target: str, draft: str, prompts: list[str], cfg: SpecConfig, variants: list[str],
                   encode, progress=None) -> Iterator[list[dict]]:
    """One row per variant, all on the same prompts; the target alone is re-measured beside every
    variant and prompt, in alternating order, so a change of load hits both columns alike.
    `encode(pair, text)` turns a prompt into ids; `draft` is a model id (a cascade's or not)."""
    model = draft.removeprefix("ngram+")
    rows = []
    for name in variants:
        draft_id, policy = (v.format(draft=model) for v in VARIANTS[name])
        pair = session.load_pair(target, draft_id, progress=progress)
        run_cfg = dataclasses.replace(cfg, policy=policy)
        totals = _zero_totals()
        for i, text in enumerate(prompts):
            ids = encode(pair, text)
            for speculative in (True, False):  # warm-up: one-time costs in neither column
                _timed(pair, ids, dataclasses.replace(run_cfg, max_new_tokens=4), speculative, None)
            _add(totals, *_side_by_side(pair, ids, run_cfg, None, speculative_first=i % 2 == 0))
        rows.append({"variant": name, "draft": draft_id, "policy": policy, **_row(run_cfg, totals, len(prompts))})
        yield rows
