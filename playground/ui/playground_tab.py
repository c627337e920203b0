"""The Playground tab's callbacks: one run streamed into the page (tokens, metrics, then charts and
its download), each error next to its cause, the race replay and the runs kept for the calculator."""
import dataclasses
import json
import secrets
import sys
import time

import gradio as gr

from playground.config import longest_branch, tree_lookup, tree_shape
from playground.stopping import Stopped
from playground.errors import PlaygroundError
from playground.limits import CONCURRENCY
from playground.measure.speedup import MAX_BLOCKS
from playground.metrics import cost_ratio, counted, identity_note, summarize
from playground.presets import Settings, constraint_of
from playground.ui import live, page_style, plots, race, render
from playground.ui.files import forget_stop, new_ticket, request_stop, run_ticket, stop_requested, write_download
from playground.ui.gpu import on_gpu
from playground.ui.inputs import SETTING_NAMES, beyond_theory, chain_theory, check_constraint, page_constraint, settings_to_run
from playground.ui.json_view import indented
from playground.ui.tree_view import tree_view
from playground.ui.turn import duration, held, soonest_to_give_way


# Run's outputs, in the order page.py lists their components (run_outputs): the run's own, the messages next to
# their inputs (see _messages), then the race (its lanes, its view), the token tree and the run's status
RUN_SLOTS = ("stream", "metrics", "text", "baseline_text", "badge", "json", *(CHARTS := (
    "accepted_chart", "position_chart", "cumulative_chart", "time_chart")), "download", "measured",
    "model_msg", "prompt_msg", "run_msg", "run_check", "constraint_section", "tree_msg", "advanced",
    "race_lanes", "race", "tree", "status", "shown_settings")


def outputs(*updates: dict, **values) -> list:
    """Values for RUN_SLOTS: those named (in `updates`, then `values`; a later one wins), every other
    output left as it is."""
    named = {}
    for update in (*updates, values):
        named.update(update)
    if unknown := named.keys() - set(RUN_SLOTS):
        raise KeyError(f"not an output of Run: {sorted(unknown)}")
    return [named.get(name, gr.skip()) for name in RUN_SLOTS]


def run_outputs_in_order(components: dict) -> list:
    """Run's output components (by RUN_SLOTS' names) as the list Gradio takes."""
    if components.keys() != set(RUN_SLOTS):
        raise KeyError(f"Run's outputs differ from RUN_SLOTS: {sorted(components.keys() ^ set(RUN_SLOTS))}")
    return [components[name] for name in RUN_SLOTS]


def cleared() -> dict:
    """What a run's first update clears of the last run (beside the stream, metrics and text it sets): the
    target alone's text, the badge, the JSON view, four charts, the download (greyed until this run wrote
    its file) and the race (its view said the last run's, unmarked, until its tab was selected again)."""
    return dict(baseline_text="", badge="", json=None, **dict.fromkeys(CHARTS), download=download_update(None),
                race_lanes=None, race=race.note_html(RACE_WAITS))


RACE_WAITS = ("a run's race is drawn here once it has ended, where \"Compare with the target alone\" is on: both runs "
              "side by side, then replayed at their measured pace")


def _race(snap: live.Snapshot) -> dict:
    """The race's lanes and its view, drawn as the runs ended (a stopped one: where each stood)."""
    lanes = race.lanes(snap.events, snap.baseline_events, stopped=snap.phase == "stopped")
    return dict(race_lanes=lanes, race=race.ended_html(lanes) if lanes else race.note_html(NO_RACE))


def download_update(path: str | None) -> dict:
    """The run's file, the button greyed while there is none (clicked before any run, it did nothing), saying
    when it will have one (greyed unsaid while a run's speedup was measured, a walkthrough)."""
    return gr.update(value=path, interactive=path is not None, label=DOWNLOAD if path else DOWNLOAD_LATER)


DOWNLOAD, DOWNLOAD_LATER = "Download run (JSON)", "Download run (JSON): ready when a run ends"


def _stream(snap: live.Snapshot) -> str:
    """The token stream, a thinking run's reasoning folded (judged after it where constrained)."""
    return render.token_stream(snap.events, snap.eos_ids, snap.reasoning, constraint_of(snap.settings) is not None,
                               bool(snap.result and snap.result.thinking_cut))


