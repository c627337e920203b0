"""Which runners a run gets, and their compilation: eager runners on growing caches, or static caches
with compiled passes (and on a GPU whole rounds replayed as graphs, playground.engine.fused); why a
compiled run falls back to eager; compiling before a run's clock starts."""
import gc
import time

import torch

from playground.config import MAX_K, SpecConfig
from playground import stopping
from playground.engine.feature_runner import FeatureRunner
from playground.engine.fused import CATCH_UP, FusedProposer, programs_for
from playground.events import Prefill
from playground.engine.runner import ModelRunner
from playground.engine.static import CacheBusy, StaticRunner, why_not_static
from playground.limits import compile_refused
from playground.models.loading import Pair
from playground.models.placement import on_zero_gpu


FUSED_DEVICES = {"cuda"}  # where compiled runs replay whole rounds as graphs (tests add "cpu": same code, no capture)


def fuses(pair: Pair, cfg: SpecConfig, speculative: bool = True, unconstrained: bool = True,
          prompt_len: int = 2) -> bool:
    """Whether a cfg.compile run replays its rounds as two device programs (playground.engine.fused):
    on a GPU, with a token draft (or none: the target alone) on static caches, no constraint (the
    grammar needs each draft token on the host), no cascade, no confidence stop, a prompt of 2+ tokens."""
    if not (cfg.compile and unconstrained and pair.device.type in FUSED_DEVICES and prompt_len >= 2):
        return False
    if compile_fallback(pair, cfg, speculative, prompt_len):
        return False
    if not speculative:
        return True
    return pair.draft is not None and not pair.cascade and cfg.policy != "confidence"


def baseline_form(pair: Pair, cfg: SpecConfig, events: list) -> str:
    """How the target alone ran beside speculation (its run's `events`) where that is slower than plain
    one-token decoding, in words ('' where it was plain, or as fast): exact, so that its greedy tokens are speculation's
    (the speedup card and the CLI said only "over the target alone"; a maths review). Read from the run, not
    the settings: one beside another run, whose static caches it could not take, ran eager (a review)."""
    if any(isinstance(e, Prefill) and e.fused for e in events):
        return (f"the target alone replays verification's {cfg.k + 1}-token pass for each token, so that its "
                "tokens are speculation's (0.94-0.96x the speed of one-token passes on an H200, BENCHMARKS.md)")
    ratio = getattr(pair.target, "playground_plain_ratio", None)
    if getattr(pair.target, "playground_batch_invariant", False) and ratio and ratio > PLAIN_FASTER:
        return (f"the target alone runs exact, as verification does, so that its greedy tokens are speculation's; "
                f"plain decoding (one-row products, as transformers runs them), whose tokens can differ, ran {ratio:.2f}x "
                "faster on this machine (timed at load)")
    return ""


PLAIN_FASTER = 1.05  # a plain one-row product's speed said where over this many times the exact one's


def runners(pair: Pair, prompt_len: int, cfg: SpecConfig, speculative: bool = True, fused: bool = False):
    """-> (target runner, draft runner or None). Eager runners on growing caches; with cfg.compile,
    static caches with compiled passes: the target's verify over k+1 tokens and its one-token step
    (fused: the k+1 verify alone, which the target alone replays too), the draft's step over one or
    two new tokens (fused with the schedule: also its catch-up after a pause). Whole runs stay eager
    where eager_as_a_whole says so, target-only runs included, so a comparison sets eager against
    eager; models with sliding-window layers stay eager. A static cache held by another run
    (concurrent generations): eager for this one."""
    has_draft = speculative and pair.draft is not None
    capacity = positions(prompt_len, cfg)
    if not cfg.compile or eager_as_a_whole(pair, cfg, prompt_len):
        return eager_runners(pair, has_draft)
    if fused:
        target_shapes = {(cfg.k + 1, cfg.k + 1)}
    else:
        target_shapes = {(1, 1), (cfg.k + 1, cfg.k + 1)} if speculative else {(1, 1)}
    try:
        return compiled_runners(pair, cfg, capacity, target_shapes, has_draft, fused)
    except CacheBusy:  # a finished run's runners may wait in a reference cycle for the collector:
        gc.collect()  # without it this run went eager, silently slower
    try:
        return compiled_runners(pair, cfg, capacity, target_shapes, has_draft, fused)
    except CacheBusy:
        return eager_runners(pair, has_draft)


def compiled_runners(pair: Pair, cfg: SpecConfig, capacity: int, target_shapes: set, has_draft: bool, fused: bool):
    """-> (target runner, draft runner or None) on the models' static caches (CacheBusy: both of a
    model's caches of this capacity are held)."""
    target = static_or_eager(pair, pair.target, capacity, target_shapes, pair.target_threads, capture=not fused)
    steps = {(1, 1), (2, 1)} | ({(CATCH_UP, 1)} if fused and cfg.policy == "schedule" else set())  # after a pause
    draft = static_or_eager(pair, pair.draft, capacity, steps, pair.draft_threads,
                            pair.draft_vocab_map, capture=not fused) if has_draft else None
    return target, draft


def static_or_eager(pair: Pair, model, capacity: int, shapes: set, threads, vocab_map=None,
                    capture: bool = True) -> ModelRunner:
    """A StaticRunner with compiled passes at these (width, kept logits) shapes where the model
    supports one (see why_not_static), else an eager runner. `capture` off: no CUDA graph per pass
    (a fused round captures the whole round)."""
    if not why_not_static(model):
        longest = min(pair.context, MAX_GPU_CONTEXT) + MAX_K + 2
        return StaticRunner(model, pair.vocab, capacity, shapes, threads, vocab_map, longest, capture)
    return ModelRunner(model, pair.vocab, threads, vocab_map)


