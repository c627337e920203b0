"""`python -m playground bench`: this engine against its own target alone, transformers' plain
generate, assisted generation and prompt lookup, in one process, after a warm-up. Every speedup is
measured by playground.measure.speedup against the engine's target alone (the baseline the page and the
CLI use), with its 95% interval, or left out with the reason when it cannot be told; rows are
printed (and with --out written) as each is measured.

Rows (one per method, k, temperature): tokens_per_s, speedup and speedup_range, measurements (the
interleaved blocks it took), note, acceptance_rate, tokens_per_target_pass, efficiency (engine rows:
the time predicted from measured per-pass costs and the run's own rounds, over the measured time;
1.0 means no overhead outside model passes) and identical (greedy rows: the same tokens as the
target alone on every prompt). `target` is the engine's target alone, `hf-target` transformers'
plain generate.

With `compiled`, an `engine-compiled` row runs the engine on static caches with compiled passes
(playground.engine.static), against the compiled target alone; its graphs are compiled before any
timing, and its efficiency uses pass costs measured with the compiled passes."""
import contextlib
import dataclasses
import json
import pathlib
import statistics
import time

import torch

from playground import session
from playground.config import SpecConfig
from playground.engine.runner import ModelRunner
from playground.engine.static import StaticRunner
from playground.events import Round
from playground.metrics import summarize
from playground.models.loading import NGRAM, Pair
from playground.measure.speedup import Block, Timed, interleave, measure, timed

METHODS = ("target", "engine", "hf-target", "hf-assisted", "hf-prompt-lookup", "engine-prompt-lookup")
COMPILED = "engine-compiled"


@dataclasses.dataclass(slots=True)
class Sample:
    """One method on one prompt."""
    ids: list[int]
    seconds: float
    target_passes: int
    proposed: int
    accepted: int
    rounds: list = dataclasses.field(default_factory=list)  # engine rounds, for the efficiency


class PassCounter:
    """Counts forward calls of a model (transformers' generate exposes no pass count)."""

    def __init__(self, model):
        self.calls = 0
        self.handle = model.register_forward_pre_hook(self._count) if model is not None else None

    def _count(self, *_):
        self.calls += 1

    def close(self):
        if self.handle is not None:
            self.handle.remove()


def _hf_kwargs(pair: Pair, cfg: SpecConfig) -> dict:
    """generate() settings equal to the engine's. Every setting not passed is filled from the model's
    generation_config.json (Qwen2.5-Instruct ships repetition_penalty 1.05 and top_k 20), so the
    ones that change the distribution are passed explicitly; top_k 0 means no top-k."""
    s = cfg.sampling
    sampling = dict(do_sample=True, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k) \
        if not s.greedy else dict(do_sample=False)
    eos = sorted(pair.eos_ids)
    return dict(max_new_tokens=cfg.max_new_tokens, eos_token_id=eos, pad_token_id=eos[0] if eos else 0,
                repetition_penalty=1.0, **sampling)


@contextlib.contextmanager
def constant_assistant(draft, k: int):
    """The draft as transformers' assistant proposing exactly k tokens a round (no schedule, no
    confidence stop), its own generation_config restored afterwards (the model is cached)."""
    config = draft.generation_config
    saved = (config.num_assistant_tokens, config.num_assistant_tokens_schedule, config.assistant_confidence_threshold)
    config.num_assistant_tokens, config.num_assistant_tokens_schedule = k, "constant"
    config.assistant_confidence_threshold = 0.0
    try:
        yield draft
    finally:
        (config.num_assistant_tokens, config.num_assistant_tokens_schedule,
         config.assistant_confidence_threshold) = saved


