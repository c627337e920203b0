"""Speculative decoding & structured output playground: the web UI. Layout and wiring only; the
`playground` package does the work and this module renders what it yields."""
import spaces  # noqa: F401  (first: on ZeroGPU it must load before anything touches CUDA)

import html
import json
import logging
import os
import pathlib
import re
import tempfile
import time

import gradio as gr

from playground.ui import experiments, live, plots, race, render
from playground.constraints.spec import check_regex, parse_schema
from playground.errors import PlaygroundError
from playground.limits import CONCURRENCY, MAX_SWEEP_PROMPTS, at_most
from playground.metrics import engine_seconds, expected_speedup, expected_tokens_per_round, identity_note, summarize
from playground.models.loading import NGRAM, custom_models_allowed, load_pair
from playground.ui.pacing import paced
from playground.presets import all_presets, default_preset
from playground.ui.share import RANGES, Settings, from_query, share_url
from playground.measure.speedup import MAX_BLOCKS

PRESETS = all_presets()
DEFAULT = Settings.from_preset(default_preset())
GPU_SECONDS = int(os.environ.get("PLAYGROUND_GPU_SECONDS", "120"))  # ZeroGPU budget per run
DOWNLOADS = pathlib.Path(tempfile.mkdtemp(prefix="playground-downloads-"))  # run JSON and sweep CSV files
STOPS = pathlib.Path(tempfile.mkdtemp(prefix="playground-stops-"))  # a file per session whose run must stop
DOWNLOAD_TTL_S = 3600  # older downloads are removed (Gradio's cached copies too: delete_cache below)
log = logging.getLogger("playground.app")
MODELS = sorted({m for p in PRESETS.values() for m in (p.target, p.draft)})
CONSTRAINT_KINDS = ["none", "JSON schema", "regex"]
SWEEP_DEFAULTS = {"k": "1,2,3,4,6,8", "temperature": "0,0.3,0.7,1.0"}  # values reset when the axis changes
EXAMPLE_CONSTRAINTS = {
    "JSON: person": ("JSON schema", json.dumps({"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "languages": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
        "required": ["name", "age", "languages"], "additionalProperties": False}, indent=1)),
    **({"JSON: package metadata": ("JSON schema", PRESETS["demo-json"].schema.strip())} if "demo-json" in PRESETS else {}),
    "regex: ISO date": ("regex", r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"),
    "regex: IPv4": ("regex", r"((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])"),
    "regex: semantic version": ("regex", r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})"),
}
ABOUT = """
**How to read the stream.** A *draft* model guesses `k` tokens; the *target* checks all of them in one
forward pass. Green tokens are guesses the target kept, red struck-through ones it refused (they are not
part of the text), orange is the target's own token where it refused, blue the extra token it adds when
every guess was kept, grey a token the constraint forces. Hover a token for its probabilities.

**Why the output does not change.** Under greedy decoding a guess is kept only if it is the target's own
choice, so the text is exactly the target's. When sampling, a guess `x` is kept with probability
`min(1, p_target(x) / p_draft(x))` and a refusal draws from `max(0, p_target - p_draft)` renormalised:
the output has exactly the target's distribution.

**Expected tokens per target pass** when each guess is kept with probability `α` and the draft makes `k`
guesses: `(1 - α^(k+1)) / (1 - α)`. `α` is per token; the *acceptance rate* shown (kept / proposed) is lower,
because guesses after a refusal are proposed but never judged. The speedup also pays for the draft: divide by
`k * c + 1`, where `c` is a draft pass's cost in target passes.
"""


# -- settings <-> components -----------------------------------------------------------------------

def settings_from_inputs(preset, target, draft, k, temperature, top_p, top_k, seed, max_new_tokens, prompt,
                         system, chat, kind, constraint, backend, compare, schema_in_prompt, policy,
                         confidence, compile=False) -> Settings:
    """Component values (or an API caller's) -> Settings; a wrong type is a PlaygroundError naming it."""
    constraint = typed("constraint", constraint, str)
    return Settings(preset=typed("preset", preset, str), target=typed("target", target, str),
                    draft=typed("draft", draft, str), k=typed("k", k, int), temperature=typed("temperature", temperature, float),
                    top_p=typed("top_p", top_p, float), top_k=typed("top_k", top_k, int), seed=typed("seed", seed, int),
                    max_new_tokens=typed("max_new_tokens", max_new_tokens, int), prompt=typed("prompt", prompt, str),
                    system=typed("system", system, str), chat=typed("chat", chat, bool),
                    schema=constraint if kind == "JSON schema" else "", regex=constraint if kind == "regex" else "",
                    backend=typed("backend", backend, str), compare=typed("compare", compare, bool),
                    schema_in_prompt=typed("schema_in_prompt", schema_in_prompt, bool),
                    policy=typed("policy", policy, str), confidence=typed("confidence", confidence, float),
                    compile=typed("compile", compile, bool))


