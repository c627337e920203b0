"""The page's inputs: Settings <-> component values (typed, for API callers too), presets and
share links applied to them, the constraint box's checks as the user types."""
import html
import inspect
import json
import logging
import math
import os
import re

import gradio as gr

from playground.config import BACKENDS
from playground.constraints import from_user, read_constraint, worker
from playground.constraints.reading import READ_SECONDS
from playground.errors import PlaygroundError, blamed_on, for_log, shown, without_bidi_controls
from playground.limits import (MAX_GRAMMAR_CHARS, MAX_NAME_CHARS, MAX_PROMPT_CHARS, MAX_REGEX_CHARS, MAX_SCHEMA_TEXT_CHARS,
                               MAX_SYSTEM_CHARS, at_most)
from playground.metrics import counted
from playground.draft_ids import NGRAM, draft_model, uses_lookup
from playground.session import check_prompt_text
from playground.session.host import custom_models_allowed, hub_resolves, is_way_of_drafting
from playground.presets import (CONSTRAINT_FIELDS, Settings, all_presets, constraint_of, default_preset, drafts_for, family, gpu_host,
                                model_here)
from playground.ui import render
from playground.ui.box_refusals import popup
from playground.ui.experiment_link import TAB, experiment_from_query
from playground.ui.live import checked_settings
from playground.ui.share import changed_since, from_query, last_of_each, share_url

PRESETS = all_presets()
DEFAULT = Settings.from_preset(default_preset())
log = logging.getLogger("playground.ui")
DRAFTS = sorted({m for p in PRESETS.values() for m in (p.target, p.draft)} | {NGRAM})  # a preset's target may draft for a larger one
TARGETS = [m for m in DRAFTS if not is_way_of_drafting(m)]  # a small draft model may also write alone
KIND_FIELDS = {"JSON schema": "schema", "regex": "regex", "grammar": "grammar"}  # the page's kind -> Settings' field
CONSTRAINT_KINDS = ["none", *KIND_FIELDS]
KIND_LIMITS = {"schema": MAX_SCHEMA_TEXT_CHARS, "regex": MAX_REGEX_CHARS, "grammar": MAX_GRAMMAR_CHARS}
EQUATION = """root ::= expr " = " number
expr ::= term (" " [-+] " " term)*
term ::= factor (" " [*/] " " factor)*
factor ::= number | "(" expr ")"
number ::= [0-9]{1,6}
"""
SQL = """start: "SELECT " columns " FROM " NAME (" WHERE " condition)? ";"
columns: "*" | NAME (", " NAME)*
condition: NAME " " OP " " value
OP: "=" | "<" | ">" | "<=" | ">=" | "!="
value: NUMBER | "'" /[A-Za-z0-9 ]{1,20}/ "'"
NAME: /[a-z_][a-z0-9_]{0,20}/
%import common.NUMBER
"""
EXAMPLE_CONSTRAINTS = {  # name -> (kind, constraint, a prompt it answers)
    "JSON: person": ("JSON schema", json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
        "required": ["name", "age", "languages"], "additionalProperties": False}, indent=1),
        "Describe a fictional person who speaks several languages, as JSON with their name, age and languages."),
    **({"JSON: package metadata": ("JSON schema", PRESETS["demo-json"].schema.strip(), PRESETS["demo-json"].prompt)}
       if "demo-json" in PRESETS else {}),
    "regex: ISO date": ("regex", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
                        "On what date did Apollo 11 land on the Moon? Answer with the date only."),
    "regex: IPv4": ("regex", r"((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])",
                    "What is the IPv4 address of Google's public DNS resolver? Answer with the address only."),
    "regex: semantic version": ("regex", r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})",
                                "Give the version number of a library's first stable release, as major.minor.patch."),
    "grammar: equation (GBNF)": ("grammar", EQUATION, "What is 17 times 3, plus 4? Write it as an equation."),
    "grammar: SQL query (Lark)": ("grammar", SQL, "Write an SQL query that lists the names of the users older than 30 "
                                  "in the table users. Answer with the query only."),
}
STOCK_PROMPTS = {p.prompt for p in PRESETS.values()} | {example[2] for example in EXAMPLE_CONSTRAINTS.values()}
STOCK_SYSTEMS = {p.system for p in PRESETS.values()}
STOCK_CONSTRAINTS = ({text.strip() for p in PRESETS.values() for text in (p.schema, p.regex, p.grammar)}
                     | {example[1].strip() for example in EXAMPLE_CONSTRAINTS.values()})