def _view(snap: live.Snapshot, final: bool, first: bool = False) -> dict:
    """Snapshot -> the run's outputs (charts and files only once the run is over; the first snapshot
    clears what the previous run left)."""
    result = snap.result
    stats = result.stats if result else summarize(snap.events)
    stream = _stream(snap)
    same = identity_note(result.token_ids, snap.baseline.token_ids, snap.settings.temperature == 0,
                         snap.phase == "stopped") if snap.baseline else ""
    verdict = final and snap.phase != "stopped"  # its badge carries the constraint's notes
    note = "; ".join(filter(None, [snap.note, *(() if verdict else snap.constraint_notes)]))
    metric = render.metrics(stats, drafting(snap.settings), live.speedup(snap), same, note=note, policy=snap.settings.policy,
                            theory=chain_theory(snap.settings), interleaved=snap.settings.compare, baseline=snap.baseline_form,
                            alone_per_pass=snap.baseline.stats["tokens_per_target_pass"] if snap.baseline else None)
    if not final:  # the output box grows with the stream; the rest waits for the end
        return dict(cleared() if first else {}, stream=render.open_ended(stream), metrics=metric,
                    text=render.committed_text(snap.events))
    download = _download(snap)
    shown = _results(snap, stats)
    shown["badge"] += "" if download else render.warning("the download file could not be written (is the server's disk "
                                                         "full?); the run is shown above")
    return dict(shown, stream=stream, metrics=metric, text=result.text,
                baseline_text=snap.baseline.text if snap.baseline else "", download=download_update(download))


def _results(snap: live.Snapshot, stats: dict) -> dict:
    """The badge, the JSON view and the four charts of a run whose generation (and comparison) ended."""
    result = snap.result
    answer = result.text if result.answer is None else result.answer  # a thinking run: the text after </think>
    pretty = indented(answer) if snap.settings.schema.strip() else None
    badge = (render.stopped(stats["generated_tokens"], snap.stopped_why) if snap.phase == "stopped" else
             render.validity_badge(result.valid, result.validation_error, result.constraint_notes, result.open_end))
    return dict(badge=badge, json=pretty, accepted_chart=plots.accepted_histogram(snap.events, longest_path(snap.settings)),
                position_chart=plots.acceptance_by_position(snap.events),
                cumulative_chart=plots.cumulative_tokens(snap.events, snap.baseline_events),
                time_chart=plots.time_split(result.stats, snap.baseline.stats if snap.baseline else None))


def _between(snap: live.Snapshot, whole: bool, note: str, baseline_text, first: bool, ended: bool = False,
             about: str = "") -> dict:
    """Run's outputs while the target alone runs or the comparison is measured again: the
    metrics with `note`, the target alone's text; with `whole`, the speculative stream, text and tree;
    `first` (the run's first update): the last run's badge, charts and file cleared, the messages set;
    `ended` (measuring again: both runs of the first comparison have ended), with `whole`: the badge,
    charts and race drawn now (they waited minutes on a CPU for the estimate); the file waits for it."""
    shown = dict(cleared(), **_messages(snap.settings, about=about)) if first else {}
    if whole:
        shown.update(stream=_stream(snap), text=render.committed_text(snap.events), tree=tree_view(snap.events, snap.eos_ids))
        if ended:
            shown.update(_results(snap, snap.result.stats), **_race(snap))
    metric = render.metrics(snap.result.stats, drafting(snap.settings), note=note, theory=chain_theory(snap.settings),
                            policy=snap.settings.policy, interleaved=snap.settings.compare)
    return dict(shown, metrics=metric, baseline_text=baseline_text)


def drafting(settings: Settings) -> int | str:
    """What a round drafts, for the metrics: k, or a token tree's shape."""
    return f"the tree {settings.tree}" if settings.tree.strip() else settings.k


def longest_path(settings: Settings) -> int:
    """The most drafts a round can keep: k, or a token tree's depth (or its lookup branch's length)."""
    return longest_branch(tree_shape(settings.tree), tree_lookup(settings.tree), settings.k)


