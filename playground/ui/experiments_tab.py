"""The Experiments tab's callbacks: a K or temperature sweep and the draft comparison, each streaming its
table and chart; a refused experiment leaves the last results (the speedup calculator: ui/calculator.py)."""
import hashlib
import html
import json
import logging
from time import monotonic  # (a module's own name for it: a test replacing time.monotonic froze the test server's event loop)
from typing import Callable

import gradio as gr

from playground import session
from playground import stopping
from playground.errors import PlaygroundError, for_log
from playground.limits import (EXPERIMENT_SECONDS, EXPERIMENT_SHARE_SECONDS, MAX_EXPERIMENT_TOKENS, MAX_PROMPT_CHARS,
                               MAX_SWEEP_PROMPTS, at_most, compile_refused)
from playground.metrics import counted
from playground.draft_ids import draft_model
from playground.presets import constraint_of, policy_as_run
from playground.measure import sweeps
from playground.measure.speedup import MAX_BLOCKS
from playground.ui import live, plots, render
from playground.ui.files import forget_stop, request_stop, stop_requested, write_download
from playground.ui.gpu import EXPERIMENT_RUNS, on_gpu
from playground.ui.experiment_link import (EXPERIMENT_NAMES, LABELS, Experiment, experiment_params,
                                          read_experiment, sweep_values)
from playground.ui.inputs import beyond_theory, page_url, settings_from_inputs, settings_to_run, typed, user_error
from playground.ui.pacing import paced
from playground.ui.turn import Turn, duration
from playground.ui.share import share_url

IDLE_S = 2.0  # an experiment's progress is handed to the page again this often: a closed page is noticed then
log = logging.getLogger("playground.ui")


def _sweep_asked(inputs) -> tuple:
    """A sweep's inputs, each checked -> (axis, its values, the prompts, the settings, their config and
    constraint spec); PlaygroundError for the first one wrong, before anything loads."""
    axis, values_text, prompts_text, *values = inputs
    axis, values_text, prompts_text = (typed(n, v, str) for n, v in
                                       zip(("axis", "values", "prompts"), (axis, values_text, prompts_text)))
    settings = settings_to_run(*values)
    values_list = sweep_values("k" if axis == "k" else "temperature", values_text)
    cfg, spec = live.checked_config(settings)
    sweeps.check_axis(axis, cfg, values_list)
    prompts = _experiment_prompts(prompts_text, settings)
    _check_work(len(values_list), prompts, settings)
    return axis, values_list, prompts, settings, cfg, spec