def user_error(exc: PlaygroundError) -> gr.Error:
    """A user's mistake for an API caller or a popup: one line in the server log, no traceback."""
    log.info("refused: %s", exc)
    return gr.Error(str(exc), print_exception=False)


def typed(name: str, value, kind: type):
    """An API value of the expected type (None is the empty value); ints must be whole numbers."""
    if value is None:
        return kind()
    if kind is str and isinstance(value, str) or kind is bool and isinstance(value, bool):
        return value
    if kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
        if kind is int and value != int(value):
            raise PlaygroundError(f"{name} must be a whole number, got {value!r}")
        return kind(value)
    raise PlaygroundError(f"{name} must be {'a number' if kind in (int, float) else 'a ' + kind.__name__}, "
                          f"got {str(value)[:40]!r} ({type(value).__name__})")


def inputs_from_settings(s: Settings) -> list:
    kind = "JSON schema" if s.schema.strip() else "regex" if s.regex.strip() else "none"
    text = s.schema.strip() or s.regex
    return [s.preset, s.target, s.draft, s.k, s.temperature, s.top_p, s.top_k, s.seed, s.max_new_tokens, s.prompt,
            s.system, s.chat, kind, text, s.backend, s.compare, s.schema_in_prompt, s.policy, s.confidence, s.compile]


def preset_note(name: str) -> str:
    preset = PRESETS.get(name)
    if preset is None:
        return ""
    return f"{preset.purpose}" + (" *A GPU is recommended.*" if preset.gpu else "")


def apply_preset(name: str):
    if name not in PRESETS:
        raise user_error(PlaygroundError(f"unknown preset '{name[:40]}'"))
    settings = Settings.from_preset(PRESETS[name])
    return inputs_from_settings(settings) + [preset_note(name), constraint_section(settings)]


def constraint_section(settings: Settings):
    """The Structured output section opens when the settings carry a constraint, so it is seen."""
    return gr.update(open=True) if (settings.schema.strip() or settings.regex.strip()) else gr.skip()


def constraint_editor(kind: str):
    """JSON highlighting for a schema only (a regex is not JSON)."""
    return gr.update(language="json" if kind == "JSON schema" else None)


def example_settings(name: str, prompt: str):
    values = apply_preset(name)
    return [*values[:9], prompt, *values[10:]]


def restore_from_url(request: gr.Request):
    """demo.load: settings from the page's query parameters; what is ignored is said, never run."""
    params = dict(request.query_params) if request is not None else {}
    if not params:
        return inputs_from_settings(DEFAULT) + [preset_note(DEFAULT.preset), constraint_section(DEFAULT), ""]
    settings, notices = from_query(params, custom_models_allowed())
    note = "".join(f"- {_md_escape(n)}\n" for n in notices)
    return inputs_from_settings(settings) + [preset_note(settings.preset), constraint_section(settings),
                                             note and f"**Link notices**\n{note}"]


def _md_escape(text: str) -> str:
    """User text shown through Markdown: every Markdown or HTML character backslash-escaped, so
    it shows as typed, with no HTML, links or formatting of its own."""
    return "".join("\\" + c if c in "\\`*_{}[]()<>#+!|~&" else c for c in text)


def make_share_link(request: gr.Request, *values) -> str:
    """A link to this page (whatever host and port serve it) that restores every setting."""
    try:
        return share_url(page_url(request), settings_from_inputs(*values))
    except PlaygroundError as exc:
        raise user_error(exc) from None


def page_url(request: gr.Request | None) -> str:
    """The page's own address, as the browser sees it (behind a proxy: its forwarded host and scheme)."""
    if request is None or request.request is None:
        return "http://localhost:7860/"
    url, headers = request.request.base_url, request.headers
    host = headers.get("x-forwarded-host") or headers.get("host") or url.netloc
    scheme = headers.get("x-forwarded-proto") or url.scheme
    return f"{scheme}://{host}{url.path}"


def check_constraint(kind: str, text: str) -> str:
    """Checks as the user types (JSON, meta-schema, regex syntax); the backend checks the rest at Run."""
    if kind == "none" or not (text or "").strip():
        return ""
    try:
        parse_schema(text) if kind == "JSON schema" else check_regex(text)
    except PlaygroundError as exc:
        return f'<span class="badge badge-bad" id="constraint-error">{html.escape(str(exc))}</span>'
    return '<span class="badge badge-ok">looks fine</span>'


# -- the run -----------------------------------------------------------------------------------------

