"""One run, between the callers (CLI, UI, benchmarks) and the engine: its pair, configuration and
constraint, runners and proposers, result collection (its prompt: playground.session.prompt; what a run's
settings are refused for before anything loads: playground.session.checks). Callers never build engine objects themselves (but measure.pass_costs,
which times a runner's passes); which runners a run gets and their compilation live in
playground.session.choice."""
from collections.abc import Iterator

from playground.config import SpecConfig, no_room_to_answer
from playground.constraints import Constraint, ConstraintSpec, compile_constraint
from playground.constraints.guide import Guide
from playground.detok import dangling, output_text, whole_characters, with_text
from playground.draft_ids import uses_lookup
from playground.engine.proposers import CascadeProposer, DraftModelProposer, PromptLookupProposer
from playground.engine.tree import TreeProposer
from playground.engine.tree_dynamic import DynamicTreeProposer
from playground.engine.tree_lookup import LookupTreeProposer
from playground.engine.runner import ModelRunner
from playground.engine.speculative import NoProposer, speculate
from playground.engine.static import StaticRunner
from playground.errors import PlaygroundError
from playground.events import STOPPED, Prefill, Round, RunResult, committed_ids
from playground.metrics import summarize
from playground.engine.attention import fold_grouped_heads, folds_on
from playground.models import loading
from playground.engine.fused_layers import fuse_model, fused_models
from playground.models.fused_projections import fuse_projections, fuses_on
from playground.models.loading import Pair
from playground.models.placement import precision, resolve_device
from playground.session.choice import (baseline_form, compile_fallback, compile_graphs, eager_runners, fused_proposer, fuses,
                                       runners, static_or_eager)
from playground.session.checks import (check_draft_name, check_tree_drafter, checked_config, checked_run, config_of,
                                       config_with_tree, constraint_spec, read_settings_constraint, spec_config)
from playground.session.prompt import (as_token_ids, check_prompt_ids, check_prompt_text, encode_prompt, prompt_ids_of,
                                       unread_prompt_parts)
from playground.session.thinking import free_thinking, opens_thinking

__all__ = [  # what the callers (CLI, UI, measure, scripts, a library's) use
    "answers_inside_thinking", "as_token_ids", "baseline_form", "check_draft_name", "checked_config", "checked_run", "check_prompt_ids", "check_prompt_text", "check_tree_drafter", "collect",
    "compile_fallback", "compile_graphs", "config_of", "config_with_tree", "constrain", "constraint_spec",
    "eager_runners", "encode_prompt", "ending_ids", "free_thinking", "generate", "load_pair",
    "lookup_unused", "new_guide", "precision", "prompt_ids_of", "read_settings_constraint", "reads_features", "resolve_device", "run", "run_notes",
    "spec_config", "static_or_eager", "unread_prompt_parts"]


def load_pair(target_id: str, draft_id: str, device: str = "auto", dtype=None, progress=None) -> Pair:
    """Load (or reuse) both models (playground.models.loading.load_pair). On a GPU, grouped-query
    models attend folded (playground.engine.attention) from their first pass on, eager or compiled:
    a run beside another never sees its model's attention change midway; their projections are
    joined there too (playground.models.fused_projections; PLAYGROUND_FUSE_PROJECTIONS=0: not). `draft_id` a draft
    model, "ngram" (prompt lookup) or "ngram+<model>" (a cascade); the target alone runs from any pair, with
    run's or generate's speculative=False."""
    if not isinstance(target_id, str) or not isinstance(draft_id, str):  # (None, a model object: an AttributeError)
        raise PlaygroundError("load_pair takes two names (hub ids, directories or the shipped names: demo-target, "
                              "demo-draft...), the draft's may be 'ngram'; for the target alone, load any pair and "
                              "run it with speculative=False")
    pair = loading.load_pair(target_id, draft_id, device, dtype, progress)
    if not pair.prepared:  # two runs given the same new pair must not change its models at once
        with loading.one_at_a_time(progress, f"preparing {target_id} for this device"):
            if not pair.prepared:
                _change_in_place(pair)
                pair.prepared = True
    return pair