@on_gpu(runs=EXPERIMENT_RUNS)
def run_sweep(request: gr.Request, progress=gr.Progress(), *inputs):
    """inputs: the sweep's axis, values and prompts, then the Playground's settings. Stop (or the
    host's time limit, a closed page, a run waiting for the device: Halt) ends it where it is, with the
    rows measured whole so far."""
    measured = []  # the rows measured whole, as the engine thread made them (the page may not have had the newest)
    measuring = []  # once the points are being measured: an error is the next point's
    halt = None
    try:
        axis, values_list, prompts, settings, cfg, spec = _sweep_asked(inputs)
        halt = Halt(request, "sweep")
        pace = Pace(halt.turn)
        ran_with = f"; with {described(measured_with(settings), axis)}"  # (the Playground may change meanwhile)
        yield (render.progress_note(f"measuring {axis} = {values_list[0]} (1 of {len(values_list)}){ran_with}"), _sweep_table([], axis),
               None, None, gr.skip())

        blocks = [0]  # the measurements of the value being measured (its first took minutes, unsaid: a review)

        def sweep(stop):  # on an engine thread (playground.ui.pacing)
            try:  # (Stop ended a run's loads, not a sweep's)
                with stopping.stopped_by(halt.checker(stop)):
                    pair, constraint = live.load(settings, spec, lambda f, msg: progress(f, desc=msg))
            except stopping.Stopped:  # nothing measured: said as any stop
                return
            prompt_ids = [session.prompt_ids_of(pair, settings, p) for p in prompts]
            pace.loaded()
            yield []  # something to hand the page again while the first point is measured (IDLE_S)
            measuring.append(True)
            for rows in sweeps.sweep(pair, prompt_ids, cfg, axis, values_list, constraint, halted=halt.checker(stop),
                                     on_measured=lambda n: blocks.__setitem__(0, n)):
                measured[:] = rows
                yield rows
        rows = []  # (a page gone before the first point: paced hands nothing)
        for rows in paced(sweep, live.PAGE_UPDATE_S, IDLE_S):
            status = (f"measuring {axis} = {values_list[len(rows)]} ({len(rows) + 1} of {len(values_list)}"
                      f"{pace(len(rows), len(values_list) - len(rows))}; its measurements: {blocks[0]} done, at most {MAX_BLOCKS})"
                      if len(rows) < len(values_list) else "finishing") + ran_with
            yield render.progress_note(status), _sweep_table(rows, axis), plots.sweep_chart(rows, axis), gr.skip(), gr.skip()
    except Exception as exc:  # the values measured whole before it stay downloadable
        if measuring and len(measured) < len(values_list):  # (which point failed was not said)
            exc = at_point(exc, f"{axis} = {values_list[len(measured)]}")
        yield experiment_error(exc, 4) if not measured else [
            experiment_error(exc, 0, ran_with)[0], _sweep_table(measured, axis), plots.sweep_chart(measured, axis),
            _sweep_csv(measured, axis, settings), k_sweep_points(measured, settings) if axis == "k" else gr.skip()]
        return  # (the calculator drew an older K sweep as the last beside this one's rows; a review)
    finally:
        forget_stop(request, "sweep")
        if halt is not None:
            halt.turn.release()
    csv_path = _sweep_csv(rows, axis, settings) if rows else None  # (stopped before its first value: no file)
    done = (f"{_done_or_stopped(rows, values_list, halt)} value{'s' * (len(values_list) > 1)} of {axis}, {len(prompts)} "
            f"prompt{'s' * (len(prompts) > 1)} each{ran_with}")
    yield (render.progress_note(done, final=True), _sweep_table(rows, axis), plots.sweep_chart(rows, axis), csv_path,
           k_sweep_points(rows, settings) if axis == "k" else gr.skip())


def k_sweep_points(rows: list[dict], settings) -> dict | None:
    """A finished K sweep for the calculator's chart (its measured speedup against k beside the
    formula's curve, in k's order whatever the order typed); None when no point was measured; no rows and
    what it does not describe ("beyond") where the formula does not describe the sweep (prompt lookup, a k the
    policy changes: inputs.beyond_theory; its old line was gone without a word, a review)."""
    if beyond := beyond_theory(settings):
        return {"temperature": settings.temperature, "rows": [], "beyond": beyond}
    kept = ("k", "speedup", "speedup_low", "speedup_high", "speedup_estimate", "verdict", "token_acceptance")
    points = [{key: r.get(key) for key in kept} for r in sorted(rows, key=lambda r: r["k"])
              if r.get("speedup_estimate") and r.get("speedup_low") is not None]  # (measured, with a range)
    return {"temperature": settings.temperature, "rows": points} if points else None


def measured_with(s) -> dict:
    """The Playground's settings an experiment runs with (those a sweep does not set per row): each one
    that changes what is measured (a compiled sweep's CSV and an eager one's could not be told apart).
    The constraint by its kind and its text's SHA-256 (a schema may be 256 kB: once per row); the policy
    as it runs (presets.policy_as_run)."""
    s, constraint = policy_as_run(s)[0], constraint_of(s)
    return {"preset": s.preset, "target": s.target, "draft": s.draft, "k": s.k, "temperature": s.temperature,
            "max_new_tokens": s.max_new_tokens, "top_p": s.top_p, "top_k": s.top_k, "seed": s.seed, "policy": s.policy,
            "confidence": s.confidence if s.policy == "confidence" else "", "tree": s.tree,
            "constraint": constraint[0] if constraint else "",
            "constraint_sha256": hashlib.sha256(constraint[1].encode("utf-8", "surrogatepass")).hexdigest() if constraint else "",
            "backend": s.backend if constraint else "", "schema_in_prompt": s.schema_in_prompt if constraint else "",
            "think_budget": s.think_budget, "chat": s.chat, "system": s.system,
            "compile": s.compile and not compile_refused()}  # (as run: eager where the host turned them off)