@torch.inference_mode()
def run_hf(pair: Pair, ids: list[int], cfg: SpecConfig, method: str) -> Sample:
    """transformers' generate: plain, with the draft as assistant, or with prompt lookup."""
    torch.manual_seed(cfg.seed)
    inputs = torch.tensor([ids], device=pair.device)
    extra: dict = {}
    if method == "hf-prompt-lookup":
        extra = dict(prompt_lookup_num_tokens=cfg.k)
    target_calls, draft_calls = PassCounter(pair.target), PassCounter(pair.draft if "assisted" in method else None)
    with constant_assistant(pair.draft, cfg.k) if method == "hf-assisted" else contextlib.nullcontext():
        if method == "hf-assisted":
            extra = dict(assistant_model=pair.draft)
        start = time.perf_counter()
        out = pair.target.generate(inputs, attention_mask=torch.ones_like(inputs), **_hf_kwargs(pair, cfg), **extra)
        seconds = time.perf_counter() - start
    target_calls.close(), draft_calls.close()
    new = out[0, len(ids):].tolist()
    new = new[: next((i + 1 for i, t in enumerate(new) if t in pair.eos_ids), len(new))]
    rounds = target_calls.calls  # assisted: every target call verifies a candidate
    proposed = draft_calls.calls if method == "hf-assisted" else 0
    return Sample(new, seconds, target_calls.calls, proposed, max(0, len(new) - rounds) if method != "hf-target" else 0)


def engine_sample(events: list) -> Sample:
    stats = summarize(events, 0.0)
    ids = [t.token_id for e in events if isinstance(e, Round) for t in e.committed]
    return Sample(ids, timed(events).seconds, stats["target_passes"], stats["proposed"], stats["accepted"],
                  [e for e in events if isinstance(e, Round)])


ENGINE = ("engine", COMPILED, "engine-prompt-lookup")


def engine_setup(method: str, pairs: dict, cfg: SpecConfig):
    """-> (pair, settings) an engine method runs with (the target alone beside it uses the same)."""
    pair = pairs["ngram"] if method == "engine-prompt-lookup" else pairs["draft"]
    return pair, dataclasses.replace(cfg, compile=method == COMPILED)


def run_method(method: str, pairs: dict, ids: list[int], cfg: SpecConfig) -> Sample:
    """One run of a method alone (warm-ups): its Sample."""
    if method == "target":
        return engine_sample(list(session.generate(pairs["draft"], ids, cfg, speculative=False)))
    if method in ENGINE:
        pair, run_cfg = engine_setup(method, pairs, cfg)
        return engine_sample(list(session.generate(pair, ids, run_cfg)))
    return run_hf(pairs["draft"], ids, cfg, method)


def available_methods(pair: Pair, cfg: SpecConfig, log=print, compiled: bool = False) -> list[str]:
    methods = [m for m in METHODS if pair.draft is not None or m not in ("engine", "hf-assisted")]
    if compiled and pair.draft is not None:
        why = session.compile_fallback(pair, dataclasses.replace(cfg, compile=True))
        if pair.feature_draft:
            log(f"(no engine-compiled row: {why})")
        else:
            if why:
                log(f"(engine-compiled, eager where it cannot compile: {why})")
            methods.insert(methods.index("engine") + 1, COMPILED)
    if "hf-assisted" in methods and pair.draft_vocab_map is not None:
        log("(no hf-assisted row: transformers cannot use a draft with a reduced vocabulary)")
        methods.remove("hf-assisted")
    if "hf-assisted" in methods and not cfg.sampling.greedy and _logits_widths_differ(pair):
        log("(no hf-assisted row when sampling: transformers subtracts the two models' distributions and "
            "these logits widths differ)")
        methods.remove("hf-assisted")
    return methods


def _logits_widths_differ(pair: Pair) -> bool:
    return pair.target.get_output_embeddings().weight.shape[0] != pair.draft.get_output_embeddings().weight.shape[0]


def bench_setting(pairs: dict, prompts: list[list[int]], cfg: SpecConfig, repeat: int, methods: list[str],
                  pass_costs: dict | None = None, on_row=None) -> list[dict]:
    """All methods for one (k, temperature): each measured against the engine's target alone by
    playground.measure.speedup (interleaved round by round for engine methods, back to back in alternating
    order for transformers' opaque runs), at least `repeat` blocks (2 for opaque runs, whose
    rounds cannot be resampled); a row per method, each handed to `on_row` once measured."""
    for method in methods:  # warm-up: one-time costs stay out of every column
        run_method(method, pairs, prompts[0], dataclasses.replace(cfg, max_new_tokens=8))
    rows, alone = [], []  # alone: the eager target alone's runs beside the other methods (its own row)
    for method in methods[1:]:
        seen: list[list[tuple[Sample, Sample]]] = []
        opaque = method not in ENGINE
        result = measure(lambda: _block(method, pairs, prompts, cfg, seen), min_blocks=max(repeat, 2 if opaque else 1))
        if method != COMPILED:
            alone += [base for block in seen for _, base in block]
        rows.append(_row(method, cfg, result, seen[-1], pass_costs))
        if on_row:
            on_row(rows[-1])
    rows.insert(0, _target_row(cfg, alone))
    if on_row:
        on_row(rows[0])
    return rows