def _view(snap: live.Snapshot, final: bool, first: bool = False):
    """Snapshot -> values for RUN_OUTPUTS (charts and files only once the run is over; the first
    snapshot clears what the previous run left)."""
    result = snap.result
    stats = result.stats if result else summarize(snap.events, engine_seconds(snap.events))
    stream = render.token_stream(snap.events, snap.eos_ids)
    same = identity_note(result.token_ids, snap.baseline.token_ids, snap.settings.temperature == 0) if snap.baseline else ""
    metric = render.metrics(stats, snap.settings.k, live.speedup(snap), same, note=snap.note,
                            theory=snap.settings.draft != NGRAM)
    if not final:
        rest = ["", "", "", None, None, None, None, None, None] if first else [gr.skip()] * 9
        return [stream, metric, *rest]
    baseline_text = snap.baseline.text if snap.baseline else ""
    pretty = _pretty_json(result.text) if snap.settings.schema.strip() else None
    download = _download(snap)
    badge = (render.stopped(stats["generated_tokens"]) if snap.phase == "stopped" else
             render.validity_badge(result.valid, result.validation_error, result.constraint_notes))
    badge += "" if download else render.warning("the download file could not be written (is the server's disk full?); "
                                                "the run is shown above")
    return [stream, metric, result.text, baseline_text, badge,
            pretty, plots.accepted_histogram(snap.events, snap.settings.k), plots.acceptance_by_position(snap.events),
            plots.cumulative_tokens(snap.events, snap.baseline_events),
            plots.time_split(result.stats, snap.baseline.stats if snap.baseline else None), download]


def _pretty_json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def _download(snap: live.Snapshot) -> str | None:
    """The run as a JSON file, or None when it cannot be written (a full disk must not lose the run)."""
    return write_download(lambda f: json.dump(live.run_to_dict(snap), f, indent=1), "speculative-run-", ".json")


def write_download(write, prefix: str, suffix: str) -> str | None:
    """A file in this app's own download folder, where files older than DOWNLOAD_TTL_S are removed."""
    _prune_downloads()
    try:
        with tempfile.NamedTemporaryFile("w", suffix=suffix, prefix=prefix, dir=DOWNLOADS, delete=False) as f:
            write(f)
        return f.name
    except OSError as exc:
        log.warning("could not write a download: %s", exc)
        return None


def _prune_downloads() -> None:
    for old in DOWNLOADS.glob("*"):
        try:
            if time.time() - old.stat().st_mtime > DOWNLOAD_TTL_S:
                old.unlink()
        except OSError:
            pass


def stop_flag(request: gr.Request | None) -> pathlib.Path | None:
    """The file that asks this browser session's run to stop: a file, so that a ZeroGPU worker
    process sees it too; None for a caller without a session."""
    key = getattr(request, "session_hash", None) or ""
    return STOPS / key if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key) else None


def request_stop(request: gr.Request) -> None:
    flag = stop_flag(request)
    if flag is not None:
        flag.touch()


@spaces.GPU(duration=GPU_SECONDS)
def run(request: gr.Request, progress=gr.Progress(), *values):
    """Run the current settings: stream the coloured tokens and metrics, then charts and files. A
    mistake is shown once, next to its cause, and leaves the last run's outputs as they were; Stop
    ends the run with what it has produced."""
    flag = stop_flag(request)
    try:
        settings = settings_from_inputs(*values)
        snaps = live.live_run(settings, progress=lambda f, msg: progress(f, desc=msg),
                              should_stop=lambda: flag is not None and flag.exists())
        snap = None
        for i, snap in enumerate(snaps):
            if snap.phase == "speculative":
                yield (_view(snap, final=False, first=i == 0) + [gr.skip()]
                       + (_messages(settings) if i == 0 else SKIP_MESSAGES) + [None if i == 0 else gr.skip()])
            elif snap.phase == "baseline":  # the target alone: show its progress and text as it grows
                done = sum(len(e.committed) for e in snap.baseline_events if hasattr(e, "committed"))
                note = f"measuring the target alone for comparison: {done} tokens so far"
                yield [gr.skip(), render.metrics(snap.result.stats, settings.k, note=note, theory=settings.draft != NGRAM), gr.skip(),
                       render.committed_text(snap.baseline_events)] + [gr.skip()] * 8 + SKIP_MESSAGES + [gr.skip()]
            elif snap.phase == "measuring":  # one comparison could not tell: more, not streamed
                note = (f"measuring again to be sure ({snap.speedup.blocks} of at most {MAX_BLOCKS}): "
                        f"{snap.speedup.reason}")
                yield [gr.skip(), render.metrics(snap.result.stats, settings.k, note=note, theory=settings.draft != NGRAM)] \
                    + [gr.skip()] * 10 + SKIP_MESSAGES + [gr.skip()]
    except PlaygroundError as exc:
        log.info("run refused (%s): %s", exc.where or "run", exc)
        yield [gr.skip()] * 12 + _messages(None, exc) + [gr.skip()]
        return
    finally:
        if flag is not None:
            flag.unlink(missing_ok=True)
    measure = live.speedup(snap)
    trusted = measure.speedup if measure else None
    measured = {"k": settings.k, "alpha": snap.result.stats["token_acceptance"], "speedup": trusted}
    yield _view(snap, final=True) + [measured] + _messages(settings) + [race.lanes(snap.events, snap.baseline_events)]