def settings_line(*values) -> str:
    """One line on the Experiments tab: what its experiments run with (set on the Playground tab,
    out of sight: a colleague's link set them there). An experiment's own notes say what it ran with:
    this line follows the Playground's changes, during and after it."""
    try:
        m = measured_with(settings_from_inputs(*values))
    except PlaygroundError:
        return ""
    text = (f"Runs with {described(m)} (a sweep sets the one it sweeps). Change them in the Playground tab; an "
            "experiment's note says these as it ran with them, its CSV every setting.")
    return f'<div class="experiment-settings">{html.escape(text)}</div>'


def described(m: dict, set_by_experiment: str = "") -> str:
    """'T and the draft D: k 4, temperature 0, 12 new tokens' for the settings measured_with gives,
    without the one the experiment sets itself (`set_by_experiment`: k, temperature or policy)."""
    parts = [f"k {m['k']}", f"temperature {m['temperature']:g}", counted(m['max_new_tokens'], "new token")]
    if m["policy"] != "fixed":
        parts.append(f"policy {m['policy']}")
    parts = [part for part in parts if not part.startswith(f"{set_by_experiment} ")]  # ("" leaves every part)
    if m["tree"]:
        parts.append(f"tree {m['tree']}")
    if m["constraint"]:
        parts.append(f"a {m['constraint'].replace('schema', 'JSON schema')}")
    return f"{m['target']} and the draft {m['draft']}: {', '.join(parts)}"


def experiment_buttons(job: str, held: int):
    """(on its button's click, on its Stop's click, at its end) for an experiment: (button, Stop, and its
    `held` inputs) updates. Its inputs are held while it measures: an axis switched mid-sweep showed k's
    values above a temperature sweep's results, and a link shared then said what was not measured."""
    def start(request: gr.Request):
        forget_stop(request, job)  # a Stop pressed since the last one ended is not for this one
        return gr.update(interactive=False), gr.update(value="Stop", interactive=True), *[gr.update(interactive=False)] * held

    def stop(request: gr.Request):
        request_stop(request, job)
        return gr.update(value="Stopping", interactive=False)  # the point being measured ends where it is, unshown

    def end():
        return gr.update(interactive=True), gr.update(value="Stop", interactive=False), *[gr.update(interactive=True)] * held
    return start, stop, end


def waits_for_run_js(job: str) -> str:
    """JS for an experiment's button (`job`: sweep or compare_drafts): clicked while this page's run, or
    its other experiment, holds the model, its note says that it waits (Gradio's "queue: 2/2" alone
    showed, and its Stop, pressed then, said "Stopping" for the minutes the run had left)."""
    other = "#compare-stop" if job == "sweep" else "#sweep-stop"
    what = "sweep" if job == "sweep" else "comparison"
    note = (f'<div class="progress-note" id="experiment-waits">This {what} starts once the run on the Playground tab, '
            "or the other experiment, ends (one run at a time here). Stopped before then, it ends as its turn comes, "
            "having measured nothing.</div>")
    return f"(shown) => {render.holding_js('#stop-button, ' + other)} ? {json.dumps(note)} : shown"


def empty_sweep_table(axis: str, table):
    """An empty results table headed by the axis picked (it said 'k' above a temperature sweep's
    place); one holding a sweep's rows keeps the headers they were measured under."""
    return _sweep_table([], axis) if table is None or len(table) == 0 else gr.skip()


def rows_shown(table) -> bool:
    """Whether the results table holds rows once an experiment has ended: each time it does, the CSV of
    those rows is the download's (a refused sweep or comparison leaves the last one's table and file; one
    stopped or failed before its first value empties both)."""
    return table is not None and len(table) > 0


def _sweep_csv(rows: list[dict], axis: str, settings) -> str:
    """The download of a sweep's rows, with the settings they were measured with."""
    about = {k: v for k, v in measured_with(settings).items() if k not in sweeps.COLUMNS}  # k, temperature: columns
    return write_download(lambda f: f.write(sweeps.to_csv(rows, about)), f"sweep-{axis}-", ".csv")


