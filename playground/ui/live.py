"""One interactive run for the UI and the web API: load the pair (with progress), check the
constraint, and stream the speculative run as snapshots; with the comparison on, the target alone
runs interleaved with it (a speculative round, then target-only rounds up to the same length), so
background load hits both alike and the speedup is measured side by side (playground.measure.speedup).

The run goes on an engine thread and the caller takes the newest snapshot at its own pace (at most
2 a second: PAGE_UPDATE_S; playground.ui.pacing): drawing and sending a page never pauses generation. Times are the
engine's own (prefill plus each round's wall time)."""
import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from playground import session
from playground import stopping
from playground.errors import PlaygroundError, blamed_on, for_log
from playground.events import Round, RunResult, committed_ids, round_json
from playground.metrics import comparison_json, summarize
from playground.session.host import custom_models_allowed
from playground.presets import Settings, all_presets, hosted_models, policy_as_run
from playground.unread import unused_settings
from playground.limits import RUN_SECONDS, RUN_SHARE_SECONDS
from playground.ui.pacing import paced
from playground.ui.turn import Turn, waiting
from playground.measure.speedup import Block, Speedup, Timed, engine_block, estimate, interleave, least_blocks, measuring

log = logging.getLogger("playground.ui")

MIN_UPDATE_S = 0.08  # at most ~12 snapshots a second made while streaming
PAGE_UPDATE_S = 0.5  # at most 2 a second handed to the page (each is drawn and sent while the run goes on)


@dataclass(slots=True)
class Snapshot:
    phase: str  # "speculative", "baseline" or "done"
    settings: Settings
    events: list = field(default_factory=list)  # speculative Prefill + Rounds so far
    baseline_events: list = field(default_factory=list)
    result: RunResult | None = None
    baseline: RunResult | None = None
    eos_ids: frozenset = frozenset()
    note: str = ""  # said next to the metrics: why compiled passes were asked for but not used, a budget with no room
    constraint_notes: tuple = ()  # what the constraint does not enforce while writing: beside the metrics
    # while the run streams, then under its verdict
    speedup: Speedup | None = None  # the comparison's measured speedup (speedup.measuring)
    reasoning: int | None = None  # a thinking run: its first committed tokens up to </think> (all while it thinks)
    failure: PlaygroundError | None = None  # what ended the run part way, once it had written (a constraint past
    # its CPU bound, an error in the engine): phase "stopped", what it wrote kept ("done" where measuring again failed)
    stopped_why: str = ""  # a run its turn on the device ended (phase "stopped"): the words after "stopped"
    baseline_form: str = ""  # how the target alone ran where slower than plain decoding (session.baseline_form)


def check_models(settings: Settings, allow_custom: bool | None = None) -> None:
    """Hosted instances run only their presets' models unless PLAYGROUND_ALLOW_CUSTOM_MODELS=1."""
    allow = custom_models_allowed() if allow_custom is None else allow_custom
    known = hosted_models(all_presets())
    for role, model in (("target", settings.target), ("draft", settings.draft)):
        if not model:
            raise PlaygroundError(f"no {role} model chosen")
        if not allow and model not in known:
            raise PlaygroundError(f"{role} '{model}' is not one of this host's preset models "
                                  "(set PLAYGROUND_ALLOW_CUSTOM_MODELS=1 to allow any)")


def prepare(settings: Settings, progress: Callable[[float, str], None] | None = None,
            allow_custom: bool | None = None):
    """Check everything cheap first, then load: -> (pair, prompt ids, config, constraint)."""
    cfg, spec = checked_config(settings, allow_custom, prompt=True)  # (the prompt before the models load too)
    pair, constraint = load(settings, spec, progress)
    with blamed_on("prompt"):
        ids = session.prompt_ids_of(pair, settings, settings.prompt)
        session.check_prompt_ids(pair, ids, cfg.max_new_tokens)
    session.compile_graphs(pair, len(ids), cfg, progress, constrained=constraint is not None)  # first runs only: "compiling ..." while it lasts
    return pair, ids, cfg, constraint


def checked_config(settings: Settings, allow_custom: bool | None = None, prompt: bool = False, read: bool = False):
    """The host's models, then a run's checks (session.checked_run; `read`: the constraint read as its backend
    reads it, for what shows it without compiling it), nothing loaded -> (config, constraint spec or None)."""
    with blamed_on("model"):
        check_models(settings, allow_custom)
    return session.checked_run(settings, prompt=prompt, read=read)