def replay_race(lanes: list | None):
    """The last comparison replayed at its measured pace (slowed or sped up so the slower run lasts
    race.REPLAY_S); a frame is sent only when a run finishes a round. No GPU: it only waits."""
    if not lanes:
        yield render.progress_note("run with \"Compare with the target alone\" on, then replay the race here", final=True)
        return
    times, scale = race.replay_times(lanes)
    started, shown = time.monotonic(), None
    for i, t in enumerate(times):
        rounds = tuple(lane.at(t)[1] for lane in lanes)
        if rounds != shown or i == len(times) - 1:
            shown = rounds
            yield race.frame_html(lanes, t, scale)
        time.sleep(max(0.0, started + (i + 1) * race.FRAME_S - time.monotonic()))


def _messages(settings: Settings | None, exc: PlaygroundError | None = None) -> list:
    """-> values for MESSAGES: the error next to the input it is about (a constraint's opens its
    section) and the other messages cleared; with no error, the constraint's own check again."""
    values = ["", "", "", gr.skip(), gr.skip()]  # model, prompt, run, constraint check, constraint section
    if exc is not None:
        where = exc.where if exc.where in MESSAGE_SLOTS else "run"  # settings and the unknown: under Run
        values[MESSAGE_SLOTS[where]] = render.error(str(exc), where)
        if where == "constraint":
            values[4] = gr.update(open=True)
    elif settings is not None:
        kind = "JSON schema" if settings.schema.strip() else "regex" if settings.regex.strip() else "none"
        values[3] = check_constraint(kind, settings.schema.strip() or settings.regex)
    return values


SKIP_MESSAGES = [gr.skip()] * 5
MESSAGE_SLOTS = {"model": 0, "prompt": 1, "run": 2, "constraint": 3}  # indices in _messages' values
BUSY = gr.update(interactive=False), gr.update(interactive=True)  # (Run, Stop) while a run goes on
IDLE = gr.update(interactive=True), gr.update(interactive=False)


def remember_run(measured: dict | None, history: list) -> list:
    """Keep this browser session's measured runs for the speedup calculator."""
    if measured and measured.get("speedup"):
        return (history or []) + [measured]
    return history or []


# -- experiments ---------------------------------------------------------------------------------

@spaces.GPU(duration=GPU_SECONDS * 3)
def run_sweep(progress=gr.Progress(), *inputs):
    """inputs: the sweep's axis, values and prompts, then the Playground's settings."""
    try:
        axis, values_text, prompts_text, *values = inputs
        axis, values_text, prompts_text = (typed(n, v, str) for n, v in
                                           zip(("axis", "values", "prompts"), (axis, values_text, prompts_text)))
        settings = settings_from_inputs(*values)
        values_list = experiments.parse_values(values_text, int if axis == "k" else float)
        lo, hi = RANGES["k" if axis == "k" else "temperature"]
        if not all(lo <= v <= hi for v in values_list):
            raise PlaygroundError(f"sweep values for {axis} must be between {lo} and {hi} (the slider's range)")
        cfg, spec = live.checked_config(settings)
        prompts = _experiment_prompts(prompts_text, settings)
        rows = []
        yield render.progress_note(f"measuring {axis} = {values_list[0]} (1 of {len(values_list)})"), [], None, None

        def sweep(stop):  # on an engine thread (playground.ui.pacing)
            pair, constraint = live.load(settings, spec, lambda f, msg: progress(f, desc=msg))
            prompt_ids = [live.encode(pair, settings, p) for p in prompts]
            for done in experiments.sweep(pair, prompt_ids, cfg, axis, values_list, constraint):
                yield done
                if stop.is_set():
                    return
        for rows in paced(sweep, live.PAGE_UPDATE_S):
            status = (f"measuring {axis} = {values_list[len(rows)]} ({len(rows) + 1} of {len(values_list)})"
                      if len(rows) < len(values_list) else "finishing")
            yield render.progress_note(status), _table(rows), plots.sweep_chart(rows, axis), gr.skip()
    except (PlaygroundError, ValueError) as exc:
        yield experiment_error(exc, 3)
        return
    csv_path = write_download(lambda f: f.write(experiments.to_csv(rows)), f"sweep-{axis}-", ".csv")
    done = f"done: {len(rows)} values of {axis}, {len(prompts)} prompt{'s' * (len(prompts) > 1)} each"
    yield render.progress_note(done, final=True), _table(rows), plots.sweep_chart(rows, axis), csv_path