def _comparison_csv(rows: list[dict], settings) -> str | None:
    """The download of a comparison's rows (None before its first), with the settings they were measured with."""
    if not rows:
        return None
    about = {k: v for k, v in measured_with(settings).items() if k not in ("draft", "policy")}  # (each way's own)
    about["confidence"] = settings.confidence  # the adaptive: confidence way's threshold
    csv_text = sweeps.to_csv(rows, about, sweeps.COMPARE_CSV_COLUMNS)
    return write_download(lambda f: f.write(csv_text), "compare-drafts-", ".csv")


def at_point(exc: Exception, point: str) -> Exception:
    """A refusal met while measuring, naming the point it came at (an unexpected error stays as it is)."""
    if not isinstance(exc, PlaygroundError):
        return exc
    named = PlaygroundError(f"at {point}: {exc}")
    named.where = exc.where
    return named


def experiment_error(exc: Exception, outputs: int, ran_with: str = "") -> list:
    """A refused experiment, or one that failed (an error in the engine: its traceback logged, its words said; it
    showed them bare in a corner, the points measured whole not downloadable and the status still measuring):
    its message above the results, which stay as they were (`ran_with`: "; with ...", what they were measured with)."""
    if isinstance(exc, (PlaygroundError, ValueError)):
        log.info("experiment refused: %s", for_log(exc))
    else:
        log.error("experiment failed", exc_info=exc)
        exc = PlaygroundError(f"the experiment failed ({type(exc).__name__}: {str(exc)[:300]}); what it measured whole "
                              "is kept. Run it again; if it fails again, tell the host (its log has the details)")
    kept = f" (the results below: measured{ran_with.removeprefix(';')})" if ran_with else ""
    return [render.error(str(exc) + kept, "experiment")] + [gr.skip()] * outputs


def _experiment_prompts(prompts_text: str, settings) -> list[str]:
    """The Experiments box's prompts, or the Playground's prompt when the box is empty."""
    at_most(len(prompts_text), MAX_SWEEP_PROMPTS * MAX_PROMPT_CHARS, "the prompts' length (characters)")  # before
    # splitting them: the lines of a request's 8 MB took a second
    prompts = sweeps.prompt_lines(prompts_text) or ([settings.prompt] if settings.prompt.strip() else [])
    at_most(len(prompts), MAX_SWEEP_PROMPTS, "the number of prompts")
    if not prompts:
        raise PlaygroundError("no prompts: write some in the prompts box (one per line) or in the Playground")
    return prompts


def column_headers(columns: list[str]) -> list[str]:
    """Column names that wrap on a narrow screen ("tokens per s", not "tokens_per_s")."""
    return [HEADERS.get(c, c.replace("_", " ")) for c in columns]


HEADERS = {"tokens": "tokens (all measurements)",  # a row's tokens: every prompt, every measurement of both
           "acceptance_rate": "acceptance rate (kept / proposed)",  # the charts' "acceptance": two figures of one
           "token_acceptance": "α: token acceptance (kept / (kept + refusals))",  # row (0.19, 0.37) read as one,
           # unexplained; a refusal: a round's end on the target's own token (a tree's: a depth whose every guess it
           # refused, so not "judged": a tree judges siblings)
           "tokens_per_target_pass": "tokens per target pass (prompt passes too)"}  # a prompt pass writes none:
# without a kept guess a run's is n / (n + 1), under 1


WIDE = {"note": "360px", "variant": "190px", "draft": "190px", "measurements": "128px", "k": "60px"}  # the rest: 112px


def column_widths(columns: list[str]) -> list[str]:
    """Fixed widths: Gradio sizes columns from their cells, so an empty column (a speedup it cannot
    tell) was squeezed to a letter a line and a long note ran past the table's edge."""
    return [WIDE.get(c, "112px") for c in columns]


