"""A run's settings (playground.presets.Settings) through URL query parameters and back (share links).

Reading a link never executes anything: each parameter is parsed and range-checked; unknown or
invalid ones are dropped with a notice, and model ids outside the presets are refused unless the
host allows custom models."""
import collections
import dataclasses
import hashlib
import json
import urllib.parse

from playground import session
from playground.config import BACKENDS, MAX_K, MAX_TEMPERATURE, MIN_TEMPERATURE, POLICIES, runnable_temperature, tree_fields
from playground.draft_ids import NO_PROBABILITIES, confidence_unused, draft_model
from playground.errors import PlaygroundError
from playground.limits import MAX_NEW_TOKENS, MAX_PROMPT_CHARS, MAX_REGEX_CHARS, MAX_SYSTEM_CHARS
from playground.session.host import compile_refused, is_way_of_drafting
from playground.typed import TooLong, decimal, switch, whole
from playground.presets import CONSTRAINT_FIELDS, Settings, all_presets, default_preset, drafts_for, family, hosted_models

MAX_LINK_CHARS = 8000  # servers refuse longer request lines (uvicorn answered 500 past ~16 KB)
NOT_UTF8 = "\ufffd"  # what a link's values read as where their bytes are not UTF-8 (the server decodes with replace)


def whole_number(lo, hi):
    """A parser of a link's whole number in [lo, hi] (number, text_within: the same for the others)."""
    def parse(v: str) -> int:
        try:
            value = whole(v)  # (not '1_0', '٤', '--5')
        except TooLong:
            raise ValueError(f"must be between {lo} and {hi}") from None
        except ValueError:
            raise ValueError("must be a whole number in ASCII digits") from None
        return _ranged(value, lo, hi)
    return parse


def number(lo, hi):
    def parse(v: str) -> float:
        try:
            value = decimal(v.strip())  # (not 'nan', '1_0', '٤')
        except ValueError as exc:
            raise ValueError(f"must be a number in ASCII digits, such as 0.7{'' if 'ASCII' in str(exc) else f', not {exc}'}") from None
        return _ranged(value, lo, hi)
    return parse


def _ranged(v, lo, hi):
    if not lo <= v <= hi:
        raise ValueError(f"must be between {lo} and {hi}")
    return v


def _bool(v: str) -> bool:
    try:
        return switch(v)
    except ValueError:
        raise ValueError("must be true or false") from None


def text_within(limit: int):
    def parse(v: str) -> str:
        if len(v) > limit:
            raise ValueError(f"longer than {limit} characters")
        return v
    return parse


def _choice(*options):
    def parse(v: str) -> str:
        if v not in options:
            raise ValueError(f"must be one of {', '.join(options)}")
        return v
    return parse


def _tree(v: str) -> str:
    """A tree's text as the link carries it; failing that, with spaces read as '+' (a '+' typed into
    a link by hand, '2,2+3', reaches the query as a space; a tree typed '2, 2' keeps its space)."""
    reasons = []
    for text in (v, v.replace(" ", "+")):
        try:
            tree_fields(text)
            return text
        except PlaygroundError as exc:
            reasons.append(str(exc))
    raise ValueError(reasons[0])  # (the tree as given: the second reading's showed its spaces as '+')


# The UI's slider ranges; a link may carry only what the sliders can show (Gradio would otherwise
# reset an out-of-range value to the slider's minimum without a word). New tokens and the thinking budget:
# the host's limit, as for /generate and the CLI (the page stopped at 1024 where the API took 2048; a
# budget the CLI took could not go into a link; a run of 1-7 tokens, which /generate and the CLI make, could not either).
EXACT_IN_A_PAGE = 2**53  # the largest seed a browser's number holds exactly (a run takes up to 2^63 - 1)
RANGES = {"k": (1, MAX_K), "temperature": (0.0, MAX_TEMPERATURE), "top_p": (0.05, 1.0), "top_k": (0, 200),
          "max_new_tokens": (1, MAX_NEW_TOKENS), "confidence": (0.05, 0.95), "think_budget": (0, MAX_NEW_TOKENS)}

TEMPERATURES = f"0 (greedy) or from {MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}"


def _temperature(v: str) -> float:
    t = number(*RANGES["temperature"])(v)
    if not runnable_temperature(t):  # (0.005 opened without a word, Share link made it, Run refused it)
        raise ValueError(f"must be {TEMPERATURES}")
    return t


