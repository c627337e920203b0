"""What `generate` (and `export`) was given but will not use, or will not do, said on stderr before it runs: a
flag accepted in silence reads as a flag that worked (a newcomer's pass: --system on a run without a chat
template took effect nowhere and said nothing; a seed under the schedule policy does not repeat a run)."""
from playground.draft_ids import NGRAM, NO_PROBABILITIES, confidence_unused, uses_lookup
from playground.limits import compile_refused

CONFIDENCE_UNUSED = "--confidence is not used: it is --policy confidence's threshold"  # (generate's and bench's)


def unused_flags(args, spec, chat: bool, has_template: bool, target: str, cfg, draft: str) -> list[str]:
    """-> one each ('--system is not used: ...': generate prints each after 'note: ' and puts them in its JSON's
    `note`). `spec` the run's ConstraintSpec or None, `chat` whether the run asks for the chat template,
    `has_template` whether the tokenizer has one, `cfg` the run's SpecConfig, `draft` its draft's id."""
    return _sampling_unused(args, cfg, draft) + _system_unused(args, chat, has_template, target) + _unused_by_any_run(args, spec)


def rows_bench_cannot_measure(args, draft: str) -> dict[str, str]:
    """bench's flags whose rows its draft cannot give -> {flag's attribute: why}, known from the draft's name
    before anything loads (said once the models had loaded and the pass costs been measured, a minute on)."""
    why = {}
    if args.tree and uses_lookup(draft):
        why["tree"] = "--tree adds no engine-tree row: a token tree is drafted by a draft model, not by prompt lookup or a cascade"
    if args.policy and draft == NGRAM:
        why["policy"] = (f"--policy {','.join(args.policy)} adds no row: a policy sets a draft model's length, and this "
                         "bench drafts by prompt lookup alone")
    if args.compile and draft == NGRAM:
        why["compile"] = ("--compile adds no engine-compiled row: it compiles a draft model's passes beside the "
                          "target's, and prompt lookup has none")
    elif args.compile and compile_refused():
        why["compile"] = "--compile adds no engine-compiled row: compiled passes are off on this host (PLAYGROUND_COMPILED_PASSES=0)"
    return why


def unused_by_export(args, spec, cfg) -> list[str]:
    """What `export` was given but no run would use (as generate says them: a greedy run's sampling flags were exported
    in silence, a scripting review), or it writes nowhere: the flags that place and compile a run here; a system prompt
    it does not send is said in the export's own notes."""
    given = [flag for flag, unused in (("--device", args.device != "auto"), ("--compile", args.compile is not None)) if unused]
    notes = [f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} not used: export writes the engines' "
             "commands, and vLLM, SGLang and transformers pick their own device and compilation"] if given else []
    return [f"note: {n}" for n in notes + _greedy_unused(args, cfg) + _unused_by_any_run(args, spec)]


def _unused_by_any_run(args, spec) -> list[str]:
    """Flags that only mean something beside another, given without it."""
    given_ids = getattr(args, "prompt_ids", None) is not None
    notes = []
    if args.schema_in_prompt and (given_ids or spec is None or spec.kind != "json"):
        notes.append("--schema-in-prompt is not used: " + ("--prompt-ids are sent as given" if given_ids else
                                                           "it appends a --schema to the prompt, and this run has none"))
    if given_ids and getattr(args, "raw", False):  # (said nothing: a CLI review)
        notes.append("--raw is not used: --prompt-ids are sent as given, with no chat template to leave out")
    if args.think_budget and spec is None:  # under one, a model without </think> is refused (constraints.reasoning)
        notes.append("--think-budget is not used: it bounds a reasoning model's thinking before a constraint "
                     "(--schema, --regex or --grammar); without one the model thinks as long as it likes")
    if args.k is not None and args.tree:
        notes.append("--k is not used: a token tree (--tree) drafts the shape it names; k is a chain's length")
    if args.confidence is not None and args.policy != "confidence":
        notes.append(CONFIDENCE_UNUSED)
    if args.constraint_backend != "llguidance" and spec is None:
        notes.append("--constraint-backend is not used: this run has no --schema, --regex or --grammar")
    return notes


def _system_unused(args, chat: bool, has_template: bool, target: str) -> list[str]:
    why = _no_system(args, chat, has_template, target) if args.system else ""
    return [f"--system is not used: {why}"] if why else []


def _sampling_unused(args, cfg, draft: str) -> list[str]:
    """Sampling flags a greedy run never reads, a sampled schedule run's seed that may not repeat it, and
    the confidence policy under prompt lookup."""
    notes = _greedy_unused(args, cfg)
    if cfg.sampling.greedy:
        if args.num_samples > 1:
            notes.append(f"--num-samples {args.num_samples} under greedy decoding writes the same text each time "
                         "(give --temperature above 0 for samples that differ)")
    elif cfg.policy == "schedule" and draft != NGRAM:  # (the page's policy help and /generate's docstring say it
        # too; prompt lookup's guesses cost no pass to measure, and its schedule never pauses)
        notes.append("--policy schedule pauses drafting by measured pass times, so a seeded sampled run may not "
                     "write the same text again (a fixed k or the confidence policy does)")
    if confidence_unused(cfg.policy, draft):
        notes.append(f"--policy confidence is not used: {NO_PROBABILITIES}; they are drafted as under fixed (k the most)")
    return notes


def _greedy_unused(args, cfg) -> list[str]:
    """The sampling flags a greedy run never reads."""
    given = [flag for flag, value in (("--top-p", args.top_p), ("--top-k", args.top_k), ("--seed", args.seed)) if value is not None]
    if not (cfg.sampling.greedy and given):
        return []
    return [f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} not used: the run is greedy (temperature 0), which "
            "draws nothing"]


def _no_system(args, chat: bool, has_template: bool, target: str) -> str:
    """Why the system prompt reaches no model ('' when it does)."""
    if getattr(args, "prompt_ids", None) is not None:  # (export has no --prompt-ids)
        return "--prompt-ids are sent as given"
    if args.raw:
        return "--raw sends the prompt without the chat template"
    if not has_template:
        return f"{target}'s tokenizer has no chat template"
    return "" if chat else "the preset sends its prompt without the chat template"