def _typed_by_user(text: str | None, stock: set[str]) -> bool:
    """Whether a box holds the user's own text: not empty, and none of a preset's or an example's."""
    return isinstance(text, str) and bool(text.strip()) and text not in stock and text.strip() not in stock


def load_example(name: str | None, prompt: str) -> tuple:
    """An example constraint -> (kind, constraint, prompt): its own prompt too where the prompt box
    holds none of the user's (empty, a preset's or another example's), nothing typed replaced."""
    if not name or name not in EXAMPLE_CONSTRAINTS:
        return (gr.skip(),) * 3
    kind, text, example_prompt = EXAMPLE_CONSTRAINTS[name]
    return kind, text, gr.skip() if _typed_by_user(prompt, STOCK_PROMPTS) else example_prompt


def named_inputs(fn, leading: tuple[str, ...] = ()):
    """fn(<Gradio's own arguments>, *values) with its values named in its signature: `leading`,
    then the settings (settings_from_inputs' parameters, the page's ui.settings in order). The API
    page and gradio_client then name each input (prompt, k, temperature...) instead of param_0,
    param_1..., and accept them by name; every one keeps the component's value as its default."""
    own = [p for p in inspect.signature(fn).parameters.values() if p.kind != inspect.Parameter.VAR_POSITIONAL]
    named = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
             for name in (*leading, *SETTING_NAMES)]
    fn.__signature__ = inspect.Signature(own + named)
    return fn


def settings_from_inputs(preset, target, draft, k, temperature, top_p, top_k, seed, max_new_tokens, prompt,
                         system, chat, kind, constraint, backend, compare, schema_in_prompt, policy,
                         confidence, compile=False, tree="", think_budget=0) -> Settings:
    """Component values (or an API caller's) -> Settings; a wrong type, or a text past its host
    limit (before anything reads it: the export would echo it many times over), is a
    PlaygroundError naming it."""
    field = KIND_FIELDS.get(kind)  # "none" keeps the editor's text unused
    constraint = bounded_text("constraint", constraint, KIND_LIMITS[field or "schema"])
    return Settings(preset=bounded_text("preset", preset), target=bounded_text("target", target),
                    draft=bounded_text("draft", draft),
                    k=typed("k", k, int), temperature=typed("temperature", temperature, float),
                    top_p=typed("top_p", top_p, float), top_k=typed("top_k", top_k, int), seed=typed("seed", seed, int),
                    max_new_tokens=typed("max_new_tokens", max_new_tokens, int),
                    prompt=bounded_text("prompt", prompt, MAX_PROMPT_CHARS),
                    system=bounded_text("system prompt", system, MAX_SYSTEM_CHARS),
                    chat=typed("chat", chat, bool),
                    **{name: constraint if name == field else "" for name in CONSTRAINT_FIELDS},
                    backend=bounded_text("backend", backend), compare=typed("compare", compare, bool),
                    schema_in_prompt=typed("schema_in_prompt", schema_in_prompt, bool),
                    policy=bounded_text("policy", policy), confidence=typed("confidence", confidence, float),
                    compile=typed("compile", compile, bool), tree=bounded_text("tree", tree),
                    think_budget=typed("think_budget", think_budget, int))


SETTING_NAMES = tuple(inspect.signature(settings_from_inputs).parameters)


def settings_to_run(*values) -> Settings:
    """settings_from_inputs, for a run or its share link: a kind of constraint picked with its box left empty
    is refused (it ran unconstrained, without a word; a link of it opened on no constraint)."""
    named = dict(zip(SETTING_NAMES, values))
    kind, text = named.get("kind"), named.get("constraint")
    if kind in KIND_FIELDS and isinstance(text, str) and not text.strip():
        exc = PlaygroundError(f"the constraint is empty: write a {KIND_FIELDS[kind]} (the Examples have one), "
                              "or set Constraint to none")
        exc.where = "constraint"
        raise exc
    return settings_from_inputs(*values)


TEXT_PLACES = {"target": "model", "draft": "model", "prompt": "prompt", "constraint": "constraint", "tree": "tree"}


def bounded_text(name: str, value, limit: int = MAX_NAME_CHARS) -> str:
    """A text input within its length limit; a refusal is said beside its box (TEXT_PLACES), not under Run."""
    with blamed_on(TEXT_PLACES.get(name, "run")):
        value = typed(name, value, str)
        at_most(len(value), limit, f"the {name}'s length (characters)")
    return value


