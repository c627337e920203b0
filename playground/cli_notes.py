"""What `generate` (and `export`) was given but will not use, or will not do, said on stderr before it runs: a
flag accepted in silence reads as a flag that worked (a newcomer's pass: --system on a run without a chat
template took effect nowhere and said nothing; a seed under the schedule policy does not repeat a run)."""
from playground.config import BACKENDS
from playground.draft_ids import NGRAM, NO_PROBABILITIES, confidence_unused, uses_lookup
from playground.limits import compile_refused
from playground.unread import ONLY_CONFIDENCE, said, unread

CONFIDENCE_UNUSED = f"--confidence is not used: {ONLY_CONFIDENCE}"  # (generate's and bench's)
FLAGS = {"top_p": "--top-p", "top_k": "--top-k", "seed": "--seed", "think_budget": "--think-budget",
         "backend": "--constraint-backend", "schema_in_prompt": "--schema-in-prompt", "k": "--k", "confidence": "--confidence"}


def unused_flags(args, settings, has_template: bool, target: str, cfg, draft: str) -> list[str]:
    """-> one each ('--system is not used: ...': generate prints each after 'note: ' and puts them in its JSON's
    `note`). `settings` the run's Settings, `has_template` whether the tokenizer has a chat template, `cfg` the
    run's SpecConfig, `draft` its draft's id."""
    return (_unread_flags(args, settings) + _sampling_unused(args, cfg, draft)
            + _system_unused(args, settings.chat, has_template, target) + _unused_beside_prompt_ids(args))


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


def unused_by_export(args, settings) -> list[str]:
    """What `export` was given but no run would use (as generate says them: a greedy run's sampling flags were exported
    in silence, a scripting review), or it writes nowhere: the flags that place and compile a run here; a system prompt
    it does not send is said in the export's own notes."""
    given = [flag for flag, unused in (("--device", args.device != "auto"), ("--compile", args.compile is not None)) if unused]
    notes = [f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} not used: export writes the engines' "
             "commands, and vLLM, SGLang and transformers pick their own device and compilation"] if given else []
    return [f"note: {n}" for n in notes + _unread_flags(args, settings)]


def _unread_flags(args, settings) -> list[str]:
    """The flags given that the run will not read (playground.unread's rules, said in the flags' names)."""
    given = {"top_p": args.top_p is not None, "top_k": args.top_k is not None, "seed": args.seed is not None,
             "think_budget": args.think_budget is not None, "backend": args.constraint_backend != BACKENDS[0],
             "schema_in_prompt": args.schema_in_prompt and not _ids_given(args), "k": args.k is not None,
             "confidence": args.confidence is not None}
    return said(unread(settings, given.__getitem__), FLAGS)


def _ids_given(args) -> bool:
    return getattr(args, "prompt_ids", None) is not None  # (export has no --prompt-ids)


def _unused_beside_prompt_ids(args) -> list[str]:
    """Flags that shape a prompt's text, beside a prompt given as token ids."""
    notes = []
    if _ids_given(args) and args.schema_in_prompt:
        notes.append("--schema-in-prompt is not used: --prompt-ids are sent as given")
    if _ids_given(args) and args.raw:  # (said nothing: a CLI review)
        notes.append("--raw is not used: --prompt-ids are sent as given, with no chat template to leave out")
    return notes


def _system_unused(args, chat: bool, has_template: bool, target: str) -> list[str]:
    why = _no_system(args, chat, has_template, target) if args.system else ""
    return [f"--system is not used: {why}"] if why else []


def _sampling_unused(args, cfg, draft: str) -> list[str]:
    """Samples a greedy run writes alike, a sampled schedule run's seed that may not repeat it, and the
    confidence policy under prompt lookup."""
    notes = []
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


def _no_system(args, chat: bool, has_template: bool, target: str) -> str:
    """Why the system prompt reaches no model ('' when it does)."""
    if _ids_given(args):
        return "--prompt-ids are sent as given"
    if args.raw:
        return "--raw sends the prompt without the chat template"
    if not has_template:
        return f"{target}'s tokenizer has no chat template"
    return "" if chat else "the preset sends its prompt without the chat template"