def _block(method: str, pairs: dict, prompts: list[list[int]], cfg: SpecConfig, seen: list) -> Block:
    """One block: every prompt's run of `method` beside a run of the engine's target alone."""
    block, samples = Block(Timed(), Timed()), []
    for i, ids in enumerate(prompts):
        if method in ENGINE:
            pair, run_cfg = engine_setup(method, pairs, cfg)
            spec, base = session.generate(pair, ids, run_cfg), session.generate(pair, ids, run_cfg, speculative=False)
            sides = {"spec": [], "base": []}
            for side, event in interleave(spec, base):
                sides[side].append(event)
            block.add(sides["spec"], sides["base"])
            samples.append((engine_sample(sides["spec"]), engine_sample(sides["base"])))
            continue
        first_hf = i % 2 == 0  # alternate the order, so a drift in load favours neither
        hf = run_hf(pairs["draft"], ids, cfg, method) if first_hf else None
        base_events = list(session.generate(pairs["draft"], ids, cfg, speculative=False))
        hf = hf or run_hf(pairs["draft"], ids, cfg, method)
        block.spec.parts.append((hf.seconds, len(hf.ids)))
        block.base.parts += timed(base_events).parts
        samples.append((hf, engine_sample(base_events)))
    seen.append(samples)
    return block


def _row(method: str, cfg: SpecConfig, result, samples: list[tuple[Sample, Sample]], pass_costs: dict | None) -> dict:
    """A method's row: the measured speedup, and counts from its last block's runs."""
    mine = [m for m, _ in samples]
    tokens = sum(len(s.ids) for s in mine)
    proposed = sum(s.proposed for s in mine)
    row = {"method": method, "k": cfg.k, "temperature": cfg.sampling.temperature,
           "tokens_per_s": result.spec_tokens_per_s, "speedup": result.speedup,
           "speedup_range": [result.low, result.high], "measurements": result.blocks, "note": result.reason,
           "acceptance_rate": sum(s.accepted for s in mine) / proposed if proposed else None,
           "tokens_per_target_pass": tokens / max(1, sum(s.target_passes for s in mine)),
           "seconds": sum(s.seconds for s in mine), "tokens": tokens}
    costs = (pass_costs or {}).get("compiled") if method == COMPILED else pass_costs
    if method in ENGINE and costs is not None:
        row["efficiency"] = predicted_seconds(mine, costs, method) / (row["seconds"] or 1.0)
    if cfg.sampling.greedy:
        row["identical"] = all(m.ids == b.ids for m, b in samples)
    return row


def _target_row(cfg: SpecConfig, runs: list[Sample]) -> dict:
    """The engine's target alone: the baseline of every row (speedup 1 by definition)."""
    tokens, seconds = sum(len(s.ids) for s in runs), sum(s.seconds for s in runs)
    return {"method": "target", "k": cfg.k, "temperature": cfg.sampling.temperature,
            "tokens_per_s": tokens / seconds if seconds else 0.0, "speedup": 1.0, "speedup_range": [1.0, 1.0],
            "measurements": 0, "note": "the baseline of every row", "acceptance_rate": None,
            "tokens_per_target_pass": 1.0 if runs else 0.0, "seconds": seconds, "tokens": tokens,
            **({"identical": True} if cfg.sampling.greedy else {})}


def predicted_seconds(samples: list[Sample], costs: dict, method: str) -> float:
    """Time the runs would take with nothing but model passes: per round, its draft passes at the
    measured draft cost plus one verify pass at the measured cost for its width."""
    total = 0.0
    for sample in samples:
        total += costs["prefill"]
        for r in sample.rounds:
            width = min(r.proposed + 1, max(costs["verify"]))
            total += costs["verify"][width] + (r.draft_passes * costs["draft"] if method in ("engine", COMPILED) else 0.0)
    return total


