"""The public web API beside the page's own endpoints: /generate streams one run of a preset as
JSON snapshots."""
import dataclasses
import urllib.parse

from playground.config import runnable_temperature
from playground.errors import PlaygroundError, shown
from playground.limits import at_most
from playground.session.host import custom_models_allowed
from playground.presets import Settings, chosen_constraint, unknown_preset
from playground.ui import live
from playground.ui.experiment_link import experiment_from_query
from playground.ui.gpu import on_gpu
from playground.ui.inputs import DEFAULT, PRESETS, typed, user_error
from playground.ui.share import MAX_LINK_CHARS, RANGES, TEMPERATURES, from_query, last_of_each


@on_gpu()
def generate(prompt: str = "", preset: str = "", k: int = 0, temperature: float = -1.0,
             max_new_tokens: int = 0, seed: int = -1, schema: str = "", regex: str = "",
             compare: bool | None = None, backend: str = "", grammar: str = "", link: str = "",
             think_budget: int = -1) -> dict:  # a generator of dicts
    """Stream a run of a preset (the page's default one unless named) or a share link as JSON snapshots: tokens with
    kinds and probabilities, stats, validity.

    Args:
        prompt: the text to continue; empty: the preset's own prompt
        preset: a preset's name (see presets/); empty: the page's default preset (or the link's)
        k: draft tokens per round; 0: the preset's (a link's token tree drafts its own shape: k refused)
        temperature: 0 greedy, or from 0.01 up to 2; -1: the preset's
        max_new_tokens: 0: the preset's
        seed: the sampling seed (a seeded sampled run repeats exactly, but under the schedule
            policy with a draft model, whose pauses follow measured times); -1: the link's, else 0
        schema: a JSON Schema every output must satisfy
        regex: a regular expression the whole output must match
        compare: also run the target alone, interleaved, and measure the speedup (true), or not (false);
            null: the preset's (or the link's)
        backend: the constraint backend, llguidance or xgrammar; empty: the preset's
        grammar: a grammar the whole output must match: Lark or GBNF (either backend)
            (one of schema, regex and grammar; none given: the preset's own constraint, if any)
        link: a share link of the page (or its query string): every setting it carries (top-p, the
            drafting way, the system prompt...), in place of a preset; the arguments above, where
            given, replace its values
        think_budget: a reasoning model under a constraint thinks up to this many tokens, then the
            constraint applies after </think>; 0: it answers without thinking; -1: the preset's (or the link's).
            Without a constraint it is not used: the model thinks as it likes
    """
    try:
        settings = _run_settings(_typed_arguments(locals()))
        yield from live.streamed(live.live_run(settings))
    except PlaygroundError as exc:
        raise user_error(exc, page=False) from None
    except Exception as exc:  # a failure before the run wrote (after: its last snapshot's `error`)
        raise user_error(live.failed(exc, wrote=False), page=False) from None


TEXTS = ("prompt", "preset", "schema", "regex", "grammar", "backend", "link")  # generate's arguments by type
WHOLE = ("k", "max_new_tokens", "seed", "think_budget")


def _typed_arguments(given: dict) -> dict:
    """generate's arguments, typed and checked: PlaygroundError for the first one wrong."""
    a = {name: typed(name, given[name], str) for name in TEXTS} | {name: typed(name, given[name], int) for name in WHOLE}
    a["temperature"] = typed("temperature", given["temperature"], float)
    a["compare"] = None if given["compare"] is None else typed("compare", given["compare"], bool)
    for name in ("schema", "regex", "grammar"):
        if a[name] and not a[name].strip():  # (dropped for the preset's own constraint: a regex " " ran its schema)
            raise PlaygroundError(f"{name} is only spaces: give one, or leave it empty for the preset's own constraint")
    if not (a["temperature"] == -1 or runnable_temperature(a["temperature"])):  # NaN refused too
        raise PlaygroundError(f"temperature must be {TEMPERATURES}; -1: the preset's; got {shown(a['temperature'])}")
    low, high = RANGES["think_budget"]
    if not (a["think_budget"] == -1 or low <= a["think_budget"] <= high):
        raise PlaygroundError(f"think_budget must be from {low} to {high} tokens; -1: the preset's; got "
                              f"{shown(a['think_budget'])}")
    return a