def sweep_columns(axis: str) -> list[str]:
    """A sweep's table without the axis it holds still (temperature in a K sweep: one value down the
    column, which took a phone's room from the intervals; the settings line above says it)."""
    held = "temperature" if axis == "k" else "k"
    return [c for c in sweeps.COLUMNS if c != held]


def _sweep_table(rows: list[dict], axis: str) -> gr.Dataframe:
    columns = sweep_columns(axis)
    return gr.Dataframe(value=_table(rows, columns), headers=column_headers(columns), column_widths=column_widths(columns))


def _table(rows: list[dict], columns=sweeps.COLUMNS) -> dict:
    """The Dataframe's value: each cell's value (what a column sorts by, what an API caller reads; a
    speedup not clear of 1x: its words) and the text shown, each column to its own decimals (1.635
    beside 1.9 in one column, and a speedup of 1.64 on the run's card shown as 1.635 here)."""
    shown = [[_speedup_cell(r) if c == "speedup" else _shown(c, r[c]) for c in columns] for r in rows]
    data = [[_value(r, c) for c in columns] for r in rows]
    return {"headers": column_headers(columns), "data": data, "metadata": {"display_value": shown}}


def _value(row: dict, column: str):
    if column == "speedup" and (row[column] is None or row.get("verdict") == "no clear difference"):  # its words
        return _speedup_cell(row) or None
    return round(row[column], 3) if isinstance(row[column], float) else row[column]


DECIMALS = {"speedup_low": 2, "speedup_high": 2, "acceptance_rate": 2, "token_acceptance": 2,
            "tokens_per_target_pass": 2, "tokens_per_s": 1, "baseline_tokens_per_s": 1}  # as the run's card shows them


def _shown(column: str, value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{DECIMALS[column]}f}" if column in DECIMALS else f"{value:g}"
    return str(value)


def _speedup_cell(row: dict) -> str:
    """A told speedup clear of 1x as its number; else the number marked by what it says (the note
    beside it says why): "≈1.32 (faster, noisy)", "≈1.13 (noisy)", "0.96 (no clear difference)".
    "": not measured."""
    estimate, verdict = row.get("speedup_estimate"), row.get("verdict")
    if not estimate:
        return ""
    if row["speedup"] is None:
        return f"≈{estimate:.2f} ({verdict + ', ' if verdict in ('faster', 'slower') else ''}noisy)"
    return f"{row['speedup']:.2f}" + (" (no clear difference)" if verdict == "no clear difference" else "")


def _comparison_asked(inputs) -> tuple:
    """Compare drafts' inputs, each checked -> (the ways, each once, the prompts, the settings, their
    config and constraint spec); PlaygroundError for the first one wrong, before anything loads."""
    variants, prompts_text, *values = inputs
    settings = settings_to_run(*values)
    prompts_text = typed("prompts", prompts_text, str)
    if not variants or not isinstance(variants, list) or not all(isinstance(v, str) and v in sweeps.VARIANTS for v in variants):
        raise PlaygroundError(f"pick at least one way of drafting among {', '.join(sweeps.VARIANTS)}")
    variants = list(dict.fromkeys(variants))  # each once (40 copies of one were measured 40 times)
    cfg, spec = live.checked_config(settings)
    if draft_model(settings.draft) is None:
        raise PlaygroundError("comparing ways of drafting needs a draft model: pick a preset or draft with one")
    prompts = _experiment_prompts(prompts_text, settings)
    _check_work(len(variants), prompts, settings)
    return variants, prompts, settings, cfg, spec


