"""What a run of a page's, link's or CLI's Settings (playground.presets) is refused for before any model loads, in
one place: Run, generate, both exports and the experiments each asked a subset of their own (generate loaded the
models, a download of GB for a GPU preset, before refusing a token tree over prompt lookup, which export refused
at once). Each refusal names its part of the page (errors.blamed_on: the page shows it beside that box)."""
import contextlib

from playground.config import CONSTRAINT_FIELDS, DEFAULT_K, DEFAULT_MAX_NEW_TOKENS, SamplingParams, SpecConfig, tree_fields
from playground.constraints import ConstraintSpec, from_user, read_constraint
from playground.constraints.spec import check_backend
from playground.constraints.worker import TooSlow
from playground.draft_ids import draft_model, is_cascade, uses_lookup
from playground.errors import PlaygroundError, blamed_on
from playground.session.prompt import check_prompt_text


def checked_run(s, prompt: bool = True, read: bool = True) -> tuple[SpecConfig, ConstraintSpec | None]:
    """Everything checked_config checks, then the constraint (`read`: as its backend reads it, no tokenizer, as an
    export must; else only its form, for a run that compiles it at once) and the prompt's text (prompt=False: the
    run's prompts come otherwise, as token ids or an experiment's) -> (config, constraint spec or None)."""
    cfg = checked_config(s)
    with blamed_on("constraint"):
        check_backend(s.backend)  # with no constraint too: an API caller's text is echoed
        spec = read_settings_constraint(s) if read else constraint_spec(s)
    if prompt:
        with blamed_on("prompt"):  # (empty, too long, not UTF-8)
            check_prompt_text(s.prompt, s.system)
    return cfg, spec


def checked_config(s) -> SpecConfig:
    """The draft's name, the settings' ranges, the token tree and what it needs of the draft -> the run's config."""
    with blamed_on("model"):
        check_draft_name(s.draft)
    with blamed_on("settings"):
        cfg = config_of(s, with_tree=False)
    with blamed_on("tree"):  # the tree, and what it needs of the settings above and of the draft
        if tree_fields(s.tree)["tree"]:
            cfg = config_with_tree(s)
    return cfg


def spec_config(k: int = DEFAULT_K, temperature: float = 0.0, top_p: float = 1.0, top_k: int = 0, seed: int = 0,
                max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, policy: str = "fixed", confidence: float = 0.5,
                compile: bool = False, tree: tuple[int, ...] | str = (), tree_budget: int = 0,
                tree_lookup: int = 0) -> SpecConfig:
    """A run's validated SpecConfig (raises PlaygroundError naming the bad value); `config_of` makes one
    from a page's, link's or CLI's Settings. With an adaptive `policy` ("schedule" or "confidence"),
    k is the most the draft proposes in a round; `compile`
    runs the draft and verify passes compiled on static caches; `tree` (children per node at each
    depth) drafts a static token tree instead of a chain, a dynamic one of `tree_budget` nodes when > 0,
    with up to `tree_lookup` prompt-lookup tokens grafted on each round's tree when > 0; or `tree` the CLI's and the
    page's text, '2,2,2/5+3', which sets all three (a library caller's '2,2' was read as the tuple ('2', ',', '2'))."""
    if isinstance(tree, str):
        fields = tree_fields(tree)
        tree, tree_budget, tree_lookup = fields["tree"], fields["tree_budget"], fields["tree_lookup"]
    return SpecConfig(k=k, max_new_tokens=max_new_tokens, seed=seed, policy=policy, confidence=confidence,
                      compile=compile, tree=tuple(tree), tree_budget=tree_budget, tree_lookup=tree_lookup,
                      sampling=SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k))


def config_of(s, with_tree: bool = True) -> SpecConfig:
    """A Settings' run configuration, validated; with_tree=False: its chain settings alone (the page blames a bad
    tree on the tree's box)."""
    return spec_config(k=s.k, temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, seed=s.seed,
                       max_new_tokens=s.max_new_tokens, policy=s.policy, confidence=s.confidence, compile=s.compile,
                       tree=s.tree if with_tree else ())


def config_with_tree(s) -> SpecConfig:
    """config_of(s), its token tree checked with what it needs of the draft (a draft model) and of the
    settings (a link's check as it opens too: ui.share)."""
    check_tree_drafter(s.draft)
    return config_of(s)


def constraint_spec(s) -> ConstraintSpec | None:
    """A Settings' constraint as a checked ConstraintSpec (constraints.from_user), or None."""
    return from_user(**{name: getattr(s, name) for name in CONSTRAINT_FIELDS}, backend=s.backend,
                     think_budget=s.think_budget)


def read_settings_constraint(s) -> ConstraintSpec | None:
    """constraint_spec, read as a run reads it and as its backend does (no tokenizer: nothing loads), so an
    export refuses what Run and generate refuse (a look-around regex was exported without a word); past the
    reading's bound (TooSlow) it passes: a run compiles it in full."""
    spec = constraint_spec(s)
    if spec is not None:
        with contextlib.suppress(TooSlow):
            read_constraint(spec)
    return spec


def check_draft_name(draft_id: str) -> None:
    """A cascade names one draft model after 'ngram+': an empty one, or a cascade in it ('ngram+ngram+x'), refused
    before any model loads (generate looked for a model 'ngram+x'; export exported it; a CLI review)."""
    model = draft_model(draft_id) if draft_id is not None else None
    if model is not None and is_cascade(draft_id) and (not model.strip() or uses_lookup(model)):
        raise PlaygroundError(f"the draft {draft_id[:60]!r} is no cascade: write 'ngram+' then one draft model, as "
                              "ngram+Qwen/Qwen2.5-0.5B-Instruct")


def check_tree_drafter(draft_id: str) -> None:
    """A token tree is drafted by a draft model: refused for prompt lookup or a cascade before any model loads."""
    if uses_lookup(draft_id):
        raise PlaygroundError("a token tree is drafted by a draft model (not prompt lookup or a cascade, for now)")