def _change_in_place(pair: Pair) -> None:
    """What a GPU run needs of a pair's models (each change made once per model, kept while it is)."""
    for model in (m for m in (pair.target, pair.draft) if m is not None):
        if folds_on(pair.device):
            fold_grouped_heads(model)
        if fuses_on(pair.device):
            fuse_projections(model)
    for model in fused_models(pair.target, pair.draft):  # PLAYGROUND_FUSED_LAYERS (off by default)
        fuse_model(model)


def constrain(pair: Pair, spec: ConstraintSpec | None) -> Constraint | None:
    """Compile a checked constraint for the pair's tokenizer (cached); `spec` from playground.constraints.from_user."""
    if spec is not None and not isinstance(spec, ConstraintSpec):  # (a regex's text: an AttributeError)
        raise PlaygroundError("constrain takes a ConstraintSpec: playground.constraints.from_user(schema=..., regex=... "
                              "or grammar=...)")
    return compile_constraint(spec, pair.tokenizer, pair.vocab, pair.eos_ids) if spec is not None else None


def lookup_unused(pair: Pair, constraint: Constraint | None) -> str:
    """A cascade under a constraint drafts with its draft model alone (its prompt lookup's guesses are not checked
    against the constraint): said, where the run looked like a cascade and was not (a review); '' otherwise."""
    if not (pair.cascade and constraint is not None):
        return ""
    return "prompt lookup is not used under a constraint: the cascade drafts with its draft model alone"


def answers_inside_thinking(pair: Pair, prompt_ids: list[int], constraint: Constraint | None) -> str:
    """Why a constrained answer would be written inside the model's thinking: a prompt ending in an
    open <think> (DeepSeek-R1's template opens it whatever it is asked) with no thinking budget, so
    the constraint starts inside the thinking, never closed; '' otherwise."""
    if constraint is None or constraint.spec.think_budget or not opens_thinking(pair.tokenizer, prompt_ids):
        return ""
    return ("the chat template opens <think> before the answer whatever it is asked (DeepSeek-R1's does): with no "
            "thinking budget the constraint starts inside the model's thinking, which is never closed; give it a "
            "thinking budget")


def run_notes(pair: Pair, prompt_ids: list[int], cfg: SpecConfig, constraint: Constraint | None) -> list[str]:
    """What a run about to start will not do as asked, said before it (the page beside its metrics, the CLI on
    stderr): a thinking budget that leaves no room to answer, an answer that would start inside the thinking, a
    cascade drafting without its lookup."""
    budget = constraint.spec.think_budget if constraint is not None else 0
    return [note for note in (no_room_to_answer(budget, cfg.max_new_tokens), answers_inside_thinking(pair, prompt_ids, constraint),
                              lookup_unused(pair, constraint)) if note]


def generate(pair: Pair, prompt_ids: list[int], cfg: SpecConfig, speculative: bool = True,
             guide: Guide | None = None) -> Iterator[Prefill | Round]:
    """Stream the events of one run: speculative with the pair's draft, or the target alone (speculative=False: one
    token a pass, greedy the same tokens as speculation's); `guide` (new_guide's, one per run: pass it to collect
    too, for the result's validity) keeps every token inside the constraint. With cfg.compile, graphs not
    compiled yet are compiled here, before the run's clock starts (see compile_graphs)."""
    prompt_ids = as_token_ids(prompt_ids)
    _check_run_args(pair, cfg, guide)
    check_prompt_ids(pair, prompt_ids, cfg.max_new_tokens)
    fused = fuses(pair, cfg, speculative, guide is None, len(prompt_ids))
    target, draft = runners(pair, len(prompt_ids), cfg, speculative, fused)
    for runner in (target, draft):
        if isinstance(runner, StaticRunner):
            runner.warm()
    fused = fused and isinstance(target, StaticRunner)  # not when another run holds the caches
    if speculative and cfg.tree:
        check_tree(pair, target, draft)
    proposer = fused_proposer(pair, cfg, target, draft) if fused else _proposer(pair, speculative, draft, cfg)
    return with_text(speculate(target, proposer, prompt_ids, cfg, ending_ids(pair, guide), guide), pair.tokenizer,
                     prompt_ids)