def _download(snap: live.Snapshot) -> str | None:
    """The run as a JSON file, or None when it cannot be written (a full disk must not lose the run).
    Its schema minified, as the engines read it, and UTF-8 as written: a schema typed with 1 MiB of tabs
    wrote 2 MB a run, 250,000 emoji 3.5 MB (each escaped twice)."""
    data = live.run_to_dict(snap)
    if schema := _minified(snap.settings.schema):
        data["settings"]["schema"] = schema
    return write_download(lambda f: json.dump(data, f, indent=1, ensure_ascii=False), "speculative-run-", ".json")


def _minified(schema: str) -> str | None:
    try:
        return json.dumps(json.loads(schema), separators=(",", ":"), ensure_ascii=False) if schema.strip() else None
    except (ValueError, RecursionError):
        return None


@on_gpu()
def run(request: gr.Request, progress=gr.Progress(), *values):
    """Run the current settings: stream the coloured tokens and metrics, then charts and files. A
    mistake is shown once, next to its cause, and leaves the last run's outputs as they were; Stop
    ends the run with what it has produced. Over the API the inputs are the settings, `preset` only
    names where they came from: /generate runs a preset as it is."""
    ticket = run_ticket(request)  # the Run click this run answers; a later click supersedes it (ends it
    # as Stop does; the page allows one only while this run measures its speedup again)
    superseded = lambda: run_ticket(request) not in (None, ticket)  # noqa: E731
    status = lambda phase: {"ticket": ticket, "phase": phase}  # noqa: E731  (run_status)
    about = _constraint_read(values)  # (its check and refusals are said of it: RUN_CHECK_JS)
    try:
        settings = settings_to_run(*values)
        snaps = live.live_run(settings, progress=lambda f, msg: progress(f, desc=msg),
                              should_stop=lambda: stop_requested(request) or superseded())
        snap, phase, first = None, None, True  # first: the update that clears the last run's outputs
        for snap in snaps:  # and sets the messages (the pacing may hand over any phase first)
            whole, phase = snap.phase != phase, snap.phase  # a phase's first snapshot: the speculative
            # run as it ended (its last update may have been skipped by the pacing), drawn once
            if snap.phase in STREAMED:  # (the last snapshot: drawn below, whole)
                yield outputs(_streamed(snap, settings, whole, first, about), status=status(snap.phase))
                first = False
    except Stopped:  # Stop pressed while its models loaded or its constraint compiled: nothing made, nothing wrong,
        # said (a note that it waited for an experiment goes)
        yield outputs(run_msg=render.stopped_before_writing(), status=status("stopped"))
        return
    except Exception as exc:  # a mistake, or a failure before the run wrote (one after: live ends it as stopped)
        yield outputs(_messages(None, live.failed(exc, wrote=False), about=about), status=status("refused"))
        return
    finally:
        if not superseded():  # (else a newer click owns the stop flag now)
            forget_stop(request)
    if snap is None:  # cancelled before its work started (Gradio's /cancel): nothing made, nobody reading
        return
    failed = _messages(None, snap.failure, ended_early=True, about=about) if snap.failure else {}  # said at its cause, its output
    # drawn as its own (stopped, or whole where measuring again failed)
    yield outputs(_view(snap, final=True), _messages(settings, about=about) if first else {}, failed, _race(snap),
                  measured=_measured(settings, snap),
                  tree=tree_view(snap.events, snap.eos_ids),
                  status=status(snap.phase))


NO_RACE = ("no race to replay: it is drawn here once a run with \"Compare with the target alone\" on has ended, "
           "its target alone having written a token")


# A race replay's second input, in the browser: whether the reader asks for less motion (prefers-reduced-motion)
REDUCED_MOTION_JS = "(lanes, still) => [lanes, window.matchMedia('(prefers-reduced-motion: reduce)').matches]"


def replay_race(lanes: list | None, still: bool = False):
    """The last comparison replayed at its measured pace (slowed or sped up so the slower run lasts
    race.REPLAY_S); a frame is sent only when a run finishes a round. No GPU: it only waits. `still`: the
    reader asks for less motion, so its last frame alone (it grew for 8 s, unpausable; an accessibility review)."""
    if not lanes:
        yield race.note_html(NO_RACE)
        return
    times, scale = race.replay_times(lanes)
    if still:
        yield race.frame_html(lanes, times[-1], scale)
        return
    started, shown = time.monotonic(), None
    for i, t in enumerate(times):
        time.sleep(max(0.0, started + t * scale - time.monotonic()))  # the frame's replay second
        rounds = tuple(lane.at(t)[1] for lane in lanes)
        if rounds != shown or i == len(times) - 1:
            shown = rounds
            yield race.frame_html(lanes, t, scale)


