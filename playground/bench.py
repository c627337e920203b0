"""`python -m playground bench`: this engine against target-only decoding and transformers' own
assisted generation and prompt lookup, in one process, interleaved, after a warm-up; medians of
repeats. Speed is only ever reported as ratios taken side by side in the same run.

Rows (one per method, k, temperature): tokens_per_s, speedup over `target`, acceptance_rate,
tokens_per_target_pass, efficiency (engine rows: the time predicted from measured per-pass costs and
the run's own rounds, over the measured time; 1.0 means no overhead outside model passes) and
identical (greedy rows: the same tokens as `target` on every prompt).

With `compiled`, an `engine-compiled` row runs the engine on static caches with compiled passes
(playground.engine.static); its graphs are compiled before any timing, and its efficiency uses pass
costs measured with the compiled passes."""
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
from playground.models import NGRAM, Pair

METHODS = ("target", "engine", "hf-assisted", "hf-prompt-lookup", "engine-prompt-lookup")
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
    return Sample(new, seconds, target_calls.calls, proposed, max(0, len(new) - rounds) if method != "target" else 0)


def run_engine(pair: Pair, ids: list[int], cfg: SpecConfig) -> Sample:
    result = session.run(pair, ids, cfg)
    s = result.stats
    return Sample(result.token_ids, s["wall_s"], s["target_passes"], s["proposed"], s["accepted"], result.rounds)


def run_method(method: str, pairs: dict, ids: list[int], cfg: SpecConfig) -> Sample:
    if method == "engine":
        return run_engine(pairs["draft"], ids, cfg)
    if method == COMPILED:
        return run_engine(pairs["draft"], ids, dataclasses.replace(cfg, compile=True))
    if method == "engine-prompt-lookup":
        return run_engine(pairs["ngram"], ids, cfg)
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
                  pass_costs: dict | None = None) -> list[dict]:
    """All methods for one (k, temperature), interleaved per prompt; a row per method."""
    for method in methods:  # warm-up: one-time costs stay out of every column
        run_method(method, pairs, prompts[0], dataclasses.replace(cfg, max_new_tokens=8))
    totals = {m: [] for m in methods}
    samples = {m: [] for m in methods}
    for _ in range(repeat):
        per_method = {m: [] for m in methods}
        for ids in prompts:
            for method in methods:
                per_method[method].append(run_method(method, pairs, ids, cfg))
        for method in methods:
            totals[method].append(sum(s.seconds for s in per_method[method]))
            samples[method] = per_method[method]  # the last repeat's samples give tokens and counts
    return [_row(m, cfg, totals, samples, pass_costs) for m in methods]


def _row(method: str, cfg: SpecConfig, totals: dict, samples: dict, pass_costs: dict | None) -> dict:
    tokens = sum(len(s.ids) for s in samples[method])
    seconds = statistics.median(totals[method])
    base = statistics.median(totals["target"]) if "target" in totals else None
    base_tokens = sum(len(s.ids) for s in samples["target"]) if "target" in samples else 0
    proposed = sum(s.proposed for s in samples[method])
    row = {"method": method, "k": cfg.k, "temperature": cfg.sampling.temperature,
           "tokens_per_s": tokens / seconds if seconds else 0.0,
           "speedup": (tokens / seconds) / (base_tokens / base) if base and base_tokens and seconds else None,
           "speedup_range": _speedup_range(totals[method], totals.get("target"), tokens, base_tokens),
           "acceptance_rate": sum(s.accepted for s in samples[method]) / proposed if proposed else None,
           "tokens_per_target_pass": tokens / max(1, sum(s.target_passes for s in samples[method])),
           "seconds": seconds, "tokens": tokens}
    costs = (pass_costs or {}).get("compiled") if method == COMPILED else pass_costs
    if method.startswith("engine") and costs is not None:
        row["efficiency"] = predicted_seconds(samples[method], costs, method) / (seconds or 1.0)
    if cfg.sampling.greedy and "target" in samples:
        row["identical"] = all(a.ids == b.ids for a, b in zip(samples[method], samples["target"]))
    return row