def _check_run_args(pair: Pair, cfg, guide=None, constraint=None) -> None:
    """A library caller's run arguments of the right kind (a dict for cfg, a Constraint for guide, a ConstraintSpec
    for constraint: AttributeErrors from the engine), made for this pair's tokenizer (another's: a size mismatch
    mid-run; a review)."""
    if not isinstance(cfg, SpecConfig):
        raise PlaygroundError(f"cfg must be a SpecConfig (session.spec_config(k=4, ...)), got {type(cfg).__name__}")
    if isinstance(guide, Constraint):
        raise PlaygroundError("generate takes the constraint's guide: session.new_guide(constraint, cfg), one per run")
    if constraint is not None and not isinstance(constraint, Constraint):
        raise PlaygroundError("run takes a constraint compiled for the pair: session.constrain(pair, spec)")
    for made in (guide, constraint):
        if made is not None and made.vocab != pair.vocab:
            raise PlaygroundError(f"this constraint was compiled for another tokenizer ({made.vocab} tokens, this "
                                  f"pair's {pair.vocab}): compile it for this pair, session.constrain(pair, spec)")


def ending_ids(pair: Pair, constrained=None) -> frozenset[int]:
    """The tokens that end a run: the pair's EOS ids and the constraint's (a Constraint's or its
    Guide's; they differ where the pair names none and the tokenizer's EOS ends the structure)."""
    return pair.eos_ids | (constrained.eos_ids if constrained is not None else frozenset())


def check_tree(pair: Pair, target: ModelRunner, draft: ModelRunner | None) -> None:
    """What a token tree needs for now: a draft model (token or feature), both models on full-attention caches."""
    check_tree_drafter(pair.draft_id)
    for name, runner in ((pair.target_id, target), (pair.draft_id, draft)):
        if not runner.takes_trees:
            raise PlaygroundError(f"'{name}' has sliding-window layers, whose cache cannot keep one branch "
                                  "of a tree: use a chain")


def reads_features(draft_id: str) -> bool:
    """Whether this draft is a feature draft (it reads the target's hidden states, not tokens)."""
    return not uses_lookup(draft_id) and loading.is_way_of_drafting(draft_id)


def _proposer(pair: Pair, speculative: bool, draft: ModelRunner | None, cfg: SpecConfig):
    if not speculative:
        return NoProposer()
    if cfg.tree:
        tree = DynamicTreeProposer(draft, cfg.tree, cfg.tree_budget) if cfg.tree_budget else TreeProposer(draft, cfg.tree)
        return LookupTreeProposer(tree, cfg.tree_lookup, PromptLookupProposer(pair.device)) if cfg.tree_lookup else tree
    if pair.draft is None:
        return PromptLookupProposer(pair.device)
    proposer = DraftModelProposer(draft)
    return CascadeProposer(proposer, PromptLookupProposer(pair.device)) if pair.cascade else proposer


def run(pair: Pair, prompt_ids: list[int], cfg: SpecConfig, speculative: bool = True,
        constraint: Constraint | None = None, should_stop=lambda: False) -> RunResult:
    """Run to the end (or the first round after `should_stop()`: finish_reason 'stopped') and collect
    tokens, text, stats and (constrained) validity; speculative=False: the target alone (see generate)."""
    prompt_ids = as_token_ids(prompt_ids)
    _check_run_args(pair, cfg, constraint=constraint)
    guide = new_guide(constraint, cfg)
    compile_graphs(pair, len(prompt_ids), cfg, speculative=speculative, constrained=constraint is not None)  # never in its time
    events = []
    for event in generate(pair, prompt_ids, cfg, speculative, guide):
        events.append(event)
        if should_stop():
            break
    return collect(pair, events, constraint=constraint, guide=guide, prompt_ids=prompt_ids)