def _block_seconds(snap: live.Snapshot) -> str:
    """', about N s each': one more measurement, both runs at the rates measured so far."""
    tokens, m = snap.result.stats["generated_tokens"], snap.speedup
    if not (tokens and m.spec_tokens_per_s and m.base_tokens_per_s):
        return ""
    return f", about {tokens / m.spec_tokens_per_s + tokens / m.base_tokens_per_s:.0f} s each"


def _messages(settings: Settings | None, exc: PlaygroundError | None = None, ended_early: bool = False,
              about: str = "") -> dict:
    """The messages' outputs: the error next to the input it is about (a constraint's or a tree's opens
    its section) and the other messages cleared; with no error, the constraint's own check again.
    `ended_early`: the error ended a run part way, whose output is drawn as its own. `about`: the
    constraint_tag of the constraint the run read."""
    values = dict(model_msg="", prompt_msg="", run_msg="", tree_msg="")
    if exc is not None:
        where = exc.where if exc.where in MESSAGE_SLOTS else "run"  # settings and the unknown: under Run
        values[MESSAGE_SLOTS[where]] = render.error(str(exc), where, ended_early)
        if where in SECTIONS:  # opened to show it
            values[SECTIONS[where]] = gr.update(open=True)
        if where in POINTED:  # and pointed to from under Run (out of sight: in a section, or far down on a phone)
            values["run_msg"] = render.pointer(POINTED[where], where, ended_early)
    elif settings is not None:  # the check as typed again, with the run's backend (its notes stay beside the editor)
        values["run_check"] = check_constraint(*page_constraint(settings), settings.backend, compiled=True)
        values["shown_settings"] = dataclasses.asdict(settings)  # whose output the page shows from now on
    if "run_check" in values:  # inert in its hidden box (no second #constraint-error on the page), and each one new
        # to the page, so that it is drawn (RUN_CHECK_JS) though the last one was the same
        values["run_check"] = f'<template data-about="{about}">{values["run_check"]}</template><!-- {secrets.token_hex(4)} -->'
    return values


def message_cleared(where: str) -> str:
    """For a change of the input a message is about (the prompt, the tree): JavaScript clearing that
    message only when the input's value differs from the one last seen. Drawing the box again fires
    its change with the same value: a refused tree's message, drawn as the refusal opened Advanced,
    was gone 86 ms later (the browser test of sections' messages failed 1 run in 6 to 11 so, and its
    blank prompt's message likewise). A box's first value seen is only recorded (a box first drawn
    by that opening, its value set while its section was closed)."""
    seen = json.dumps(where)
    return (f"(shown, value) => {{ const seen = (window.messageInputs ||= {{}}), now = JSON.stringify(value);"
            f" const changed = {seen} in seen && seen[{seen}] !== now; seen[{seen}] = now;"
            f" return changed ? '' : shown; }}")


def pointer_cleared(where: str) -> str:
    """For a change of an input whose message (at `where`) is being redone: JavaScript giving run_msg
    without the pointer to that message, any other message kept. In the browser, at once: a call to
    the server could land after the refusal of a Run clicked right after the change. Given the inputs'
    values after run_msg, only when they differ from the last seen: a refused Run's redrawing of the
    Structured output section fires their change with the same values, and its pointer was gone
    within 0.2 s of being shown. Two inputs changed at once (an example sets the kind and the text)
    fire two changes, each given the pointer: the second, seeing values already seen, put it back; so
    a pointer cleared for these values stays cleared until the next Run (RUN_CLICKED_JS)."""
    pointer, seen = json.dumps(render.pointer(POINTED[where], where)), json.dumps(where)
    return (f"(shown, ...values) => {{ const seen = (window.pointerInputs ||= {{}}), now = JSON.stringify(values);"
            f" const cleared = (window.pointerCleared ||= {{}});"
            f" if (values.length && seen[{seen}] === now) return cleared[{seen}] === now && shown === {pointer} ? '' : shown;"
            f" seen[{seen}] = now; if (shown !== {pointer}) return shown; cleared[{seen}] = now; return ''; }}")