def experiment_error(exc: Exception, outputs: int) -> list:
    """A refused experiment: its message above the results, which stay as they were."""
    log.info("experiment refused: %s", exc)
    return [render.error(str(exc), "experiment")] + [gr.skip()] * outputs


def _experiment_prompts(prompts_text: str, settings) -> list[str]:
    """The Experiments box's prompts, or the Playground's prompt when the box is empty."""
    prompts = experiments.prompt_lines(prompts_text) or ([settings.prompt] if settings.prompt.strip() else [])
    at_most(len(prompts), MAX_SWEEP_PROMPTS, "the number of prompts")
    if not prompts:
        raise PlaygroundError("no prompts: write some in the prompts box (one per line) or in the Playground")
    return prompts


def _headers(columns: list[str]) -> list[str]:
    """Column names that wrap on a narrow screen ("tokens per s", not "tokens_per_s")."""
    return [c.replace("_", " ") for c in columns]


def _table(rows: list[dict], columns=experiments.COLUMNS) -> list[list]:
    return [[round(r[c], 3) if isinstance(r[c], float) else r[c] for c in columns] for r in rows]


@spaces.GPU(duration=GPU_SECONDS * 3)
def run_comparison(progress=gr.Progress(), *inputs):
    """Several ways of drafting for the current target, on one prompt set. inputs: the ways, the
    prompts, then the Playground's settings."""
    try:
        variants, prompts_text, *values = inputs
        settings = settings_from_inputs(*values)
        prompts_text = typed("prompts", prompts_text, str)
        if not variants or not isinstance(variants, list) or not set(variants) <= set(experiments.VARIANTS):
            raise PlaygroundError(f"pick at least one way of drafting among {', '.join(experiments.VARIANTS)}")
        cfg, _ = live.checked_config(settings)
        if settings.draft.removeprefix(f"{NGRAM}+") == NGRAM:
            raise PlaygroundError("comparing ways of drafting needs a draft model: pick a preset or draft with one")
        prompts = _experiment_prompts(prompts_text, settings)
        encode = lambda pair, text: live.encode(pair, settings, text)  # noqa: E731
        yield render.progress_note(f"measuring {variants[0]} (1 of {len(variants)})"), [], None

        def comparison(stop):  # on an engine thread (playground.ui.pacing)
            for done in experiments.compare_drafts(settings.target, settings.draft, prompts, cfg, variants, encode,
                                                   lambda f, msg: progress(f, desc=msg)):
                yield done
                if stop.is_set():
                    return
        for rows in paced(comparison, live.PAGE_UPDATE_S):
            status = (f"measuring {variants[len(rows)]} ({len(rows) + 1} of {len(variants)})" if len(rows) < len(variants)
                      else f"done: {len(rows)} ways of drafting, {len(prompts)} prompt{'s' * (len(prompts) > 1)} each")
            yield render.progress_note(status, final=len(rows) == len(variants)), \
                _table(rows, experiments.COMPARE_COLUMNS), plots.draft_comparison(rows)
    except (PlaygroundError, ValueError) as exc:
        yield experiment_error(exc, 2)


def calculator(acceptance: float, k: int, cost_ratio: float, history: list):
    per_round = expected_tokens_per_round(acceptance, int(k))
    speed = expected_speedup(acceptance, int(k), cost_ratio)
    best = max(range(1, RANGES["k"][1] + 1), key=lambda kk: expected_speedup(acceptance, kk, cost_ratio))
    text = (f"**{per_round:.2f}** tokens per target pass, expected speedup **{speed:.2f}x** "
            f"(best k for these numbers: {best})")
    return text, plots.speedup_curve(acceptance, int(k), cost_ratio, history or [])


# -- the public web API ----------------------------------------------------------------------------