def checked_settings(settings: Settings, allow_custom: bool | None = None):
    """Run's checks before the constraint's (a link's as it is made: one Run would refuse is said then): the host's
    models, then session.checked_config -> the config."""
    with blamed_on("model"):
        check_models(settings, allow_custom)
    return session.checked_config(settings)


def load(settings: Settings, spec, progress=None):
    """-> (pair, compiled constraint or None), reporting progress while models load."""
    told = stoppable(progress)
    with blamed_on("model"):
        pair = session.load_pair(settings.target, settings.draft, progress=told)
    if spec is not None:  # (a large schema's first compile took seconds with no word)
        told(1.0, f"compiling the {spec.named} for the target's tokenizer ({spec.backend})")
    with blamed_on("constraint"):
        return pair, session.constrain(pair, spec)


def stoppable(progress=None):
    """`progress` that ends a load (stopping.Stopped) at its next report once its run is stopped (Stop, the
    page gone): a download of a model the host had not got (minutes) went on after both, the device's turn
    held, and so did a wait for another run's load; now each file fetched, each model begun, a wait's
    every second, is a place to stop."""
    stopped = stopping.stop_in_force()

    def told(fraction: float, message: str) -> None:
        if stopped():
            raise stopping.Stopped(f"loading the models was stopped with its run ({message})")
        if progress is not None:
            progress(fraction, message)
    return told


def live_run(settings: Settings, progress=None, allow_custom: bool | None = None,
             should_stop: Callable[[], bool] = lambda: False, every: float = PAGE_UPDATE_S) -> Iterator[Snapshot]:
    """The run's snapshots: loaded and checked (`progress` told while models load), then streamed.
    It runs on an engine thread and the newest snapshot is handed over at most every `every`
    seconds, the last always (playground.ui.pacing), so the engine never waits while the caller draws
    and sends a page; every=0: in the caller's thread, each snapshot in turn. Once `should_stop()`
    is true the run ends early with what it has (phase "stopped": text, stats and baseline so far).
    With the comparison on, the target alone runs interleaved with it (speedup.interleave); when
    that one measurement cannot tell the speedup, more are made (phase "measuring"). The run has its turn
    on the device (playground.ui.turn), its loads counted: past RUN_SECONDS, or past RUN_SHARE_SECONDS while
    another run waits for the device, it ends as a Stop ends it once it has written a round, and says why
    (`stopped_why`)."""
    unread = unused_settings(settings)  # (as asked: a threshold under the confidence policy the run cannot use is its)
    settings, unused_policy = policy_as_run(settings)  # (its notes said beside the metrics)
    unused = "; ".join(filter(None, (unused_policy, unread)))

    def run(stop=None) -> Iterator[Snapshot]:
        stopped = should_stop if stop is None else (lambda: stop.is_set() or should_stop())
        turn = Turn(RUN_SECONDS, 1, RUN_SHARE_SECONDS, "run")  # (its loads count: on ZeroGPU they are in the lease)
        try:
            with stopping.stopped_by(stopped):  # Stop ends a constraint's check or compile in a worker too
                pair, ids, cfg, constraint = prepare(settings, progress, allow_custom)
            yield from _snapshots(settings, pair, ids, cfg, constraint, stopped, unused, turn)
        finally:
            turn.release()
    return paced(run, every) if every else run()


def _snapshots(settings: Settings, pair, ids, cfg, constraint, should_stop, note: str, turn: Turn) -> Iterator[Snapshot]:
    """The run's snapshots, each a copy (its lists its own) made at most every MIN_UPDATE_S."""
    for snap in _run(settings, pair, ids, cfg, constraint, should_stop, note, turn):
        yield dataclasses.replace(snap, events=list(snap.events), baseline_events=list(snap.baseline_events))