@torch.inference_mode()
def measure_pass_costs(pair: Pair, context: int, widths: range, reps: int = 30, burst: int = 4,
                       compiled: bool = False) -> dict:
    """Median seconds of one draft pass (1 token) and of a target verify pass per width, at a
    realistic context length, with the same runners (and thread settings) the engine uses. The
    passes alternate as in decoding: each verify pass follows a burst of draft passes and each
    burst follows a verify pass, so neither model finds its weights in a cache the other has just
    used (on a CPU, measuring a model alone makes its passes look up to 2x cheaper)."""

    def prime(runner: ModelRunner) -> None:
        runner.reset()
        runner.forward(torch.arange(context, device=runner.device) % 100, keep=1)

    def timed_pass(runner: ModelRunner, width: int) -> float:
        ids = torch.arange(width, device=runner.device) % 100
        _sync(runner.device)
        start = time.perf_counter()
        runner.forward(ids, keep=width)
        _sync(runner.device)
        runner.crop(context)
        return time.perf_counter() - start

    target, draft = _cost_runners(pair, context + max(widths) + 1, widths, compiled)
    prime(target)
    if draft is not None:
        prime(draft)
    verify, drafting = {w: [] for w in widths}, []
    for _ in range(reps):
        for w in widths:
            if draft is not None:
                drafting += [timed_pass(draft, 1) for _ in range(burst)]
            verify[w].append(timed_pass(target, w))
    costs = {"verify": {w: statistics.median(t) for w, t in verify.items()}, "prefill": 0.0,
             "draft": statistics.mean(drafting) if drafting else 0.0}
    costs["prefill"] = costs["verify"][max(widths)]  # a short prompt's prefill costs about a wide pass
    return costs