MAX_GPU_CONTEXT = 32768  # the long cache of a GPU run (prompt + new tokens past GPU_CAPACITY)


def positions(prompt_len: int, cfg: SpecConfig) -> int:
    """The cache positions a run may write: prompt, new tokens, a round's drafts past the budget and two."""
    return prompt_len + cfg.max_new_tokens + cfg.k + 2


def past_gpu_caches(pair: Pair, capacity: int) -> bool:
    """Whether a GPU run needs more positions than its long cache holds (a pair whose context is past
    MAX_GPU_CONTEXT): it runs eager rather than compile and keep a cache of its own length."""
    return pair.device.type == "cuda" and capacity > MAX_GPU_CONTEXT + MAX_K + 2


def fused_proposer(pair: Pair, cfg: SpecConfig, target, draft) -> FusedProposer:
    programs = programs_for(pair.programs, target.device_pass, draft.device_pass if draft else None, cfg.k,
                            cfg.sampling, capture=pair.device.type == "cuda")
    return FusedProposer(programs, target, draft)


def compile_fallback(pair: Pair, cfg: SpecConfig, speculative: bool = True, prompt_len: int = 0) -> str:
    """Why a cfg.compile run of this pair (and prompt length, when given) runs eager, in part or
    whole; "" when it does not."""
    if not cfg.compile:
        return ""
    if why := eager_as_a_whole(pair, cfg, prompt_len):
        return why
    has_draft = speculative and pair.draft is not None
    reasons = [f"the {name}: {why}" for name, model in (("target", pair.target), ("draft", pair.draft if has_draft else None))
               if model is not None and (why := why_not_static(model))]
    return "; ".join(reasons)


def eager_as_a_whole(pair: Pair, cfg: SpecConfig, prompt_len: int) -> str:
    """Why a cfg.compile run, and the target alone beside it (eager against eager), runs eager
    from start to end; "" when it compiles what it can."""
    if past_gpu_caches(pair, positions(prompt_len, cfg)):
        return (f"compiled passes hold {MAX_GPU_CONTEXT} positions on a GPU; this run needs "
                f"{prompt_len + cfg.max_new_tokens} (prompt and new tokens), so it is eager")
    if compile_refused():
        return "compiled passes are off on this host (PLAYGROUND_COMPILED_PASSES=0); this run is eager"
    if on_zero_gpu():
        return ("compiled passes are off on ZeroGPU: compiling takes minutes and each GPU lease lasts about two; "
                "this run is eager")
    if pair.feature_draft:
        return "compiled passes are off for this pair: its feature draft reads the eager target's hidden states"
    if cfg.tree:
        return "a token tree runs eager passes (compiled trees are not built yet), and so does the target alone beside it"
    return ""


def eager_runners(pair: Pair, with_draft: bool = True):
    """-> (target runner, draft runner or None) on growing caches; a feature draft's runner reads
    the target runner's hidden states."""
    feature = with_draft and pair.feature_draft
    target = ModelRunner(pair.target, pair.vocab, pair.target_threads, keep_hidden=feature)
    if not with_draft or pair.draft is None:
        return target, None
    if feature:
        return target, FeatureRunner(pair.draft, pair.vocab, pair.draft_threads, pair.draft_vocab_map, target)
    return target, ModelRunner(pair.draft, pair.vocab, pair.draft_threads, pair.draft_vocab_map)


def compile_graphs(pair: Pair, prompt_len: int, cfg: SpecConfig, progress=None, speculative: bool = True,
                   constrained: bool = False) -> float:
    """Compile what a cfg.compile run of this prompt length needs and is not compiled yet, and on
    a GPU capture its graphs: for a speculative run also the target alone that a comparison runs
    beside it (on the model's second cache). Once per process; -> seconds spent (0.0 when nothing
    was new). `progress(fraction, message)` is told before each graph."""
    if not cfg.compile:
        return 0.0
    started = time.perf_counter()
    sides = []  # (runners, fused) per side, all held at once so each side borrows its own caches
    for side in ((True, False) if speculative else (False,)):
        fused = fuses(pair, cfg, side, not constrained, prompt_len)
        target, draft = runners(pair, prompt_len, cfg, side, fused)
        sides.append(((target, draft), fused and isinstance(target, StaticRunner)))
    static = [(name, r) for (pair_runners, _) in sides for name, r in zip(("target", "draft"), pair_runners)
              if isinstance(r, StaticRunner)]
    uncaptured = [ps for ps in (fused_proposer(pair, cfg, *pair_runners).programs for pair_runners, fused in sides
                                if fused) if ps.pending()]  # (kept with the pair: a later run captures nothing)
    total = sum(len(r.pending_compiles()) for _, r in static) + len(uncaptured)
    done, made = 0, 0

    def tell(message: str) -> None:  # before each graph: Stop (or a closed page) ends the compiling there
        nonlocal done
        stopping.raise_if_stopped("compiling the passes")
        done += 1
        if progress:
            progress((done - 1) / max(total, 1), f"{message} ({done}/{total}; once per model, k and context size)")
    for name, runner in static:
        runner.warm(lambda width, name=name: tell(f"compiling the {name}'s {width}-token pass"))
    for programs in uncaptured:
        tell("capturing the round's graphs")
        made += programs.capture_all()
    if any(r.compile_s for _, r in static) or made:
        _finish_device_work(pair)
        return time.perf_counter() - started
    return 0.0


def _finish_device_work(pair: Pair) -> None:
    """Wait for the GPU's queued kernels, so a time taken now counts their running too."""
    if pair.device.type == "cuda":
        torch.cuda.synchronize(pair.device)