# A Run's pointers are new: none cleared yet (pointer_cleared); its stream is followed (page_style.PAGE_JS); the stream
# and the metrics keep their height until the run ends (cleared, they shrank and grew back: all below them jumped
# 490 px and slid back down through the run; a visual review). Where
# the token stream is out of sight below (a phone: 1.5 screens down, under Stop, the legend and "How to read this"),
# Stop is scrolled to the top, the stream in sight under it: a tap on Run dimmed it, and nothing else was seen to happen (a newcomer's review). What is
# above Stop can still grow as the run starts (the constraint's check arriving: 61 px on a phone, the scroll had
# ended 61 px short of its place, or stopped half-way): for PIN_MS, each time Stop moves down the page, or the
# scroll stops with Stop elsewhere than the top, it is scrolled there again, until the reader scrolls, taps or types.
PIN_MS = 15000  # (5 s ran out on a busy machine before the run's first tokens gave the page the height below Stop that
# the scroll needs: the page stayed where the scroll could reach, Stop half-way down; the test's phone, under load)
RUN_CLICKED_JS = """() => { window.pointerCleared = {}; window.streamFollows = true;
  for (const held of HELD_BLOCKS) held.style.minHeight = held.offsetHeight + 'px';  // (page_style.PAGE_JS)
  const stream = document.getElementById('token-stream'), stop = document.getElementById('stop-button');
  if (!stream || !stop || stream.getBoundingClientRect().top <= window.innerHeight - 60) return;
  const behavior = matchMedia('(prefers-reduced-motion: reduce)').matches ? 'auto' : 'smooth';
  const place = () => Math.round(stop.getBoundingClientRect().top + scrollY);  // Stop's place on the page
  let at = place(), pinned = true;
  stop.scrollIntoView({block: 'start', behavior});
  const unpin = () => { pinned = false; };
  for (const kind of ['wheel', 'touchstart', 'keydown', 'mousedown'])
    addEventListener(kind, unpin, {once: true, passive: true});
  setTimeout(unpin, PIN_MS);
  let last = scrollY, still = 0;  // frames the page has not scrolled
  const watch = () => { if (!pinned) return; const now = place();
    still = scrollY === last ? still + 1 : 0; last = scrollY;
    if (now !== at || (still > 10 && Math.abs(stop.getBoundingClientRect().top) > 2)) {
      at = now; still = 0; stop.scrollIntoView({block: 'start', behavior}); }
    requestAnimationFrame(watch); };
  requestAnimationFrame(watch);
}""".replace("PIN_MS", str(PIN_MS)).replace("HELD_BLOCKS", page_style.HELD_BLOCKS)
# Run clicked while this page's experiment holds the model (one run at a time on the device): said under Run, where
# Gradio's own "queue: 2/2" alone showed, for the minutes the experiment had left
WAITS_FOR_EXPERIMENT_JS = (f"(shown) => {render.holding_js('#sweep-stop, #compare-stop')} ? "  # (a stopped one ending: too)
                           + json.dumps('<div class="progress-note" id="run-waits">This run starts once the experiment '
                                        'running on the Experiments tab ends (one run at a time here); its Stop ends '
                                        'it.</div>') + " : shown")


def constraint_tag(kind, text, backend) -> str:
    """A 32-bit FNV-1a hash of the constraint a run read (kind, backend, then text: each as UTF-16 code units, then
    0xFFFF), hex; TAG_JS computes the same in the browser, for the editor's constraint now."""
    h = 0x811C9DC5
    for part in (kind, backend, text):
        units = str(part or "").encode(f"utf-16-{sys.byteorder[0]}e", "surrogatepass")  # (native: cast below)
        for unit in memoryview(units).cast("H") if units else ():
            h = ((h ^ unit) * 0x01000193) & 0xFFFFFFFF
        h = ((h ^ 0xFFFF) * 0x01000193) & 0xFFFFFFFF
    return format(h, "x")