def _cost_runners(pair: Pair, capacity: int, widths: range, compiled: bool):
    """The runners the engine would use: eager, or static with every measured width compiled where
    the model supports it."""
    if not compiled:
        return session.eager_runners(pair)
    target = session.static_or_eager(pair, pair.target, capacity, {(w, w) for w in widths}, pair.target_threads)
    draft = session.static_or_eager(pair, pair.draft, capacity, {(1, 1)}, pair.draft_threads,
                                    pair.draft_vocab_map) if pair.draft is not None else None
    for runner in (target, draft):
        if isinstance(runner, StaticRunner):
            runner.warm()
    return target, draft


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def run_bench(pairs: dict, prompts: list[list[int]], ks: list[int], temperatures: list[float], repeat: int,
              max_new_tokens: int, seed: int = 0, log=print, compiled: bool = False, on_row=None) -> list[dict]:
    """Every (temperature, k) setting; each row is logged, and handed to `on_row`, once measured."""
    pair = pairs["draft"]
    context = sum(map(len, prompts)) // len(prompts) + max_new_tokens // 2
    log(f"measuring pass costs at context {context}...")
    costs = measure_pass_costs(pair, context, range(1, max(ks) + 2))
    _log_costs(log, "pass costs", context, costs)
    if compiled and pair.draft is not None and not pair.feature_draft:
        started = time.perf_counter()
        costs["compiled"] = measure_pass_costs(pair, context, range(1, max(ks) + 2), compiled=True)
        _log_costs(log, f"compiled pass costs ({time.perf_counter() - started:.0f} s compiling and measuring)",
                   context, costs["compiled"])
    rows = []

    def done(row: dict) -> None:
        rows.append(row)
        log(_fmt(row))
        if on_row:
            on_row(rows)
    settings = [(t, k) for t in temperatures for k in ks]
    for i, (temperature, k) in enumerate(settings):
        cfg = session.settings(k=k, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        log(f"setting {i + 1} of {len(settings)}: k={k}, T={temperature} ({len(prompts)} prompts, >= {repeat} "
            f"measurement{'s' * (repeat > 1)} per method)")
        bench_setting(pairs, prompts, cfg, repeat, available_methods(pair, cfg, log, compiled), costs, done)
    return rows


def _log_costs(log, title: str, context: int, costs: dict) -> None:
    log(f"{title} at context {context}: draft {costs['draft'] * 1e3:.2f} ms, verify "
        + ", ".join(f"{w}: {s * 1e3:.2f} ms" for w, s in costs["verify"].items()))


RANGE = "({0[0]:.2f}-{0[1]:.2f})"  # a [low, high] speedup range


def _fmt(row: dict) -> str:
    parts = [f"{row['method']:>20} k={row['k']:<2} T={row['temperature']:<4} {row['tokens_per_s']:8.1f} tok/s"]
    if row["speedup"] is None:
        parts.append(f"speedup: cannot tell ({row['note']})")
    for key, fmt in (("speedup", "{:.2f}x"), ("speedup_range", RANGE), ("acceptance_rate", "acc {:.2f}"), ("tokens_per_target_pass", "{:.2f} tok/pass"),
                     ("efficiency", "eff {:.2f}"), ("identical", "identical {}")):
        if row.get(key) is not None and (key != "speedup_range" or row["speedup"] is not None):
            parts.append(fmt.format(row[key]))
    return "  ".join(parts)


def markdown_table(rows: list[dict]) -> str:
    head = "| method | k | T | tokens/s | speedup (95% interval) | acceptance | tokens/pass | efficiency | identical |\n|---|---|---|---|---|---|---|---|---|\n"
    cell = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
    return head + "".join(
        f"| {r['method']} | {r['k']} | {r['temperature']} | {r['tokens_per_s']:.1f} | "
        f"{cell(r['speedup'], '{:.2f}x') + cell(r.get('speedup_range'), ' ' + RANGE) if r['speedup'] is not None else 'cannot tell'} | "
        f"{cell(r['acceptance_rate'], '{:.2f}')} | {r['tokens_per_target_pass']:.2f} | {cell(r.get('efficiency'), '{:.2f}')} | "
        f"{cell(r.get('identical'), '{}')} |\n" for r in rows)


def write_rows(rows: list[dict], out: pathlib.Path, title: str) -> None:
    """rows.json and table.md as they stand (rewritten after every row, so a long bench leaves what
    it measured even when stopped)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    (out / "table.md").write_text(f"# {title}\n\n" + markdown_table(rows))


def write_outputs(rows: list[dict], out: pathlib.Path, title: str, log=print) -> list[pathlib.Path]:
    """rows.json, table.md and a plotly chart (HTML; PNG too when kaleido and a browser are there)."""
    import plotly.graph_objects as go
    write_rows(rows, out, title)
    fig = go.Figure()
    for method in dict.fromkeys(r["method"] for r in rows):
        for temperature in dict.fromkeys(r["temperature"] for r in rows):
            mine = [r for r in rows if r["method"] == method and r["temperature"] == temperature]
            fig.add_trace(go.Scatter(x=[r["k"] for r in mine], y=[r["speedup"] for r in mine], mode="lines+markers",
                                     name=f"{method} T={temperature}"))
    fig.update_layout(title=title, xaxis_title="k", yaxis_title="speedup over target-only", template="plotly_white")
    written = [out / "rows.json", out / "table.md", out / "speedup.html"]
    fig.write_html(out / "speedup.html", include_plotlyjs=True)  # plotly.js inside: the chart works offline
    try:
        fig.write_image(out / "speedup.png", width=900, height=500)
        written.append(out / "speedup.png")
    except Exception as exc:  # kaleido or its browser missing: the HTML chart is there
        reason = " ".join(str(exc).split())[:160] or "kaleido could not render it here"
        log(f"(no PNG chart: {reason}; speedup.html has the chart)")
    return written


def ngram_pair(pair: Pair) -> Pair:
    return dataclasses.replace(pair, draft=None, draft_id=NGRAM)


def smoke(pair: Pair, prompts: list[list[int]]) -> list[dict]:
    """A run small enough for CI (seconds): every method once at k=4, greedy, 24 tokens."""
    cfg = session.settings(k=4, max_new_tokens=24)
    pairs = {"draft": pair, "ngram": ngram_pair(pair)}
    return bench_setting(pairs, prompts[:2], cfg, 1, available_methods(pair, cfg), None)