def _speedup_range(seconds: list[float], base: list[float] | None, tokens: int, base_tokens: int):
    """[lowest, highest] speedup over the repeats, each repeat's method against the same repeat's
    target-only runs (interleaved with it); None without a target row."""
    if not base or not base_tokens or not all(seconds) or not all(base):
        return None
    ratios = [(tokens / s) / (base_tokens / b) for s, b in zip(seconds, base)]
    return [min(ratios), max(ratios)]


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
              max_new_tokens: int, seed: int = 0, log=print, compiled: bool = False) -> list[dict]:
    pair = pairs["draft"]
    context = sum(map(len, prompts)) // len(prompts) + max_new_tokens // 2
    costs = measure_pass_costs(pair, context, range(1, max(ks) + 2))
    _log_costs(log, "pass costs", context, costs)
    if compiled and pair.draft is not None and not pair.feature_draft:
        started = time.perf_counter()
        costs["compiled"] = measure_pass_costs(pair, context, range(1, max(ks) + 2), compiled=True)
        _log_costs(log, f"compiled pass costs ({time.perf_counter() - started:.0f} s compiling and measuring)",
                   context, costs["compiled"])
    rows = []
    for temperature in temperatures:
        for k in ks:
            cfg = session.settings(k=k, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
            setting_rows = bench_setting(pairs, prompts, cfg, repeat, available_methods(pair, cfg, log, compiled), costs)
            for row in setting_rows:
                log(_fmt(row))
            rows += setting_rows
    return rows


def _log_costs(log, title: str, context: int, costs: dict) -> None:
    log(f"{title} at context {context}: draft {costs['draft'] * 1e3:.2f} ms, verify "
        + ", ".join(f"{w}: {s * 1e3:.2f} ms" for w, s in costs["verify"].items()))


RANGE = "({0[0]:.2f}-{0[1]:.2f})"  # a [low, high] speedup range


def _fmt(row: dict) -> str:
    parts = [f"{row['method']:>20} k={row['k']:<2} T={row['temperature']:<4} {row['tokens_per_s']:8.1f} tok/s"]
    for key, fmt in (("speedup", "{:.2f}x"), ("speedup_range", RANGE), ("acceptance_rate", "acc {:.2f}"), ("tokens_per_target_pass", "{:.2f} tok/pass"),
                     ("efficiency", "eff {:.2f}"), ("identical", "identical {}")):
        if row.get(key) is not None:
            parts.append(fmt.format(row[key]))
    return "  ".join(parts)


def markdown_table(rows: list[dict]) -> str:
    head = "| method | k | T | tokens/s | speedup (range over repeats) | acceptance | tokens/pass | efficiency | identical |\n|---|---|---|---|---|---|---|---|---|\n"
    cell = lambda v, f: "" if v is None else f.format(v)  # noqa: E731
    return head + "".join(
        f"| {r['method']} | {r['k']} | {r['temperature']} | {r['tokens_per_s']:.1f} | {cell(r['speedup'], '{:.2f}x')}"
        f"{cell(r.get('speedup_range'), ' ' + RANGE)} | "
        f"{cell(r['acceptance_rate'], '{:.2f}')} | {r['tokens_per_target_pass']:.2f} | {cell(r.get('efficiency'), '{:.2f}')} | "
        f"{cell(r.get('identical'), '{}')} |\n" for r in rows)


def write_outputs(rows: list[dict], out: pathlib.Path, title: str, log=print) -> list[pathlib.Path]:
    """rows.json, table.md and a plotly chart (HTML; PNG too when kaleido and a browser are there)."""
    import plotly.graph_objects as go
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    (out / "table.md").write_text(f"# {title}\n\n" + markdown_table(rows))
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