def user_error(exc: PlaygroundError, stays: bool = False, page: bool = True) -> gr.Error:
    """A user's mistake for a popup (page) or an API caller: one line in the server log, no traceback.
    stays: the popup stays until closed (Gradio's fades after 10 s), for a long message far from its button."""
    log.info("refused: %s", for_log(exc))
    return popup(str(exc), duration=None if stays else 10) if page else gr.Error(str(exc), print_exception=False)


def typed(name: str, value, kind: type):
    """An API value of the expected type (None is the empty value); ints must be whole numbers."""
    if value is None:
        return kind()
    if kind is str and isinstance(value, str) or kind is bool and isinstance(value, bool):
        return value
    if kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
        if kind is int and isinstance(value, float) and not math.isfinite(value):
            raise PlaygroundError(f"{name} must be a whole number, got {shown(value)}")
        if kind is int and value != int(value):
            raise PlaygroundError(f"{name} must be a whole number, got {shown(value)}")
        return kind(value)
    as_text = " (the schema as JSON text: json.dumps(schema))" if name == "schema" and isinstance(value, (dict, list)) else ""
    raise PlaygroundError(f"{name} must be {'a number' if kind in (int, float) else 'a ' + kind.__name__}{as_text}, "
                          f"got {shown(str(value))} ({type(value).__name__})")


def page_constraint(s: Settings) -> tuple[str, str]:
    """(the page's constraint kind, the editor's text) for these settings: ("none", "") without one."""
    field, text = constraint_of(s) or (None, "")
    kind = next((kind for kind, name in KIND_FIELDS.items() if name == field), "none")
    return kind, text.strip() if field == "schema" else text


def inputs_from_settings(s: Settings) -> list:
    kind, text = page_constraint(s)
    return [s.preset, s.target, s.draft, s.k, s.temperature, s.top_p, s.top_k, s.seed, s.max_new_tokens, s.prompt,
            s.system, s.chat, kind, text, s.backend, s.compare, s.schema_in_prompt, s.policy, s.confidence, s.compile,
            s.tree, s.think_budget]


def preset_note(name: str) -> str:
    preset = PRESETS.get(name)
    if preset is None:
        return ""
    if not hub_resolves() and not preset.here:  # (a newcomer offline learnt it from Run's refusal)
        return (f"{preset.purpose} *Its models are not on this host, and the hub cannot be reached to download them: "
                "Run refuses it here.*")
    if preset.gpu and not gpu_host():  # (a newcomer learnt it from Run's refusal)
        return (f"{preset.purpose} *Made for a GPU, which this host lacks: Run refuses it where memory or the "
                "download falls short, and elsewhere it runs very slowly on the CPU.*")
    return f"{preset.purpose}" + (" *A GPU is recommended.*" if preset.gpu else "")


def preset_choices() -> list[tuple[str, str]]:
    """The Preset list as (label, name): on a host without a GPU, the GPU presets say so before one is picked;
    without the hub, those whose models are not here."""
    gpu, cut_off = gpu_host(), not hub_resolves()

    def label(name: str, preset) -> str:
        marks = ["needs a GPU"] * (preset.gpu and not gpu) + ["not downloaded"] * (cut_off and not preset.here)
        return f"{name} ({'; '.join(marks)})" if marks else name
    return [(label(name, preset), name) for name, preset in PRESETS.items()]


def model_choices(models: list[str]) -> list[tuple[str, str]]:
    """The Target or Draft list as (label, model): without the hub, the models not here say so, as the Preset list's
    do (a model picked by hand was refused by Run alone)."""
    cut_off = not hub_resolves()
    return [(f"{m} (not downloaded)" if cut_off and not model_here(m) else m, m) for m in models]