PARSERS = {
    "preset": text_within(64), "target": text_within(200), "draft": text_within(200),
    "k": whole_number(*RANGES["k"]), "temperature": _temperature, "top_p": number(*RANGES["top_p"]),
    "top_k": whole_number(*RANGES["top_k"]), "seed": whole_number(0, EXACT_IN_A_PAGE), "max_new_tokens": whole_number(*RANGES["max_new_tokens"]),
    "prompt": text_within(MAX_PROMPT_CHARS), "system": text_within(MAX_SYSTEM_CHARS),
    "chat": _bool, "schema": text_within(20000), "regex": text_within(MAX_REGEX_CHARS), "grammar": text_within(MAX_LINK_CHARS),
    "backend": _choice(*BACKENDS),
    "compare": _bool, "schema_in_prompt": _bool, "policy": _choice(*POLICIES),
    "confidence": number(*RANGES["confidence"]), "compile": _bool, "tree": _tree,
    "think_budget": whole_number(*RANGES["think_budget"]),
}


def to_query(settings: Settings) -> str:
    """Query string of the settings that differ from the preset's own (short links); the preset
    name is always included, and PRESET_HASH: its preset's fingerprint (a link opened after the preset changed says so)."""
    base = _preset_defaults(settings.preset) or Settings()
    values = dataclasses.asdict(settings)
    keep = {k: _encode(v) for k, v in values.items() if k == "preset" or not _same(k, v, getattr(base, k))}
    keep[PRESET_HASH] = preset_fingerprint(base)
    for key, text in ((k, t) for k, t in keep.items() if k != PRESET_HASH):  # a link that says a value its reader
        # ignores is not the run it was made from
        try:
            read = PARSERS[key](text)
        except ValueError as exc:
            raise PlaygroundError(f"{key}={text[:40]!r} cannot go into a link: {exc}") from None
        if read != values[key]:  # (a tree '2,2 3', which Run refuses, opened as '2,2+3', a tree with a lookup branch)
            raise PlaygroundError(f"{key}={text[:40]!r} cannot go into a link: it would open as {read!r}")
    return urllib.parse.urlencode(keep)


PRESET_HASH = "preset_hash"  # a link's fingerprint of its preset's settings (preset_fingerprint)
HOST_CHOSEN = ("preset", "compile")  # not in the fingerprint: compile's default is the host's (on with CUDA)


def preset_fingerprint(preset: Settings) -> str:
    """8 hex digits of SHA-256 over the preset's settings: a link opened after its preset changed says so. A
    link carries only what differs from its preset, so a Space's update of a preset changed an old link's k,
    prompt or length without a word (a review). All of them, not only those the link leaves out: a reader
    that drops a blank value (schema=, replacing the preset's) would read another set."""
    left = {k: v for k, v in dataclasses.asdict(preset).items() if k not in HOST_CHOSEN}
    text = json.dumps(left, sort_keys=True, ensure_ascii=True)  # (ASCII: a lone surrogate in a preset cannot fail it)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _same(key: str, value, preset_value) -> bool:
    """A schema is the same one without its outer blank lines (the page shows it stripped: an untouched JSON
    preset's link carried its whole schema, 809 characters where 35 say it)."""
    return value.strip() == preset_value.strip() if key == "schema" else value == preset_value