def _run(settings: Settings, pair, ids, cfg, constraint, should_stop, note: str, turn: Turn) -> Iterator[Snapshot]:
    """should_stop: Stop or a page gone; the turn is looked at once the run has written a round (it gives way
    with something to show)."""
    snap = Snapshot("speculative", settings, eos_ids=session.ending_ids(pair, constraint),
                    note="; ".join(filter(None, [note, session.compile_fallback(pair, cfg, prompt_len=len(ids)),
                                                 *session.run_notes(pair, ids, cfg, constraint),
                                                 session.unread_prompt_parts(pair, settings.chat, settings.system)])),
                    constraint_notes=tuple(constraint.notes) if constraint else ())
    spec = _Stream(pair, ids, cfg, constraint, True, snap.events)
    base = _Stream(pair, ids, cfg, constraint, False, snap.baseline_events) if settings.compare else None
    due = _throttle()
    steps = interleave(spec.events, base.events) if base else (("spec", e) for e in spec.events)
    wrote = False
    ending = lambda: should_stop() or (wrote and turn.ended())  # noqa: E731
    try:
        for side, event in steps:
            (spec if side == "spec" else base).take(event)
            wrote = wrote or (side == "spec" and isinstance(event, Round))
            if spec.done and snap.result is None:
                snap.result, snap.phase = spec.result(), "baseline" if base else snap.phase
            if ending():
                break
            if due() and not (spec.done and base is None):  # (alone, its end is the next snapshot, "done": a
                snap.reasoning = spec.reasoning()  # "speculative" one carried the result's keys when due then)
                yield snap
    except Exception as exc:  # (a failure before the first round: refused, the last run's outputs left as they were)
        if not any(isinstance(e, Round) for e in snap.events):
            raise
        snap.failure = failed(exc)
    if snap.result is None:
        snap.result = spec.result()
    if base is not None:
        snap.baseline = base.result()
        snap.baseline_form = session.baseline_form(pair, cfg, snap.baseline_events)
    snap.phase = "done" if spec.done and (base is None or base.done) else "stopped"
    if snap.phase == "stopped" and snap.failure is None and turn.why:
        snap.stopped_why = turn.why.strip()
    snap.reasoning = snap.result.reasoning_tokens
    if base is not None:
        turn.share = 0  # measuring again gives way to a waiting run at once (_measured): so the page tells it
        yield from _measured(snap, pair, ids, cfg, constraint, ending)
        return
    yield snap


def failed(exc: Exception, wrote: bool = True) -> PlaygroundError:
    """The error to show for what ended a run, logged; `wrote`: the run had written (it then ends as stopped,
    with what it wrote: the page had lost it and said a constraint's CPU bound refused the run, and showed an
    engine error's bare words in a corner)."""
    if isinstance(exc, PlaygroundError):
        log.info("run %s (%s): %s", "stopped part way" if wrote else "refused", exc.where or "run", for_log(exc))
        said = PlaygroundError(str(exc))  # (not the error itself: its traceback's frames hold the run's runners,
        said.where = exc.where  # their static caches borrowed for as long as a snapshot keeps it)
        return said
    log.exception("run failed%s", " part way" if wrote else "")
    return PlaygroundError(f"the run failed ({type(exc).__name__}: {str(exc)[:300]})"
                           + ("; what it wrote is kept" * wrote) + ". Run again; if it fails again, tell the host "
                           "(its log has the details)")


def _measured(snap: Snapshot, pair, ids, cfg, constraint, should_stop) -> Iterator[Snapshot]:
    """The speedup of the streamed comparison, with more interleaved measurements (not streamed)
    while it cannot tell; the snapshot says so while they run. A stopped run: what it measured.
    Measuring again gives way to Stop and to a run waiting for the device (another visitor's, whose
    wait this would add to unseen): the estimate before the block cut short is kept."""
    first = Block(Timed(), Timed())
    first.add(snap.events, snap.baseline_events)
    if snap.phase == "stopped":
        snap.speedup = estimate([first])
        yield snap
        return
    ended = []  # why measuring again ended early, once it has

    def ending() -> bool:
        if not ended:
            why = ("measuring stopped: a run was waiting for the model" if waiting() else
                   "measuring stopped" if should_stop() else "")
            ended.extend([why] if why else [])
        return bool(ended)
    more = engine_block(pair, [ids], cfg, constraint, warm=False, should_stop=ending, first_block=1)  # (sampled: new draws)
    try:
        for told in measuring(more, [first], least_blocks(cfg), should_stop=ending):  # (a block cut short: not counted)
            snap.speedup = told
            if not told.more or ending():  # told (or nothing more to learn); or Stop, or a run waiting
                break
            snap.phase = "measuring"
            yield snap
    except Exception as exc:  # the texts are whole: they and the estimate so far are kept, the failure said
        snap.failure, snap.speedup = failed(exc), snap.speedup or estimate([first])
        ended.append("measuring failed")
    if ended and snap.speedup.noisy:  # the text is whole
        snap.speedup = dataclasses.replace(snap.speedup, reason=f"{snap.speedup.reason}; {ended[0]}")
    snap.phase = "done"
    yield snap