def apply_preset(name: str, prompt: str = "", system: str = "", kind: str = "none", constraint: str = ""):
    """The preset's settings -> the page's ui.settings values, its note, the constraint section. What the user typed
    (a prompt, a system prompt, a constraint that is no preset's or example's) is kept, and the note
    says so: a prompt written, then a pair picked to try it on, was replaced without a word."""
    if name not in PRESETS:
        raise user_error(PlaygroundError(f"unknown preset '{name[:40]}'"))
    settings = Settings.from_preset(PRESETS[name])
    values, section = inputs_from_settings(settings), constraint_section(settings)
    kept = []  # (its words in the note, the settings it holds)
    if _typed_by_user(prompt, STOCK_PROMPTS):
        kept.append(("your prompt", ("prompt",)))
    if _typed_by_user(system, STOCK_SYSTEMS):
        kept.append(("your system prompt", ("system",)))
    if kind in KIND_FIELDS and _typed_by_user(constraint, STOCK_CONSTRAINTS):  # KIND_FIELDS: the note's word too
        kept.append((f"your {KIND_FIELDS[kind]}", ("kind", "constraint", "schema_in_prompt")))
        section = gr.skip()  # open: it holds the user's
    for _, names in kept:
        for box in names:
            values[SETTING_NAMES.index(box)] = gr.skip()
    note = preset_note(name)
    if kept:
        note += (f"\n\n*Kept {_joined([words for words, _ in kept])}: empty {'its box' if len(kept) == 1 else 'a box'} "
                 "and pick the preset again for the preset's own.*")
    return values + [note, section]


def apply_preset_chosen(name: str | None, prompt: str, system: str, kind: str, constraint: str):
    """The Preset box's .input: as apply_preset; name None where the box was only left (Tab, a click away: Gradio
    sends its .input then too), as page_style.PRESET_LEFT_JS tells: nothing then."""
    if name is None:
        return [gr.skip()] * (len(SETTING_NAMES) + 2)
    return apply_preset(name, prompt, system, kind, constraint)


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def k_with_tree(tree: str):
    """The k slider under a token tree, which drafts its own depths: greyed, saying why (its value kept)."""
    on_tree = bool(str(tree or "").strip())
    return gr.update(interactive=not on_tree, info="unused: the token tree sets each round's drafts" if on_tree else "")


ADVANCED_FIELDS = ("top_p", "top_k", "seed", "chat", "system", "backend", "compile", "tree")  # the Advanced section's


def advanced_section(settings: Settings):
    """The Advanced section opens when a link sets something in it otherwise than its preset does: a
    link's token tree, seed or top-p were restored out of sight (only "unused: the token tree..."
    under k hinted at the tree)."""
    base = Settings.from_preset(PRESETS[settings.preset]) if settings.preset in PRESETS else DEFAULT
    return gr.update(open=True) if any(getattr(settings, f) != getattr(base, f) for f in ADVANCED_FIELDS) else gr.skip()


def constraint_section(settings: Settings):
    """The Structured output section opens when the settings carry a constraint, so it is seen."""
    return gr.update(open=True) if constraint_of(settings) else gr.skip()


REASONING = {"qwen3", "deepseek-r1-distill-qwen"}  # families that think before they answer (</think>)


def think_budget_shown(target: str, budget: int | float = 0):
    """The thinking budget is offered for reasoning targets, targets of unknown family (a custom
    model may reason) and wherever a budget is set."""
    return gr.update(visible=family(target) in REASONING | {None} or bool(budget))


def draft_for(target: str, draft: str):
    """A target picked by hand: its draft kept where it can draft for it (prompt lookup; a model of
    the target's tokenizer family; a feature draft only for the target a preset pairs it with), else
    the draft model a preset pairs with this target, else one a preset pairs with a target of its
    family (drafts are the small ones), else prompt lookup; a target of unknown family keeps it."""
    wanted = family(target)
    if wanted is None or draft == NGRAM or drafts_for(target, draft_model(draft), PRESETS):
        return gr.skip()
    paired = [p.draft for p in PRESETS.values() if p.target == target]
    kin = [p.draft for p in PRESETS.values() if family(p.target) == wanted and not is_way_of_drafting(p.draft)]
    found = [d for d in paired + kin if d != target and not uses_lookup(d) and d in DRAFTS]
    return found[0] if found else NGRAM


def constraint_editor(kind: str):
    """JSON highlighting for a schema only (a regex or a grammar is not JSON); no editor for no
    constraint (its text stays, for when a kind is picked again)."""
    return gr.update(language="json" if kind == "JSON schema" else None, visible=kind != "none")


def example_settings(name: str, system: str, kind: str, constraint: str):
    """An offline example clicked: its preset and prompt, keeping (and saying so) a system prompt or constraint
    the user typed, as the Preset box does (an example's row emptied them without a word; a review)."""
    return apply_preset(name, "", system, kind, constraint)


