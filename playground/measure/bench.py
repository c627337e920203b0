"""`python -m playground bench`: this engine against its own target alone, transformers' plain
generate, assisted generation and prompt lookup, in one process, after a warm-up. Every speedup is
measured by playground.measure.speedup against the engine's target alone (the baseline the page and the
CLI use), with its 95% interval, or left out with the reason when it cannot be told; rows are
printed (and with --out written) as each is measured.

Rows (one per method, k, temperature): tokens_per_s, baseline_tokens_per_s (the target alone
measured beside that row, its speedup's baseline; the `target` row pools those of every row, so under
changing load it differs), speedup (None when it cannot be told), speedup_estimate, speedup_range, measurements (the
interleaved blocks it took), note, acceptance_rate, tokens_per_target_pass, efficiency (engine rows:
the decoding time predicted from measured per-pass costs and the run's own rounds over its rounds'
measured time, divided by the same for the target alone beside it, alone_efficiency: 1.0 means no more
overhead outside model passes than the target alone has; a machine busier than when the costs were
measured lowers both sides, not the ratio: 0.15 was read as 85% overhead where the target alone beside
it measured 0.21. Prompt passes are left out: they are not decoding, and costing them as a verify pass
blamed a long prompt's on the engine) and identical (greedy rows: the same tokens as the target alone on
every prompt). Every column pools all the row's measurements, as its speedup does. `target` is the engine's target alone, `hf-target` transformers'
plain generate.

With policies (schedule, confidence or both), an `engine-schedule` and/or `engine-confidence` row runs the draft
model under that draft-length policy (playground.engine.schedule), k the most it proposes, beside the fixed k's
`engine` row.

With `compiled`, an `engine-compiled` row runs the engine on static caches with compiled passes
(playground.engine.static), against the compiled target alone; its graphs are compiled before any
timing, and its efficiency uses pass costs measured with the compiled passes."""
import contextlib
import dataclasses
import time

import torch

from playground import session
from playground.config import SpecConfig, tree_text
from playground.events import Round, committed_ids
from playground.metrics import first_tokens, summarize
from playground.draft_ids import NGRAM
from playground.limits import compile_refused
from playground.models.batch_invariant import plain_kernels
from playground.models.placement import free_memory
from playground.models.row_products import float32_copy_bytes
from playground.models.loading import Pair
from playground.measure.pass_costs import log_costs, measure_pass_costs
from playground.measure.report import row_line
from playground.measure.speedup import ONE_MEASUREMENT as ONE_BLOCK
from playground.measure.speedup import Block, Timed, drawn, interleave, least_blocks, measure, timed

METHODS = ("target", "engine", "hf-target", "hf-assisted", "hf-prompt-lookup", "engine-prompt-lookup")
COMPILED = "engine-compiled"
TREE = "engine-tree"  # the engine drafting the static token tree of --tree (playground.engine.tree)
POLICY_ROWS = {"schedule": "engine-schedule", "confidence": "engine-confidence"}  # --policy's row, k its most


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
    """transformers' generate: plain, with the draft as assistant, or with prompt lookup; a batch-invariant CPU
    model on transformers' own kernels (plain_kernels), as a user of transformers would run it."""
    torch.manual_seed(cfg.seed)
    inputs = torch.tensor([ids], device=pair.device)
    extra: dict = {}
    if method == "hf-prompt-lookup":
        extra = dict(prompt_lookup_num_tokens=cfg.k)
    target_calls, draft_calls = PassCounter(pair.target), PassCounter(pair.draft if "assisted" in method else None)
    with (constant_assistant(pair.draft, cfg.k) if method == "hf-assisted" else contextlib.nullcontext(),
          plain_kernels(pair.target), plain_kernels(pair.draft) if "assisted" in method else contextlib.nullcontext()):
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
    stats, rounds = summarize(events), [e for e in events if isinstance(e, Round)]
    return Sample(committed_ids(rounds), timed(events).seconds, stats["target_passes"], stats["proposed"], stats["accepted"],
                  rounds)