def _throttle():
    """-> a function that is True at most once every MIN_UPDATE_S seconds."""
    last = [0.0]

    def due() -> bool:
        if time.perf_counter() - last[0] < MIN_UPDATE_S:
            return False
        last[0] = time.perf_counter()
        return True
    return due


class _Stream:
    """One generation, its events collected into `sink` as they are taken."""

    def __init__(self, pair, ids, cfg, constraint, speculative: bool, sink: list):
        self.pair, self.prompt_ids, self.constraint, self.sink = pair, ids, constraint, sink
        self.guide = session.new_guide(constraint, cfg)
        self.events = session.generate(pair, ids, cfg, speculative, self.guide)
        self.done = False

    def take(self, event) -> None:
        self.sink.append(event)
        if isinstance(event, Round) and event.finish_reason is not None:
            self.done = True

    def result(self) -> RunResult:
        return session.collect(self.pair, self.sink, constraint=self.constraint, guide=self.guide,
                               prompt_ids=self.prompt_ids)

    def reasoning(self) -> int | None:
        """How many tokens so far are thinking (RunResult.reasoning_tokens before the result): a scan of
        the ids (no decoding past their first few)."""
        ids = committed_ids(self.sink)
        if self.constraint is not None:
            return self.constraint.reasoning_tokens(ids)
        return session.free_thinking(self.pair.tokenizer, self.prompt_ids, ids)


LAST_PHASES = ("done", "stopped")  # a run's last snapshot's phases


def run_to_dict(snap: Snapshot, rounds_from: int = 0, with_settings: bool = True) -> dict:
    """A run as plain data: settings, phase, text, tokens with kinds and probabilities, stats, validity,
    and the baseline. Used for the JSON download and the web API. Before its result (phase "speculative"),
    the text, token ids and stats so far. `rounds`: the rounds from `rounds_from` on (a stream's snapshot
    carries those new since the last; each one resent made a 2,000-token run's stream 22 MB); `settings`
    left out where not `with_settings` (a stream's snapshots between its first and its last)."""
    out = {"settings": snap.settings.as_dict()} if with_settings else {}
    out["phase"] = snap.phase
    rounds = [e for e in snap.events if isinstance(e, Round)]
    if snap.result is not None:
        out |= snap.result.as_json(with_rounds=False)
    else:  # (a reader of `text` while it streams met a KeyError; a cancel left no text)
        out |= {"text": "".join(t.text for r in rounds for t in r.committed), "token_ids": committed_ids(rounds),
                "stats": summarize(snap.events)}
    out |= {"note": snap.note, "rounds_from": rounds_from, "rounds": [round_json(r) for r in rounds[rounds_from:]]}
    if snap.failure is not None:  # what ended it part way (or its measuring again)
        out["error"] = str(snap.failure)
    if snap.stopped_why:  # its turn on the device
        out["stopped_why"] = snap.stopped_why
    if snap.baseline is not None:
        out |= comparison_json(snap.result, snap.baseline, snap.speedup, snap.settings.temperature == 0,
                               stopped=snap.phase == "stopped", form=snap.baseline_form)
    return out


def streamed(snaps: Iterator[Snapshot]) -> Iterator[dict]:
    """A run's snapshots as the web API streams them: each with the rounds new since the last (rounds_from
    says where they start), the last (phase done or stopped) with them all; the settings in the first and
    the last alone (each snapshot of a 900 s run echoed a 256 KB schema: 46 MB out; a review)."""
    sent, first = 0, True
    for snap in snaps:
        ended = snap.phase in LAST_PHASES
        out = run_to_dict(snap, rounds_from=0 if ended else sent, with_settings=first or ended)
        first = False
        sent = out["rounds_from"] + len(out["rounds"])
        yield out


def speedup(snap: Snapshot) -> Speedup | None:
    """The speedup measured so far (each block's estimate while it is measured again); None before the
    comparison has one."""
    return snap.speedup