def restore_from_url(request: gr.Request):
    """demo.load: the Playground's settings and the Experiments tab's inputs from the page's query
    parameters, and the tab the link opens on; what is ignored is said, never run.
    -> the page's ui.settings values, the preset's note, the constraint and Advanced sections, the Experiments inputs, the tabs,
    the notices."""
    params, repeated = last_of_each(request.query_params.multi_items()) if request is not None else ({}, [])
    experiment, opens, params, notices = experiment_from_query(params)
    settings, more = from_query(params, custom_models_allowed(), DRAFTS) if params else (DEFAULT, [])
    note = _listed(repeated + more + notices)
    return [*inputs_from_settings(settings), preset_note(settings.preset), constraint_section(settings),
            advanced_section(settings), *experiment.inputs(), gr.Tabs(selected=TAB) if opens else gr.skip(), note and f"**Link notices**\n{note}"]


NOTICES_SHOWN, NOTICE_CHARS = 20, 300  # a hand-made link can carry thousands of parameters, or long ones


def _listed(notices: list[str]) -> str:
    """The notices as a Markdown list, the first NOTICES_SHOWN of them (each cut at NOTICE_CHARS: a
    parser's message can quote the whole value) and a count of the rest: a notice past the page's
    value bound would be refused when its Dismiss button is drawn."""
    shown = [f"- {render.md_escape(n if len(n) <= NOTICE_CHARS else n[:NOTICE_CHARS] + '…')}\n" for n in notices[:NOTICES_SHOWN]]
    rest = len(notices) - NOTICES_SHOWN
    return "".join(shown) + (f"- and {rest} more ignored\n" if rest > 0 else "")


def make_share_link(request: gr.Request, *values) -> str:
    """A link to this page (whatever host and port serve it) that restores every setting."""
    try:
        settings = settings_to_run(*values)  # (a kind picked, its box blank: the link carried the blanks, and
        # opened on no constraint, unsaid)
        check_prompt_text(settings.prompt, settings.system)  # (an empty prompt's link was made in silence, and
        # opened on a prompt Run refuses)
        checked_settings(settings)  # (a tree under the schedule policy: made in silence, opened as fixed; a review)
        return share_url(page_url(request), settings)
    except PlaygroundError as exc:
        raise user_error(exc, stays=True) from None  # (the link box shows nothing: the popup is the only word)


def share_note(shown: dict | None, *values) -> str:
    """Beside a new share link: what it holds unlike the output shown (settings changed since, or during,
    the run that made it), so that nobody sends a link expecting it to open on that output."""
    if not (changed := _changed_since_shown(shown, values)):
        return ""  # (or no link was made: its popup said why)
    return (f'<p class="share-note">This link holds the settings on the page now, not those of the output shown: since '
            f"its run, {html.escape(changed)}.</p>")


def shown_note(shown: dict | None, *values) -> str:
    """Above the output: that it is of other settings than the page's now, and which (a preset chosen after a
    run left its output and metrics beside the new settings, unmarked)."""
    if not (changed := _changed_since_shown(shown, values)):
        return ""
    return (f'<p class="shown-note">The output below is of other settings: since its run, {html.escape(changed)}. '
            "Run to see these.</p>")


def _changed_since_shown(shown: dict | None, values) -> str:
    """'k 4 → 6, the prompt': the page's settings unlike the shown run's; '' where the same or not settings."""
    try:
        return ", ".join(changed_since(shown, settings_to_run(*values)))
    except PlaygroundError:
        return ""


SPACE_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")  # a Space's owner/name


def page_url(request: gr.Request | None) -> str:
    """The page's own address, as the browser sees it (behind a proxy: its forwarded host and scheme). On a
    Hugging Face Space (SPACE_ID, set by its host) its page on the Hub, which hands its query to the app it frames
    on load: a link to the bare *.hf.space address showed the app without the Space's title, likes and Duplicate
    button, and a private Space's opened only with a signed token (a Space host's review)."""
    if SPACE_ID.fullmatch(space := os.environ.get("SPACE_ID", "")):
        return f"https://huggingface.co/spaces/{space}"
    if request is None or request.request is None:
        return "http://localhost:7860/"
    url, headers = request.request.base_url, request.headers
    host = _first(headers.get("x-forwarded-host")) or _first(headers.get("host")) or ""
    scheme = _first(headers.get("x-forwarded-proto")) or url.scheme
    host = host if re.fullmatch(r"[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?", host) else url.netloc
    scheme = scheme if scheme in ("http", "https") else url.scheme  # (a caller's headers: javascript://x"><script>)
    return f"{scheme}://{host}{url.path}"