@on_gpu(runs=EXPERIMENT_RUNS)
def run_comparison(request: gr.Request, progress=gr.Progress(), *inputs):
    """Several ways of drafting for the current target, on one prompt set. inputs: the ways, the
    prompts, then the Playground's settings. Stop ends it as a sweep's ends."""
    measured: list[dict] = []  # the ways measured so far, kept on the engine thread (the page's last may be older)
    measuring = []  # once the ways are being measured: an error is the next way's
    halt = None
    try:
        variants, prompts, settings, cfg, spec = _comparison_asked(inputs)
        encode = lambda pair, text: session.prompt_ids_of(pair, settings, text)  # noqa: E731
        halt = Halt(request, "compare_drafts")
        pace = Pace(halt.turn)  # (each way loads its own draft: its pace counts it)
        ways_with = dict(measured_with(settings), draft=draft_model(settings.draft))  # (a lookup's cascade: its model)
        ran_with = f"; with {described(ways_with, 'policy')}"  # (the ways set the policy)
        if "adaptive: confidence" in variants:
            ran_with += f", confidence {settings.confidence:g}"
        yield render.progress_note(f"measuring {variants[0]} (1 of {len(variants)}){ran_with}"), [], None, None

        def comparison(stop):  # on an engine thread (playground.ui.pacing)
            yield []  # as a sweep's
            measuring.append(True)
            try:
                with stopping.stopped_by(halted := halt.checker(stop)):  # each way's loads and constraint end on Stop
                    told = live.stoppable(lambda f, msg: progress(f, desc=msg))
                    for rows in sweeps.compare_drafts(settings.target, settings.draft, prompts, cfg, variants, encode,
                                                      told, halted, spec):
                        measured[:] = rows
                        yield rows
            except stopping.Stopped:  # the ways measured before it kept: said as any stop
                return
        for rows in paced(comparison, live.PAGE_UPDATE_S, IDLE_S):
            if status := comparing(rows, variants, pace):
                yield (render.progress_note(status + ran_with), _table(rows, sweeps.COMPARE_COLUMNS), plots.draft_comparison(rows),
                       gr.skip())
        yield (render.progress_note(_compared(measured, variants, prompts, halt) + ran_with, final=True),  # done, or stopped
               _table(measured, sweeps.COMPARE_COLUMNS), plots.draft_comparison(measured), _comparison_csv(measured, settings))
    except Exception as exc:  # the ways measured before it stay downloadable
        if measuring and len(measured) < len(variants):
            exc = at_point(exc, variants[len(measured)])
        yield experiment_error(exc, 3) if not measured else [
            experiment_error(exc, 0, ran_with)[0], _table(measured, sweeps.COMPARE_COLUMNS), plots.draft_comparison(measured),
            _comparison_csv(measured, settings)]
    finally:
        forget_stop(request, "compare_drafts")
        if halt is not None:
            halt.turn.release()


def comparing(rows: list[dict], variants: list[str], pace: "Pace") -> str:
    """'measuring <way> (2 of 3; about 26 s a point so far)' while ways are left, else ''. The pace counts
    the ways measured: a row not run, made at once, halved the first one's time ("about 1 s", then 26 s)."""
    if len(rows) >= len(variants):
        return ""
    ran = sum(1 for r in rows if r.get("tokens_per_s") is not None)
    return f"measuring {variants[len(rows)]} ({len(rows) + 1} of {len(variants)}{pace(ran, len(variants) - len(rows))})"