ENGINE = ("engine", COMPILED, TREE, "engine-prompt-lookup", *POLICY_ROWS.values())
DRAFTING = ("engine", COMPILED, *POLICY_ROWS.values())  # engine rows whose rounds pay the draft model's passes


def engine_setup(method: str, pairs: dict, cfg: SpecConfig):
    """-> (pair, settings) an engine method runs with (the target alone beside it uses the same)."""
    pair = pairs["ngram"] if method == "engine-prompt-lookup" else pairs["draft"]
    policy = next((name for name, row in POLICY_ROWS.items() if row == method), "fixed")
    return pair, dataclasses.replace(cfg, compile=method == COMPILED, tree=cfg.tree if method == TREE else (),
                                     tree_budget=cfg.tree_budget if method == TREE else 0,
                                     tree_lookup=cfg.tree_lookup if method == TREE else 0, policy=policy)


def run_method(method: str, pairs: dict, ids: list[int], cfg: SpecConfig) -> Sample:
    """One run of a method alone (warm-ups): its Sample."""
    if method == "target":
        return engine_sample(list(session.generate(pairs["draft"], ids, cfg, speculative=False)))
    if method in ENGINE:
        pair, run_cfg = engine_setup(method, pairs, cfg)
        return engine_sample(list(session.generate(pair, ids, run_cfg)))
    return run_hf(pairs["draft"], ids, cfg, method)


def available_methods(pair: Pair, cfg: SpecConfig, log=print, compiled: bool = False, prompt_len: int = 0,
                      policies: tuple[str, ...] = ()) -> list[str]:
    """The methods a setting measures; a compiled row's note says where it runs eager (the longest
    prompt, `prompt_len`, decides a GPU's long-context fallback); each of `policies` adds its row (POLICY_ROWS)."""
    methods = [m for m in METHODS if pair.draft is not None or m not in ("engine", "hf-assisted")]
    if compiled and pair.draft is None:
        log("(no engine-compiled row: it compiles a draft model's passes beside the target's, and prompt lookup has none)")
    if compiled and pair.draft is not None:
        why = session.compile_fallback(pair, dataclasses.replace(cfg, compile=True), prompt_len=prompt_len)
        if pair.feature_draft:
            log(f"(no engine-compiled row: {why})")
        else:
            if why:
                log(f"(engine-compiled, eager where it cannot compile: {why})")
            methods.insert(methods.index("engine") + 1, COMPILED)
    if cfg.tree and (pair.draft is None or pair.cascade):
        log("(no engine-tree row: a token tree is drafted by a draft model, not by prompt lookup or a cascade)")
    elif cfg.tree:
        methods.insert(methods.index("engine") + 1, TREE)
    for policy in reversed(policies):  # (each inserted after the engine row: in the order given)
        if pair.draft is None:
            log(f"(no {POLICY_ROWS[policy]} row: the {policy} policy sets a draft model's length, and this bench "
                "drafts by prompt lookup alone)")
        else:
            methods.insert(methods.index("engine") + 1, POLICY_ROWS[policy])
    if "hf-assisted" in methods and pair.draft_vocab_map is not None:
        log("(no hf-assisted row: transformers cannot use a draft with a reduced vocabulary)")
        methods.remove("hf-assisted")
    copied = [pair.target] + [pair.draft] * ("hf-assisted" in methods)  # (the draft runs plain in that row alone)
    copies = sum(float32_copy_bytes(model) for model in copied)
    if copies and any(m.startswith("hf-") for m in methods) and copies * 1.2 > (free := free_memory(pair.device)):
        log(f"(no transformers rows: they run on float32 weights, as transformers holds them, and the float32 copies "
            f"of the weights held in bf16 here, {copies / 1e9:.1f} GB, would not fit the {free / 1e9:.1f} GB free)")
        methods = [m for m in methods if not m.startswith("hf-")]
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
        least = max(repeat, 2 if opaque else 1, least_blocks(cfg, len(prompts)))
        result = measure(lambda: _block(method, pairs, prompts, cfg, seen), min_blocks=least)
        if method != COMPILED:
            alone += [base for block in seen for _, base in block]
        rows.append(_row(method, cfg, result, [pair for block in seen for pair in block], pass_costs))
        if on_row:
            on_row(rows[-1])
    rows.insert(0, _target_row(cfg, alone))
    if on_row:
        on_row(rows[0])
    return rows