def _first(value: str | None) -> str:
    """A forwarded header's first value ("a, b" after two proxies)."""
    return (value or "").split(",")[0].strip()


CONSTRAINT_OK = '<span class="badge badge-ok">looks fine</span>'


def _refused(exc: PlaygroundError, hint: str = "") -> str:
    """A refusal as typed, drawn as Run's refusal of it is (render.error; not said as an alert at each keystroke): a
    bold pill that became a field's message at Run read as two errors, its box jumping (a visual review)."""
    return f'<div class="field-error" id="constraint-error">{html.escape(str(exc) + hint)}</div>'


def _schema_under(kind: str, text: str) -> str:
    """Where a regex or a grammar refused is a JSON schema (a kind switched keeps its text: llguidance's
    "repetition operator missing expression" for a schema puzzled a walk-through), what to pick."""
    if kind == "JSON schema" or not text.lstrip().startswith("{"):
        return ""
    try:
        schema = isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return ""
    return "; this text is a JSON schema: set Constraint to JSON schema" if schema else ""


def _not_checked(compiled: bool) -> str:
    return CONSTRAINT_OK if compiled else (f'<span class="badge">not checked as typed (over {READ_SECONDS:g} s): '
                                           'Run checks it in full</span>')


def check_constraint(kind: str, text: str, backend: str = BACKENDS[0], compiled: bool = False) -> str:
    """Checks as the user types: JSON, meta-schema, regex or grammar syntax, and the backend's own reading of
    them (what Run would refuse before the model's tokenizer is involved). compiled: a run just
    compiled it (a reading past its time bound is then no news)."""
    if kind not in KIND_FIELDS:
        return ""
    if not (text or "").strip():  # (a blank editor said nothing: a newcomer's review)
        return (f'<div class="constraint-note">write a {KIND_FIELDS[kind]} above, or pick one from the Examples '
                "below</div>")
    with worker.ceiling(READ_SECONDS):  # the whole check (every visitor's checks wait in one lane: 12 slow
        try:  # patterns held it the parse's 15 s)
            spec = from_user(**{KIND_FIELDS[kind]: text}, backend=backend)
        except worker.OverCeiling:
            return _not_checked(compiled)
        except PlaygroundError as exc:  # past the parse's own bound too: Run refuses it
            return _refused(exc, _schema_under(kind, text))
        try:
            notes = read_constraint(spec)
        except worker.TooSlow:
            return _not_checked(compiled)
        except PlaygroundError as exc:
            return _refused(exc, _schema_under(kind, text))
    if kind == "regex" and _schema_under(kind, text):  # (Python reads its braces as themselves: it is a regex)
        notes = ["this text is a JSON schema: as a regex it matches only this very text; set Constraint to JSON schema",
                 *notes]
    notes = _edge_spaces(text) * (kind == "regex") + notes
    return CONSTRAINT_OK + "".join(f'<div class="constraint-note">{html.escape(without_bidi_controls(note))}</div>' for note in notes)


def _edge_spaces(pattern: str) -> list[str]:
    """A regex's blanks (spaces, tabs, newlines) at either end are the output's: the editor's Tab writes them (a keyboard user Tabbing
    on wrote 14, and the run's output began with them, "valid")."""
    ends = [f"{where} with {counted(len(edge), 'blank')}" for where, edge in
            (("starts", pattern[:len(pattern) - len(pattern.lstrip())]), ("ends", pattern[len(pattern.rstrip()):])) if edge]
    return [f"the pattern {' and '.join(ends)}: the output must too (Tab in the editor writes spaces; Esc, then "
            "Tab, leaves it)"] if ends else []


def chain_theory(settings: Settings) -> bool:
    """Whether the chain's expected tokens per round, and the speedup calculator's curve, apply: a
    draft model drafting a chain of fixed k (not a tree, whose acceptance counts its nodes; not
    prompt lookup, whose guesses are not drawn one by one; not a k the policy changes each round)."""
    return not beyond_theory(settings)


def beyond_theory(settings: Settings) -> str:
    """What of these settings the chain's formula does not describe ("prompt lookup", "a token tree",
    "the schedule policy"), or "" where it does (chain_theory)."""
    if settings.draft == NGRAM:
        return "prompt lookup"
    if settings.tree.strip():
        return "a token tree"
    return "" if settings.policy == "fixed" else f"the {settings.policy} policy"