TAG_JS = ("(kind, text, backend) => { let h = 0x811c9dc5; for (const part of [kind, backend, text]) {"
          " const s = String(part || ''); for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;"
          " h = Math.imul(h ^ 0xffff, 0x01000193) >>> 0; } return h.toString(16); }")


def _constraint_read(values) -> str:
    """The tag of the constraint a run's inputs hold (kind, editor text, backend as the page sent them)."""
    named = dict(zip(SETTING_NAMES, values))
    return constraint_tag(named.get("kind"), named.get("constraint"), named.get("backend"))


# What a run says of its constraint (run_check: its check as compiled, or its refusal, tagged with the constraint it
# read) drawn beside the editor only while the editor still holds that constraint: edited while the models loaded,
# the run's older text's "looks fine" stood beside a broken schema. An error about the older text is drawn saying so.
# (The tag is of the inputs the run read: a Run clicked while the last one measured starts later, with the text then.)
RUN_CHECK_JS = ("(said, kind, text, backend, shown) => { if (!said) return shown;"
                " const check = said.slice(said.indexOf('>') + 1, said.lastIndexOf('</template>'));"
                " const about = (said.match(/^<template data-about=\"([0-9a-f]+)\">/) || [])[1];"
                f" if (about === ({TAG_JS})(kind, text, backend)) return check;"
                " return check.includes('field-error') ? " + json.dumps(
                    '<div class="constraint-note" id="constraint-was">Of the constraint the run was started with, '
                    'before your edit:</div>') + " + check : shown; }")


SETTLE_MS = 200  # a burst of setting changes is one once none has come for this long


def click_when_settled(button: str) -> str:
    """JS: clicks `button` once the changes that call this have settled (SETTLE_MS). Opening a link changed
    22 settings, each change one call of the Export's refresh: 12 reached the server at once, past an
    address's share of a lane, and the page showed "This application is currently busy" for a valid link."""
    return (f"() => {{ clearTimeout(window.settleTimer); window.settleTimer = setTimeout(() =>"
            f" document.querySelector({json.dumps(button)})?.click(), {SETTLE_MS}); }}")


def focus_moved_to(button: str) -> str:
    """JS: where the focus was on a button that has just been disabled (Run as a run starts, Stop as it ends), or
    on nothing, it moves to `button` (the one enabled instead) once enabled: it fell to the page's body, and a
    screen reader's user lost their place (an accessibility review). Without scrolling: a reader of the charts below
    was pulled back up to Run as each run ended."""
    return (f"() => {{ const to = document.querySelector({json.dumps(button)}), at = document.activeElement;"
            " if (at && at !== document.body && !(at.closest('button') || {}).disabled) return;"
            " let tries = 20; const go = () => { if (!to.disabled) to.focus({preventScroll: true});"
            " else if (tries--) setTimeout(go, 50); };"
            " go(); }")


def waits_for_device(shown: str | None):
    """Run clicked while other jobs hold every place on the device: said under Run, with when the soonest gives
    way to a waiting run (Gradio's "queue: 1/1 | 19.6/203.9s" alone showed for two minutes, its estimate past the
    real wait; a Space host's review). `shown` None: this page's own run or experiment holds it (RUN_WAITS_JS;
    WAITS_FOR_EXPERIMENT_JS says so). The run's first update clears it."""
    turns = held()
    if shown is None or len(turns) < CONCURRENCY:
        return gr.skip()
    within, job = soonest_to_give_way(turns)
    when = f"within about {duration(within)}" if within >= 1 else "at its next round"
    held_by = (f"another {job} holds (one at a time here): it gives way" if CONCURRENCY == 1 else
               f"{CONCURRENCY} other jobs hold ({CONCURRENCY} at a time here): the first gives way")
    return (f'<div class="progress-note" id="run-waits-device">This run waits for the model, which {held_by} to a '
            f"waiting run {when}.</div>")


RUN_WAITS_JS = f"(shown) => {render.holding_js('#stop-button, #sweep-stop, #compare-stop')} ? null : (shown || '')"


def start_run(request: gr.Request):
    """Run clicked: a Stop pressed since the last run ended is not for this one, and a run still
    measuring its speedup again ends with its estimate so far; (Run, Stop) updates."""
    forget_stop(request)
    new_ticket(request)
    return BUSY