def _block(method: str, pairs: dict, prompts: list[list[int]], cfg: SpecConfig, seen: list) -> Block:
    """One block: every prompt's run of `method` beside a run of the engine's target alone."""
    block, samples = Block(Timed(whole_runs=method not in ENGINE), Timed()), []
    cfg = drawn(cfg, len(seen))  # sampled: each block its own draws
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
        first_hf = (i + len(seen)) % 2 == 0  # alternate the order, so a drift in load favours neither: over prompts
        # and over blocks (one prompt, or an odd count, ran transformers first in every block)
        hf = run_hf(pairs["draft"], ids, cfg, method) if first_hf else None
        base_events = list(session.generate(pairs["draft"], ids, cfg, speculative=False))
        hf = hf or run_hf(pairs["draft"], ids, cfg, method)
        block.spec.parts.append((hf.seconds, len(hf.ids)))
        block.base.parts += first_tokens(timed(base_events).parts, len(hf.ids))  # as Block.add: up to its tokens
        samples.append((hf, engine_sample(base_events)))
    seen.append(samples)
    return block


ONE_MEASUREMENT = f"{ONE_BLOCK}; --repeat 2 or more measures that"
UNMEASURED = {"baseline_tokens_per_s": None, "efficiency": None, "alone_efficiency": None, "identical": None,
              "tree": None, "confidence": None}  # every row has every key (a row's JSON lacked what its method does not measure)


def _row(method: str, cfg: SpecConfig, result, samples: list[tuple[Sample, Sample]], pass_costs: dict | None) -> dict:
    """A method's row: the measured speedup, and counts from the runs of all its blocks."""
    mine = [m for m, _ in samples]
    tokens = sum(len(s.ids) for s in mine)
    proposed = sum(s.proposed for s in mine)
    one = ONE_MEASUREMENT if result.caveat else ""
    row = {**UNMEASURED, "method": method, "k": cfg.k, "temperature": cfg.sampling.temperature,
           "tokens_per_s": result.spec_tokens_per_s, "baseline_tokens_per_s": result.base_tokens_per_s,
           "speedup": result.speedup, "speedup_estimate": result.estimate, "speedup_range": [result.low, result.high],
           "measurements": result.blocks, "note": "; ".join(filter(None, (result.reason, result.other_lengths, one))),
           "side": result.side,
           "acceptance_rate": sum(s.accepted for s in mine) / proposed if proposed else None,
           "tokens_per_target_pass": tokens / max(1, sum(s.target_passes for s in mine)),
           "seconds": sum(s.seconds for s in mine), "tokens": tokens}
    costs = (pass_costs or {}).get("compiled") if method == COMPILED else pass_costs
    if method == POLICY_ROWS["confidence"]:
        row["confidence"] = cfg.confidence
    if method == TREE:
        row["tree"] = tree_text(cfg)
    elif method in ENGINE and costs is not None:  # each side's predicted over measured time; the row's over the
        alone = [b for _, b in samples]  # target alone's beside it, so a load on both is not read as overhead
        row["alone_efficiency"] = predicted_seconds(alone, costs, "target") / (decoding_seconds(alone) or 1.0)
        row["efficiency"] = predicted_seconds(mine, costs, method) / (decoding_seconds(mine) or 1.0) / (row["alone_efficiency"] or 1.0)
    if cfg.sampling.greedy:
        row["identical"] = all(m.ids == b.ids for m, b in samples)
    return row