def _encode(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


GRADIO_KEYS = {"view", "lang"}  # Gradio's own (?view=api opens the API page), not settings


def last_of_each(pairs) -> tuple[dict[str, str], list[str]]:
    """A link's (name, value) pairs -> (the last value of each name, as the server reads them; a notice
    for each name given more than once: k=3&k=7 opened on k 7 without a word)."""
    params, seen = {}, collections.Counter()
    for key, value in pairs:
        params[key] = value
        seen[key] += 1
    return params, [f"{key[:40]!r} is given {n} times: the last, {params[key][:40]!r}, is used"
                    for key, n in seen.items() if n > 1]


def from_query(params: dict[str, str], allow_custom: bool, drafts: list[str] | None = None,
               replaced: bool = True) -> tuple[Settings, list[str]]:
    """Query parameters -> (settings, notices about what was ignored). Without a preset the link's
    values apply to the default preset's settings. `drafts`: those a page's Draft box offers (a link
    opens on no other: the box refused it at Run), else every one the host runs (the web API). `replaced`:
    escapes that were not UTF-8 were read as U+FFFD (the page's server reads them so), and a U+FFFD is said."""
    notices, parsed = [], {}
    fingerprint = params.get(PRESET_HASH)
    for key, raw in params.items():
        if key.startswith("__") or key in GRADIO_KEYS or key == PRESET_HASH:  # the hosting page's (Spaces adds __sign) or Gradio's
            continue
        if key not in PARSERS:
            notices.append(f"ignored unknown parameter {key[:40]!r}")
            continue
        if replaced and NOT_UTF8 in raw:  # percent-escapes of another encoding (GBK's 你好) ran as '���', without a word (kept:
            notices.append(f"{key} holds U+FFFD, what escapes of another encoding than UTF-8 read as: check it")  # a
            # link made from a text holding one must open on it)
        try:
            parsed[key] = PARSERS[key](raw)
        except ValueError as exc:
            notices.append(f"ignored {key}={raw[:40]!r}: {exc}")
    presets = all_presets()
    name = parsed.pop("preset", None)
    if name not in presets:
        fallback = default_preset()
        if name is not None:
            notices.append(f"unknown preset '{name[:40]}': using '{fallback.name}'")
        name = fallback.name
    settings = Settings.from_preset(presets[name])
    if fingerprint is not None and name == params.get("preset") and fingerprint != preset_fingerprint(settings):
        notices.append(f"preset '{name}' has changed since this link was made: the settings the link leaves to it "
                       "open as the preset has them now, which may not be those the link was made with")
    _check_models(parsed, presets, allow_custom, notices, drafts)
    _one_constraint(parsed, notices)
    settings = dataclasses.replace(settings, **parsed)
    _check_pair(settings, presets, notices)
    return _check_compile(_check_tree(_check_policy(settings, notices), notices), notices), notices


def opening_notices(settings: Settings) -> list[str]:
    """What a link of these settings would be told on opening, across its settings (from_query's checks: a
    draft that cannot draft for its target, a policy or tree its way of drafting cannot use, compiled passes
    on a host that runs eager ones): Share link made such links in silence (an API review)."""
    notices = []
    _check_pair(settings, all_presets(), notices)
    _check_compile(_check_tree(_check_policy(settings, notices), notices), notices)
    return notices


def _check_compile(settings: Settings, notices: list[str]) -> Settings:
    """Compiled passes asked by a link where the host turned them off: dropped with a notice (the box is
    locked off, and a run would be eager anyway)."""
    if settings.compile and compile_refused():
        notices.append("ignored compile=true: this host runs eager passes (PLAYGROUND_COMPILED_PASSES=0)")
        return dataclasses.replace(settings, compile=False)
    return settings


def _check_policy(settings: Settings, notices: list[str]) -> Settings:
    """A draft policy the link's way of drafting cannot use, dropped with a notice on opening: under a
    token tree (Run refused it after the page had opened in silence), and the confidence stop under
    prompt lookup, whose guesses have no probabilities (it drafted as fixed, unsaid)."""
    if settings.tree.strip() and settings.policy != "fixed":
        notices.append(f"ignored policy={settings.policy!r}: a token tree drafts with the fixed policy")
    elif confidence_unused(settings.policy, settings.draft):
        notices.append(f"ignored policy='confidence': {NO_PROBABILITIES}")
    else:
        return settings
    return dataclasses.replace(settings, policy="fixed")


def _check_tree(settings: Settings, notices: list[str]) -> Settings:
    """A token tree Run would refuse beside the link's other settings (under prompt lookup or a cascade; a
    dynamic tree or a lookup branch when sampling), dropped with a notice on opening: the page opened in
    silence, its k slider saying the tree set each round, and Run refused it (a review)."""
    if not settings.tree.strip():
        return settings
    try:
        session.config_of(settings, with_tree=False)
    except PlaygroundError:  # (the other settings' own fault, which Run says)
        return settings
    try:
        session.config_with_tree(settings)
    except PlaygroundError as exc:
        notices.append(f"ignored tree={settings.tree[:40]!r}: {exc}")
        return dataclasses.replace(settings, tree="")
    return settings


def _one_constraint(parsed: dict, notices: list[str]) -> None:
    """A run takes one constraint: where a link carries more, the first of schema, regex and grammar is
    kept, the others dropped with a notice; the one it carries replaces the preset's own."""
    carried = [name for name in CONSTRAINT_FIELDS if parsed.get(name, "").strip()]
    for name in carried[1:]:
        notices.append(f"ignored {name}: the link also carries a {carried[0]}, and a run takes one constraint")
    if carried:
        parsed |= {name: "" for name in CONSTRAINT_FIELDS if name != carried[0]}


def _check_models(parsed: dict, presets: dict, allow_custom: bool, notices: list[str], drafts: list[str] | None) -> None:
    """Only models that some preset uses may come from a link, unless the host opts in; never a way
    of drafting (prompt lookup, a cascade, a feature draft) as the target. The presets' models are
    checked first: telling a feature draft looks for its folder, which a link must not make it do.
    On a page, only a draft its Draft box offers (the host runs a cascade over any of its models,
    the box offers the presets' own)."""
    known = hosted_models(presets)
    for key in ("target", "draft"):
        if not allow_custom and key in parsed and parsed[key] not in known:
            notices.append(f"ignored {key}={parsed.pop(key)!r}: this host only runs the models of its presets")
    if not allow_custom and drafts is not None and parsed.get("draft", drafts[0]) not in drafts:
        notices.append(f"ignored draft={parsed.pop('draft')!r}: the Draft box does not offer it (its cascades are the presets')")
    if "target" in parsed and is_way_of_drafting(parsed["target"]):
        notices.append(f"ignored target={parsed.pop('target')!r}: a way of drafting, not a model that writes on its own")


def _check_pair(settings: Settings, presets: dict, notices: list[str]) -> None:
    """A draft model that cannot draft for the link's target is said on opening, not after loading
    both when Run refuses them (left as the link has them: the link is the sender's to mend)."""
    model = draft_model(settings.draft)
    if model is not None and model != settings.target and not drafts_for(settings.target, model, presets):
        why = ("a feature draft reads the hidden states of the target a preset pairs it with"
               if is_way_of_drafting(model) else
               f"its tokenizer ({family(model)}) is not the target's ({family(settings.target)}); "
               "pick a draft of the target's family")
        notices.append(f"draft {settings.draft!r} cannot draft for target {settings.target!r}, and Run will "
                       f"refuse the pair: {why}")


def _preset_defaults(name: str) -> Settings | None:
    preset = all_presets().get(name)
    return Settings.from_preset(preset) if preset else None


def share_url(base_url: str, settings: Settings, extra: dict[str, str] | None = None) -> str:
    """The link (the settings, then `extra` parameters: the Experiments tab's), or PlaygroundError
    when it would be longer than servers accept."""
    parts = []
    for what, encode in (("the settings", lambda: to_query(settings)),
                         ("the Experiments tab's values or prompts", lambda: urllib.parse.urlencode(extra or {}))):
        try:  # (a sweep prompt's lone surrogate was said to be the settings')
            parts.append(encode())
        except UnicodeEncodeError as exc:
            raise PlaygroundError(f"{what} hold text that is not valid UTF-8 (a lone surrogate at character "
                                  f"{exc.start}): it cannot go into a link") from None
    if told := opening_notices(settings):  # (made in silence, a link Run refuses or that opens on other settings)
        raise PlaygroundError(f"this link would not open on these settings: {told[0]}")
    url = base_url.split("?")[0] + "?" + "&".join(q for q in parts if q)
    if len(url) > MAX_LINK_CHARS:
        raise PlaygroundError(f"this link would be {len(url)} characters long, more than servers accept "
                              f"({MAX_LINK_CHARS}); shorten the prompt, system prompt{', sweep prompts' * bool(extra)} or "
                              "constraint (non-ASCII text takes 6 to 12 characters per letter in a link: é 6, 你 9, 😀 12)")
    return url


TEXTS = ("prompt", "system", *CONSTRAINT_FIELDS)  # named when they differ, not quoted


def changed_since(shown: dict | None, now: Settings) -> list[str]:
    """What the settings `now` hold unlike `shown` (the settings of the run whose output the page shows,
    as dataclasses.asdict gives them; None: no run yet), each as 'k 4 → 6' or 'the prompt'."""
    if not shown:
        return []
    changed = []
    for key, value in dataclasses.asdict(now).items():
        if key not in shown or _same(key, value, shown[key]):
            continue
        name = key.replace("_", " ")
        changed.append(f"the {name}" if key in TEXTS else f"{name} {_encode(shown[key])[:40]} → {_encode(value)[:40]}")
    return changed