class Pace:
    """'; about 1 min 5 s a point so far': the time from the start (loading the models counted in)
    to the last point measured, over the points measured; '' before the first. The point in progress
    is not counted: dividing by it too made the figure grow while that point ran. Where the points `left` at
    that pace (timed from the models' load on: `loaded`) take the experiment past its `turn`'s time limit, it says
    how many of them it will measure (a default sweep on a busy CPU host ran 15 minutes to its limit with 3 of 6
    points, its pace never compared with the limit)."""

    def __init__(self, turn: Turn | None = None):
        self.began = self.last = self.since = monotonic()
        self.done, self.turn = 0, turn

    def loaded(self) -> None:
        """The models are loaded: the points' own pace is timed from now (a load counted in each would be
        multiplied by the points left)."""
        self.since = monotonic()

    def __call__(self, done: int, left: int = 0) -> str:
        if done != self.done:
            self.done, self.last = done, monotonic()
        if not done:
            return ""
        said = f"; about {duration((self.last - self.began) / done)} a point so far"
        spent, each = self.last - self.began, (self.last - self.since) / done
        if self.turn is not None and left and spent + left * each > self.turn.limit:
            fits = max(0, int((self.turn.limit - spent) // each)) if each > 0 else left
            said += (f"; at that pace it stops at {self.turn.whose} limit of {duration(self.turn.limit)}, with about "
                     f"{fits} of the {left} left measured")
        return said


class Halt:
    """Whether an experiment ends where it is, and why, decided once (on the engine thread, in the
    event's context): Stop or a closed page; else its turn on the device (playground.ui.turn): the host's
    time limit, or, once it has held the device EXPERIMENT_SHARE_SECONDS, a run waiting for it."""

    def __init__(self, request, job: str):
        self.request, self.job = request, job
        self.turn = Turn(EXPERIMENT_SECONDS, EXPERIMENT_RUNS, EXPERIMENT_SHARE_SECONDS, "experiment")
        self.why = None  # once halted: "" for Stop, else the words after "stopped"

    def checker(self, stop) -> Callable[[], bool]:
        """-> halted() for the engine thread; stop: the page's (set when it closed)."""
        def halted() -> bool:
            if self.why is None:
                self.why = "" if stop.is_set() or stop_requested(self.request, self.job) else (
                    self.turn.why if self.turn.ended() else None)
            return self.why is not None
        return halted


def _compared(rows: list, variants: list, prompts: list, halt: Halt) -> str:
    return f"{_done_or_stopped(rows, variants, halt)} way{'s' * (len(variants) > 1)} of drafting, {len(prompts)} prompt{'s' * (len(prompts) > 1)} each"


def _done_or_stopped(rows: list, asked: list, halt: Halt) -> str:
    """'done: 3' when every point was measured, 'stopped: 1 of 3' when Stop (or what else halted it,
    said) ended it sooner."""
    if len(rows) == len(asked):
        return f"done: {len(rows)}"
    return f"stopped{halt.why or ''}: {len(rows)} of {len(asked)}"


def _check_work(points: int, prompts: list, settings) -> None:
    """Points x prompts x max new tokens within the host's bound on one experiment."""
    at_most(points * len(prompts) * settings.max_new_tokens, MAX_EXPERIMENT_TOKENS,
            "the tokens this experiment asks for (values x prompts x max new tokens)",
            "; fewer values, prompts or max new tokens")


def experiment_from_inputs(sweep_axis, sweep_values, sweep_prompts, compare_drafts, calc_alpha, calc_k,
                           calc_c) -> Experiment:
    """The tab's component values (or an API caller's) -> Experiment; a value its link could not
    carry, or that the link would drop (Run sweep would refuse it), is a PlaygroundError naming its input."""
    drafts = [] if compare_drafts is None else compare_drafts
    if not isinstance(drafts, list) or not all(isinstance(d, str) and "," not in d for d in drafts):
        raise PlaygroundError(f"compare_drafts must be a list of names among {', '.join(sweeps.VARIANTS)}")
    texts = {"sweep_axis": typed("sweep_axis", sweep_axis, str), "sweep_values": typed("sweep_values", sweep_values, str),
             "sweep_prompts": typed("sweep_prompts", sweep_prompts, str), "compare_drafts": ",".join(drafts),
             "calc_alpha": repr(typed("calc_alpha", calc_alpha, float)), "calc_k": str(typed("calc_k", calc_k, int)),
             "calc_c": repr(typed("calc_c", calc_c, float))}
    experiment, refused = read_experiment(texts)
    if refused:
        name, value, why = refused[0]
        raise PlaygroundError(f"no link made: {LABELS[name]} {value[:40]!r}: {why}")
    return experiment


def make_experiment_link(request: gr.Request, *values) -> str:
    """values: the Experiments tab's inputs, then the Playground's settings -> a link to this page that
    opens on Experiments with both restored."""
    try:
        experiment = experiment_from_inputs(*values[:len(EXPERIMENT_NAMES)])
        settings = settings_to_run(*values[len(EXPERIMENT_NAMES):])  # a kind picked, its box blank: refused, as a
        # Playground link is (the link opened unconstrained, unsaid, and its sweep ran so; a review)
        live.checked_settings(settings)  # its settings as Run reads them (a tree under schedule opened as fixed)
        return share_url(page_url(request), settings, experiment_params(experiment))
    except PlaygroundError as exc:
        raise user_error(exc, stays=True) from None
