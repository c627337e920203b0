"""What `generate` was given but will not use, said on stderr before it runs: a flag accepted in
silence reads as a flag that worked (a newcomer's pass: --system on a run without a chat template
took effect nowhere and said nothing)."""


def unused_flags(args, spec, chat: bool, has_template: bool, target: str) -> list[str]:
    """-> one line each ('note: --system is not used: ...'). `spec` the run's ConstraintSpec or None,
    `chat` whether the run asks for the chat template, `has_template` whether the tokenizer has one."""
    given_ids = args.prompt_ids is not None
    notes = []
    if args.system:
        why = _no_system(args, chat, has_template, target)
        notes += [f"--system is not used: {why}"] if why else []
    if args.schema_in_prompt and (given_ids or spec is None or spec.kind != "json"):
        notes.append("--schema-in-prompt is not used: " + ("--prompt-ids are sent as given" if given_ids else
                                                           "it appends a --schema to the prompt, and this run has none"))
    if args.think_budget and spec is None:  # under one, a model without </think> is refused (constraints.reasoning)
        notes.append("--think-budget is not used: it bounds a reasoning model's thinking before a constraint "
                     "(--schema, --regex or --grammar); without one the model thinks as long as it likes")
    if args.k is not None and args.tree:
        notes.append("--k is not used: a token tree (--tree) drafts the shape it names; k is a chain's length")
    if args.confidence is not None and args.policy != "confidence":
        notes.append("--confidence is not used: it is --policy confidence's threshold")
    return [f"note: {n}" for n in notes]


def _no_system(args, chat: bool, has_template: bool, target: str) -> str:
    """Why the system prompt reaches no model ('' when it does)."""
    if args.prompt_ids is not None:
        return "--prompt-ids are sent as given"
    if args.raw:
        return "--raw sends the prompt without the chat template"
    if not has_template:
        return f"{target}'s tokenizer has no chat template"
    return "" if chat else "the preset sends its prompt without the chat template"