def _target_row(cfg: SpecConfig, runs: list[Sample]) -> dict:
    """The engine's target alone: the baseline of every row (speedup 1 by definition)."""
    tokens, seconds = sum(len(s.ids) for s in runs), sum(s.seconds for s in runs)
    return {**UNMEASURED, "method": "target", "k": cfg.k, "temperature": cfg.sampling.temperature,
            "tokens_per_s": tokens / seconds if seconds else 0.0, "speedup": 1.0, "speedup_estimate": 1.0, "speedup_range": [1.0, 1.0],
            "measurements": 0, "note": "the baseline of every row", "side": "", "acceptance_rate": None,
            "tokens_per_target_pass": tokens / max(1, sum(s.target_passes for s in runs)),  # (its prompt pass counted
            # as every row's is: a row of prompt lookup at 0.94 read as worse than a hard-coded 1.00)
            "seconds": seconds, "tokens": tokens}  # (identical to itself says nothing: left blank)


def predicted_seconds(samples: list[Sample], costs: dict, method: str) -> float:
    """Time the runs' rounds would take with nothing but model passes: per round, its draft passes at
    the measured draft cost plus one verify pass at the measured cost for its width."""
    total = 0.0
    for r in (r for sample in samples for r in sample.rounds):
        width = min(r.proposed + 1, max(costs["verify"]))
        total += costs["verify"][width] + (r.draft_passes * costs["draft"] if method in DRAFTING else 0.0)
    return total


def decoding_seconds(samples: list[Sample]) -> float:
    """The runs' rounds' own wall time (their prompt passes left out)."""
    return sum(r.wall_s for sample in samples for r in sample.rounds)


def run_bench(pairs: dict, prompts: list[list[int]], ks: list[int], temperatures: list[float], repeat: int,
              max_new_tokens: int, seed: int = 0, log=print, compiled: bool = False, on_row=None,
              tree: str = "", policies: tuple[str, ...] = (), confidence: float = 0.5) -> list[dict]:
    """Every (temperature, k) setting; each row is logged, and handed to `on_row`, once measured.
    `tree` ('1,2,1,1', or '4,4,4/12' dynamic) adds an engine-tree row (that token tree) beside the chain of k;
    each of `policies` ('schedule', 'confidence' at `confidence`) a row of that draft-length policy with k the most."""
    pair = pairs["draft"]
    if compiled and compile_refused():  # (the CLI says so before loading; a caller of its own may not)
        log("(no engine-compiled row: compiled passes are off on this host (PLAYGROUND_COMPILED_PASSES=0))")
        compiled = False
    context = sum(map(len, prompts)) // len(prompts) + max_new_tokens // 2
    log(f"measuring pass costs at context {context}...")
    costs = measure_pass_costs(pair, context, range(1, max(ks) + 2))
    log_costs(log, "pass costs", context, costs)
    if compiled and pair.draft is not None and not pair.feature_draft:
        started = time.perf_counter()
        costs["compiled"] = measure_pass_costs(pair, context, range(1, max(ks) + 2), compiled=True)
        log_costs(log, f"compiled pass costs ({time.perf_counter() - started:.0f} s compiling and measuring)",
                   context, costs["compiled"])
    rows = []

    def done(row: dict) -> None:
        rows.append(row)
        log(row_line(row))
        if on_row:
            on_row(rows)
    settings = [(t, k) for t in temperatures for k in ks]
    for i, (temperature, k) in enumerate(settings):
        cfg = session.spec_config(k=k, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed,
                                  confidence=confidence, tree=tree)
        log(f"setting {i + 1} of {len(settings)}: k={k}, T={temperature} ({len(prompts)} prompt{'s' * (len(prompts) > 1)}, >= {repeat} "
            f"measurement{'s' * (repeat > 1)} per method)")
        methods = available_methods(pair, cfg, log, compiled, max(map(len, prompts)), policies)
        if TREE in methods and k != ks[0]:  # the tree drafts its own shape: a row per k measured one setting again
            methods.remove(TREE)
            log(f"(the engine-tree row is measured once per temperature, with k={ks[0]}: a tree does not use k)")
        bench_setting(pairs, prompts, cfg, repeat, methods, costs, done)
    return rows


def ngram_pair(pair: Pair) -> Pair:
    return dataclasses.replace(pair, draft=None, draft_id=NGRAM)