@spaces.GPU(duration=GPU_SECONDS)
def generate(prompt: str, preset: str = DEFAULT.preset, k: int = 0, temperature: float = -1.0,
             max_new_tokens: int = 0, seed: int = 0, schema: str = "", regex: str = "",
             compare: bool = False) -> dict:  # a generator of dicts
    """Stream a run of a preset (the page's default one unless named) as JSON snapshots: tokens with
    kinds and probabilities, stats, validity. k, temperature and max_new_tokens fall back to the
    preset's values when left at 0 / -1 / 0."""
    try:
        prompt, preset, schema, regex = (typed(name, value, str) for name, value in
                                         zip(("prompt", "preset", "schema", "regex"), (prompt, preset, schema, regex)))
        k, max_new_tokens, seed = (typed(name, value, int) for name, value in
                                   zip(("k", "max_new_tokens", "seed"), (k, max_new_tokens, seed)))
        temperature, compare = typed("temperature", temperature, float), typed("compare", compare, bool)
    except PlaygroundError as exc:
        raise user_error(exc) from None
    if preset not in PRESETS:
        raise user_error(PlaygroundError(f"unknown preset '{preset[:40]}'; available: {', '.join(PRESETS)}"))
    base = Settings.from_preset(PRESETS[preset])
    settings = Settings(**{**{f: getattr(base, f) for f in base.__slots__}, "prompt": prompt or base.prompt,
                           "k": k or base.k, "temperature": base.temperature if temperature < 0 else temperature,
                           "max_new_tokens": max_new_tokens or base.max_new_tokens, "seed": seed,
                           "schema": schema or (base.schema if not regex else ""), "regex": regex, "compare": compare})
    try:
        for snap in live.live_run(settings):
            yield live.run_to_dict(snap)
    except PlaygroundError as exc:
        raise user_error(exc) from None


# -- layout ------------------------------------------------------------------------------------------