def _run_settings(a: dict) -> Settings:
    """The run the arguments ask for: the preset's (or the link's) settings, each argument given in place
    of its value (0, -1 or None: not given, as generate's docstring says)."""
    base = _base_settings(a["preset"], a["link"])
    if a["k"] and base.tree:  # (it ran the tree, k unused and unsaid)
        raise PlaygroundError(f"k is not used: the link's token tree ({base.tree[:40]}) drafts the shape it names, "
                              "k is a chain's length; leave k 0")
    return dataclasses.replace(base, prompt=a["prompt"] or base.prompt, k=a["k"] or base.k,
                               temperature=base.temperature if a["temperature"] == -1 else a["temperature"],
                               max_new_tokens=a["max_new_tokens"] or base.max_new_tokens,
                               seed=base.seed if a["seed"] == -1 else a["seed"],
                               compare=base.compare if a["compare"] is None else a["compare"],  # (False was read as
                               # the preset's: a caller could not turn the comparison and its measuring again off)
                               backend=a["backend"][:40] or base.backend,
                               think_budget=base.think_budget if a["think_budget"] == -1 else a["think_budget"],
                               **chosen_constraint({name: a[name] for name in ("schema", "regex", "grammar")}, base))


def _utf8_pairs(query: str) -> list[tuple[str, str]]:
    """A link's query as (key, value) pairs, refused where its escapes are not UTF-8 (another encoding's: GBK's 你好):
    read with U+FFFD in their place, a link the app made from a prompt holding a U+FFFD was refused as one. A lone
    surrogate written in the link itself is said as one (it was taken for an escape's byte; an API review)."""
    if (at := next((i for i, c in enumerate(query) if "\ud800" <= c <= "\udfff"), None)) is not None:
        raise PlaygroundError(f"the link is refused, nothing run: it holds a lone surrogate (\\u{ord(query[at]):04x}) at "
                              f"character {at + 1} of its query, which is not a character")
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, errors="surrogateescape")
    for key, value in pairs:
        if (at := next((i for i, c in enumerate(key + "=" + value) if "\udc80" <= c <= "\udcff"), None)) is not None:
            raise PlaygroundError(f"the link is refused, nothing run: its percent-escapes at {(key + '=' + value)[:at][:40]!r} "
                                  "are not UTF-8 (escapes of another encoding?)")
    return pairs


def _base_settings(preset: str, link: str) -> Settings:
    """The settings the arguments start from: a preset's, or a share link's. The page says what a
    link carries that it ignores and runs the rest; an API caller is told instead, nothing run."""
    if preset and link:
        raise PlaygroundError("give a preset or a link, not both (a link names its preset)")
    if not link:
        name = preset or DEFAULT.preset
        if name not in PRESETS:
            raise unknown_preset(name, PRESETS)  # (in the CLI's words: their order and the close name differed)
        return Settings.from_preset(PRESETS[name])
    at_most(len(link), MAX_LINK_CHARS, "the length of the link (characters)")
    head, asked, _ = link.partition("?")  # a page's address, or its query alone (whose values may hold a '?')
    query = urllib.parse.urlsplit(link).query if asked and not {"=", "&"} & set(head) else link
    params, repeated = last_of_each(_utf8_pairs(query))
    _, _, params, ignored = experiment_from_query(params)  # an Experiments link's own inputs are not a run's (the
    settings, notices = from_query(params, custom_models_allowed(), replaced=False)  # link was refused), but checked
    # as the page's
    notices = repeated + ignored + notices
    if notices:
        raise PlaygroundError("the link is refused, nothing run (the page would run it without what it names): "
                              + "; ".join(notice[:200] for notice in notices[:5])
                              + f" (and {len(notices) - 5} more)" * (len(notices) > 5))
    return settings