STREAMED = ("speculative", "baseline", "measuring")  # the phases drawn as they come


def _streamed(snap, settings, whole: bool, first: bool, about) -> dict:
    """The outputs a snapshot of a run under way updates; whole: the phase's first (the speculative run as it
    ended drawn once); first: the run's first update (it clears the last run's outputs)."""
    if snap.phase == "speculative":
        return {**_view(snap, final=False, first=first), **(_messages(settings, about=about) if first else {}),
                "tree": tree_view(snap.events, snap.eos_ids)}
    if snap.phase == "baseline":  # the target alone: its progress and text as it grows
        done = sum(len(e.committed) for e in snap.baseline_events if hasattr(e, "committed"))
        note = f"measuring the target alone for comparison: {counted(done)} so far"
        return _between(snap, whole, note, render.committed_text(snap.baseline_events), first, about=about)
    note = (f"measuring again to be sure ({snap.speedup.blocks} of at most {MAX_BLOCKS}"  # one comparison could not
            f"{_block_seconds(snap)}; Stop, Run again, or another run waiting for the model, keeps the estimate "  # tell:
            f"so far): {snap.speedup.reason}")  # more, not streamed
    return _between(snap, whole, note, snap.baseline.text if whole else gr.skip(), first, ended=True, about=about)


def _measured(settings, snap) -> dict | None:
    """The run's point for the calculator's chart, with its pair; where the calculator's formula does not
    describe a compared run, {"beyond": what it does not describe} (the calculator says so rather than
    take an older run as the last); None without a comparison or with nothing drafted (no α)."""
    measure = live.speedup(snap)
    if measure and (beyond := beyond_theory(settings)):
        return {"beyond": beyond}
    alpha = measure and snap.result.stats["token_acceptance"]
    return {"k": settings.k, "alpha": alpha, "speedup": measure.speedup, "speedup_estimate": measure.estimate,
            "speedup_low": measure.low, "speedup_high": measure.high, "verdict": measure.verdict,
            "cost_ratio": cost_ratio(snap.events), "pair": f"{settings.target} + {settings.draft}"} \
        if measure and alpha is not None else None


def runnable_while_measuring(status: dict | None):
    """run_status changed: Run enabled while the run only measures its speedup again (its text is
    whole); a click then ends that measuring and the new run starts once it has (start_run)."""
    return gr.update(interactive=True) if status and status["phase"] == "measuring" else gr.skip()


def after_run(request: gr.Request, status: dict | None):
    """A run ended: (Run, Stop) idle again, unless Run was clicked since (that run waits to start, or
    has started: run_status is already its own, not an ended run's)."""
    if status and (status["phase"] not in STATUS_ENDED or run_ticket(request) not in (None, status["ticket"])):
        return gr.skip(), gr.skip()
    return IDLE


def stop_run(request: gr.Request) -> None:
    request_stop(request)


MESSAGE_SLOTS = {"model": "model_msg", "prompt": "prompt_msg", "run": "run_msg", "constraint": "run_check",
                 "tree": "tree_msg"}  # each place's message among Run's outputs
SECTIONS = {"constraint": "constraint_section", "tree": "advanced"}  # the closed section each message sits in
POINTED = {"constraint": "in Structured output", "tree": "in Advanced, under the token tree",
           "model": "at Target model"}  # where each pointed-to message sits (on a phone the models come below Run)
STATUS_ENDED = ("done", "stopped", "refused")  # a run's last phases in run_status
BUSY = gr.update(interactive=False), gr.update(interactive=True)  # (Run, Stop) while a run goes on
IDLE = gr.update(interactive=True), gr.update(interactive=False)


def remember_run(measured: dict | None, history: list) -> list:
    """Keep this browser session's compared runs for the speedup calculator (speedup None: the
    comparison could not tell it; counted, not drawn), and after them the last compared run its
    formula does not describe, if it came last ({"beyond": ...}: see calculator.formula_runs)."""
    if measured and ("speedup" in measured or "beyond" in measured):
        return ([m for m in history or [] if "beyond" not in m] + [measured])[-MAX_REMEMBERED:]
    return history or []


MAX_REMEMBERED = 200  # runs a session's calculator keeps