def new_guide(constraint: Constraint | None, cfg: SpecConfig) -> Guide | None:
    """A run's guide through its constraint (its state as the run writes; None without one): for generate's
    `guide` and then collect's, which judges the output with it."""
    return constraint.guide(cfg.k + 2) if constraint is not None else None


def collect(pair: Pair, events: list, *, constraint: Constraint | None = None,
            guide: Guide | None = None, prompt_ids: list[int] = ()) -> RunResult:
    """A run's events -> its result; a thinking run's reasoning tokens and answer: a constrained one's
    from its matcher, a free one's by its marker tokens (`prompt_ids`: whether the template opened it)."""
    rounds = [e for e in events if isinstance(e, Round)]
    ids = committed_ids(rounds)
    finish = (rounds[-1].finish_reason if rounds else None) or STOPPED
    text, cut = _text(pair, ids, finish, dangling(pair.tokenizer, prompt_ids))
    result = RunResult(ids, text, summarize(events), finish, rounds)
    if constraint is None and (thought := free_thinking(pair.tokenizer, prompt_ids, ids)) is not None:
        result.reasoning_tokens = thought
        result.answer = _text(pair, ids[thought:], finish)[0] if thought < len(ids) else ""
    if constraint is not None:
        _judge(pair, result, constraint, guide, cut)
        if cut and result.validation_error:
            result.validation_error += " (it ended inside a character, whose first bytes are not shown)"
    return result


def _text(pair: Pair, ids: list[int], finish: str, lead: list[int] = ()) -> tuple[str, bool]:
    """An output's text (after `lead`, a prompt's dangling tokens); one cut short (max new tokens, Stop) without a
    character it ended inside (whether one was)."""
    if finish == "eos":  # ended by the model: what it wrote, bytes that are no character too
        return output_text(pair.tokenizer, ids, lead), False
    return whole_characters(pair.tokenizer, ids, lead)


def _judge(pair: Pair, result: RunResult, constraint: Constraint, guide: Guide, cut: bool) -> None:
    """Validity of the answer: the whole output, or a thinking run's text after </think>. cut: the budget ended
    it inside a character, whose first bytes the text leaves out."""
    ids, start = result.token_ids, constraint.answer_start(result.token_ids)
    result.constraint_notes = list(constraint.notes)
    if constraint.thinking is not None:
        result.reasoning_tokens = constraint.reasoning_tokens(ids)
        budget = constraint.spec.think_budget  # (the gate forces the marker, or its rest, past `budget` tokens:
        result.thinking_cut = bool(budget) and result.reasoning_tokens > budget  # the model's own ended within it)
        result.answer = "" if start is None else _text(pair, ids[start:], result.finish_reason)[0]
    if start is None:
        result.valid, result.validation_error = False, (
            "still thinking when the run ended: no </think> yet, so no answer (raise max new tokens or lower the "
            "thinking budget)")
        return
    complete = result.finish_reason == "eos" or (result.finish_reason == "length" and guide.accepting())
    answer = result.text if result.answer is None else result.answer
    result.valid, result.validation_error = constraint.validate(answer, ids[start:], complete)
    # valid, yet the budget cut it where it could have gone on (`0.00000000100002...` was still being written)
    result.open_end = bool(result.valid) and result.finish_reason == "length" and guide.could_go_on()
    if cut and not complete and result.finish_reason == "length" and constraint.spec.kind != "grammar":
        # the matcher waits on the cut character's bytes; the text shown leaves them out and may match whole
        # (`[а-я ]{10,60}` cut after "предло" and half a letter was "invalid: truncated"; a review)
        if constraint.validate(answer, ids[start:], True)[0]:
            result.valid, result.validation_error, result.open_end = True, None, True