with gr.Blocks(title="Speculative decoding playground", delete_cache=(600, DOWNLOAD_TTL_S)) as demo:
    gr.HTML(f"<style>{render.CSS}{race.CSS}</style>")
    gr.Markdown("# Speculative decoding & structured output playground\n"
                "A small draft model guesses, the large target verifies several tokens in one pass, the output "
                "stays exactly the target's. Paste a JSON Schema or a regex and every token stays valid.")
    link_notice = gr.Markdown()
    with gr.Tab("Playground"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                preset = gr.Dropdown(list(PRESETS), value=DEFAULT.preset, label="Preset")
                note = gr.Markdown(preset_note(DEFAULT.preset))
                model_msg = gr.HTML()  # above the model boxes: below them it would split their panel
                target = gr.Dropdown(MODELS, value=DEFAULT.target, label="Target model",
                                     allow_custom_value=custom_models_allowed())
                draft = gr.Dropdown(MODELS, value=DEFAULT.draft, label="Draft ('ngram' = prompt lookup, 'ngram+model' = cascade)",
                                    allow_custom_value=custom_models_allowed())
                k = gr.Slider(*RANGES["k"], value=DEFAULT.k, step=1, label="Draft length k", elem_id="k-slider")
                policy = gr.Radio(["fixed", "schedule", "confidence"], value="fixed", label="Draft length policy",
                                  info="schedule: +2 after a fully kept round, -1 after a rejection; confidence: the "
                                       "draft stops when unsure. With both, k is the ceiling.")
                confidence = gr.Slider(*RANGES["confidence"], value=0.5, step=0.05, label="Confidence threshold",
                                       visible=False)  # shown with the confidence policy only
                temperature = gr.Slider(*RANGES["temperature"], value=DEFAULT.temperature, step=0.05, label="Temperature (0 = greedy)")
                max_new_tokens = gr.Slider(*RANGES["max_new_tokens"], value=DEFAULT.max_new_tokens, step=8, label="Max new tokens",
                                           elem_id="max-tokens")
                compare = gr.Checkbox(value=True, label="Compare with the target alone")
                with gr.Accordion("Advanced", open=False):
                    top_p = gr.Slider(*RANGES["top_p"], value=DEFAULT.top_p, step=0.05, label="Top-p")
                    top_k = gr.Slider(*RANGES["top_k"], value=DEFAULT.top_k, step=1, label="Top-k (0 = off)")
                    seed = gr.Number(value=0, precision=0, label="Seed")
                    chat = gr.Checkbox(value=DEFAULT.chat, label="Apply the chat template (instruct models)")
                    system = gr.Textbox(label="System prompt", lines=2)
                    backend = gr.Radio(["llguidance", "xgrammar"], value="llguidance", label="Constraint backend")
                    compile_passes = gr.Checkbox(
                        value=False, label="Compiled passes (static KV cache, torch.compile)",
                        info="The target's verify pass (and on a GPU the draft's step) runs compiled. The first run "
                             "with a model, k and context size compiles first (about 20 s a pass on a 2-core CPU).")
            with gr.Column(scale=2):
                prompt = gr.Textbox(value=DEFAULT.prompt, lines=4, label="Prompt", elem_id="prompt-box")
                prompt_msg = gr.HTML()
                with gr.Accordion("Structured output (JSON Schema or regex)",
                                  open=bool(DEFAULT.schema or DEFAULT.regex)) as constraint_acc:
                    kind = gr.Radio(CONSTRAINT_KINDS, value="none", label="Constraint")
                    constraint = gr.Code(language="json", lines=6, label="Schema or pattern", interactive=True)
                    constraint_check = gr.HTML()
                    schema_in_prompt = gr.Checkbox(value=DEFAULT.schema_in_prompt, label="Also show the schema to the model in the prompt")
                    example_constraint = gr.Dropdown(list(EXAMPLE_CONSTRAINTS), label="Examples", value=None)
                with gr.Row():
                    run_btn = gr.Button("Run", variant="primary", elem_id="run-button")
                    stop_btn = gr.Button("Stop", variant="stop", elem_id="stop-button", interactive=False)
                    share_btn = gr.Button("Share link", elem_id="share-button")
                run_msg = gr.HTML()
                share_box = gr.Textbox(label="Share link", buttons=["copy"], elem_id="share-link", visible=False)
                gr.HTML(render.legend())
                stream = gr.HTML(render.token_stream([]), elem_id="stream")
                metrics_html = gr.HTML(render.metrics(None, DEFAULT.k))
                badge = gr.HTML()
                with gr.Tabs():
                    with gr.Tab("Text"):
                        with gr.Row():
                            text = gr.Textbox(label="Output", lines=8, buttons=["copy"], elem_id="output-text")
                            baseline_text = gr.Textbox(label="Target alone (for comparison)", lines=8, buttons=["copy"],
                                                       elem_id="baseline-text", visible=DEFAULT.compare)
                    with gr.Tab("Race", elem_id="race-tab") as race_tab:
                        race_btn = gr.Button("Replay the race", elem_id="race-button", size="sm")
                        race_html = gr.HTML(render.progress_note("after a run with the comparison on, both runs replay "
                                                                 "here side by side at their measured pace", final=True))
                    with gr.Tab("JSON"):
                        pretty = gr.JSON(label="Parsed output", open=True)
                    with gr.Tab("Charts"):
                        with gr.Row():
                            hist_plot = gr.Plot(label="Accepted per round", elem_id="hist-plot")
                            pos_plot = gr.Plot(label="By draft position")
                        with gr.Row():
                            cum_plot = gr.Plot(label="Tokens vs passes")
                            time_plot = gr.Plot(label="Time split")
                download = gr.DownloadButton("Download run (JSON)", value=None)
        SETTINGS = [preset, target, draft, k, temperature, top_p, top_k, seed, max_new_tokens, prompt, system, chat,
                    kind, constraint, backend, compare, schema_in_prompt, policy, confidence, compile_passes]
        offline = [[p.name, p.prompt] for p in PRESETS.values() if p.offline]
        gr.Examples(offline, inputs=[preset, prompt], outputs=SETTINGS + [note, constraint_acc], fn=example_settings, run_on_click=True,
                    label="Offline examples (click to load)", api_visibility="private")
        with gr.Accordion("How to read this", open=False):
            gr.Markdown(ABOUT)

    with gr.Tab("Experiments"):
        gr.Markdown("Sweep one setting over a set of prompts (one per line, `\\n` for a newline); everything else "
                    "comes from the Playground tab. Both columns are measured side by side in this process.")
        with gr.Row():
            axis = gr.Radio(["k", "temperature"], value="k", label="Sweep")
            sweep_values = gr.Textbox(value=SWEEP_DEFAULTS["k"], label="Values")
        sweep_prompts = gr.Textbox(lines=4, label="Prompts (empty: the prompt of the Playground tab)")
        sweep_btn = gr.Button("Run sweep", variant="primary")
        sweep_status = gr.HTML()
        sweep_table = gr.Dataframe(headers=_headers(experiments.COLUMNS), label="Results", interactive=False, wrap=True,
                                   elem_id="sweep-table")
        sweep_plot = gr.Plot()
        sweep_csv = gr.DownloadButton("Download CSV", value=None)
        gr.Markdown("### Draft comparison\nDifferent ways of drafting for the target of the Playground tab "
                    "(its draft model, prompt lookup, a cascade, adaptive draft lengths), on the prompts above.")
        variants = gr.CheckboxGroup(list(experiments.VARIANTS), value=list(experiments.VARIANTS), label="Drafts")
        compare_btn = gr.Button("Compare drafts", variant="primary")
        compare_status = gr.HTML()
        compare_table = gr.Dataframe(headers=_headers(experiments.COMPARE_COLUMNS), label="Results", interactive=False, wrap=True,
                                     elem_id="compare-table")
        compare_plot = gr.Plot()
        gr.Markdown("### Speedup calculator\nExpected tokens per pass and speedup for a per-token acceptance "
                    "probability `α`, draft length `k` and draft/target cost ratio `c`: `(1 - α^(k+1)) / (1 - α) / "
                    "(k c + 1)`. Your measured runs (their estimated α) appear as red crosses.")
        with gr.Row():
            calc_a = gr.Slider(0, 0.99, value=0.7, step=0.01, label="per-token acceptance α")
            calc_k = gr.Slider(*RANGES["k"], value=4, step=1, label="k")
            calc_c = gr.Slider(0.01, 1, value=0.1, step=0.01, label="cost ratio c")
        calc_text = gr.Markdown()
        calc_plot = gr.Plot()

    history = gr.State([])
    measured = gr.State(None)
    RUN_OUTPUTS = [stream, metrics_html, text, baseline_text, badge, pretty, hist_plot, pos_plot, cum_plot, time_plot,
                   download, measured]
    MESSAGES = [model_msg, prompt_msg, run_msg, constraint_check, constraint_acc]  # see _messages
    race_lanes = gr.State(None)  # the last comparison's two runs, for the race view

    preset.input(apply_preset, preset, SETTINGS + [note, constraint_acc], api_visibility="private")
    demo.load(restore_from_url, None, SETTINGS + [note, constraint_acc, link_notice], api_visibility="private")
    policy.change(lambda p: gr.update(visible=p == "confidence"), policy, confidence, api_visibility="private")
    kind.change(constraint_editor, kind, constraint, api_visibility="private")
    compare.change(lambda on: gr.update(visible=on), compare, baseline_text, api_visibility="private")
    (run_btn.click(lambda: BUSY, None, [run_btn, stop_btn], queue=False, api_visibility="private")  # each button
     .then(run, SETTINGS, RUN_OUTPUTS + MESSAGES + [race_lanes], api_name="run", concurrency_limit=CONCURRENCY,  # enabled only when
           concurrency_id="device", show_progress_on=[stream])  # it can act; one progress indicator, on the stream
     .then(lambda: IDLE, None, [run_btn, stop_btn], queue=False, api_visibility="private")
     .then(remember_run, [measured, history], history, api_visibility="private"))
    stop_btn.click(request_stop, None, None, queue=False, api_visibility="private")
    for trigger in (race_tab.select, race_btn.click):
        trigger(replay_race, race_lanes, race_html, api_visibility="private", concurrency_limit=8, concurrency_id="race",
                show_progress="hidden")
    share_btn.click(make_share_link, SETTINGS, share_box, api_name="share_link").success(
        lambda: gr.update(visible=True), None, share_box, queue=False, api_visibility="private")  # shown once it has a link
    for trigger in (kind.change, constraint.change):
        trigger(check_constraint, [kind, constraint], constraint_check, api_visibility="private")
    example_constraint.input(lambda name: EXAMPLE_CONSTRAINTS[name] if name else (gr.skip(), gr.skip()),
                             example_constraint, [kind, constraint], api_visibility="private")
    axis.input(lambda a: SWEEP_DEFAULTS.get(a, ""), axis, sweep_values, api_visibility="private")
    sweep_btn.click(run_sweep, [axis, sweep_values, sweep_prompts] + SETTINGS,
                    [sweep_status, sweep_table, sweep_plot, sweep_csv], api_name="sweep",
                    concurrency_limit=CONCURRENCY, concurrency_id="device", show_progress_on=[sweep_status])
    compare_btn.click(run_comparison, [variants, sweep_prompts] + SETTINGS, [compare_status, compare_table, compare_plot],
                      api_name="compare_drafts", concurrency_limit=CONCURRENCY, concurrency_id="device",
                      show_progress_on=[compare_status])
    for slider in (calc_a, calc_k, calc_c):
        slider.change(calculator, [calc_a, calc_k, calc_c, history], [calc_text, calc_plot], api_visibility="private")
    history.change(calculator, [calc_a, calc_k, calc_c, history], [calc_text, calc_plot], api_visibility="private")
    demo.load(calculator, [calc_a, calc_k, calc_c, history], [calc_text, calc_plot], api_visibility="private")
    gr.api(generate, api_name="generate", concurrency_limit=CONCURRENCY, concurrency_id="device")

if os.environ.get("SPACES_ZERO_GPU"):  # ZeroGPU: weights load at start-up, moved to the GPU per call
    load_pair(DEFAULT.target, DEFAULT.draft)

if __name__ == "__main__":
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("playground").setLevel(logging.INFO)  # a user's refused request: one line each
    demo.queue(default_concurrency_limit=CONCURRENCY).launch(show_error=True)
