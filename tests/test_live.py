"""The page's stream is paced: the run goes on its own thread and the page takes the newest
snapshot when it is ready, so a slow page never pauses generation; the last snapshot always
arrives; closing the stream stops the run."""
import html
import multiprocessing
import pathlib
import re
import threading
import time

import pytest

from playground.ui import live
from playground.presets import Settings
from playground.presets import get_preset
from playground.limits import MAX_PROMPT_CHARS, MAX_SYSTEM_CHARS


def demo_settings(**overrides) -> Settings:
    settings = Settings.from_preset(get_preset("demo"))
    for key, value in overrides.items():
        setattr(settings, key, value)
    return settings


def sleep_then_touch(seconds: float, path: str) -> None:
    """A stand-in compile: its file exists only where it ran to its end."""
    time.sleep(seconds)
    pathlib.Path(path).touch()


def test_a_slow_page_does_not_pause_the_run():
    asked = []  # the run asks should_stop once per step, from its own thread

    def should_stop() -> bool:
        asked.append(time.perf_counter())
        return False
    snaps = live.live_run(demo_settings(max_new_tokens=1024, compare=False), should_stop=should_stop)
    first = next(snaps)  # long enough (over a second here) that the run is still going
    seen, deadline = len(asked), time.monotonic() + 120
    while len(asked) <= seen + 2 and time.monotonic() < deadline:  # the page draws slowly (reads nothing):
        time.sleep(0.05)  # the run goes on meanwhile (a fixed second asked 3 rounds of a busy host; a review)
    assert len(asked) > seen + 2, (seen, len(asked))
    rest = list(snaps)
    last = rest[-1] if rest else first
    assert last.phase == "done" and last.result is not None
    assert len(last.result.token_ids) == last.result.stats["generated_tokens"] > len(first.events)
    assert len(rest) <= 2 + (asked[-1] - asked[0]) / live.PAGE_UPDATE_S  # at most one snapshot per pace


def test_unpaced_runs_give_every_snapshot_in_turn():
    snaps = list(live.live_run(demo_settings(max_new_tokens=48, compare=True), every=0))
    assert snaps[-1].phase == "done" and snaps[-1].speedup is not None
    assert [len(s.events) for s in snaps] == sorted(len(s.events) for s in snaps)  # copies, each as it was


def test_closing_the_stream_stops_the_run():
    asked = []
    snaps = live.live_run(demo_settings(max_new_tokens=1024, compare=False), should_stop=lambda: asked.append(1) or False)
    next(snaps)
    snaps.close()  # the page went away
    closed_at, count, deadline = len(asked), -1, time.monotonic() + 120
    while count != len(asked) and time.monotonic() < deadline:  # until nothing asks any more
        count = len(asked)
        time.sleep(0.5)
    assert count == len(asked) and count - closed_at <= 3  # it ended at its next round, not its 1,024th token


def test_stop_while_measuring_again_ends_the_measuring(monkeypatch):
    """A comparison too noisy to tell measures again (phase "measuring"); Stop then ends it with the
    estimate so far, the text whole."""
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it always measures again
    stop = []
    snaps = []
    for snap in live.live_run(demo_settings(max_new_tokens=48, compare=True), every=0, should_stop=lambda: bool(stop)):
        snaps.append(snap)
        if snap.phase == "measuring":
            stop.append(True)
    phases = [s.phase for s in snaps]
    assert phases.count("measuring") == 1 and phases[-1] == "done"
    last = snaps[-1]
    assert last.speedup.blocks == 1 and last.speedup.low > 0  # the block Stop cut short is not counted
    assert last.speedup.reason.endswith("measuring stopped")
    assert len(last.result.token_ids) == 48


def test_a_sampled_comparisons_further_measurements_draw_anew(monkeypatch):
    """The page's streamed run is its first measurement; each further one draws with the next seed
    (measure.speedup.drawn): with one seed for all, they timed the shown text again and again."""
    from playground import session
    from playground.measure import speedup
    monkeypatch.setattr(speedup, "TOLERANCE", 1.0)  # any spread is too wide: it measures again, four in all
    seeds, real = [], session.generate

    def recording(pair, ids, cfg, *args, **kwargs):
        seeds.append(cfg.seed)
        return real(pair, ids, cfg, *args, **kwargs)
    monkeypatch.setattr(session, "generate", recording)
    for snap in live.live_run(demo_settings(max_new_tokens=24, compare=True, temperature=1.0, seed=5), every=0):
        pass
    assert snap.speedup.blocks == 4 and seeds == [5, 5, 6, 6, 7, 7, 8, 8]  # (each measurement: both sides)


def test_a_constraints_notes_show_once_beside_the_metrics_then_under_the_verdict():
    """They were shown twice at the end: in the metrics' note and under the 'valid' badge."""
    import json
    from playground.ui.playground_tab import _view
    schema = json.dumps({"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3, "uniqueItems": True})
    settings = demo_settings(max_new_tokens=24, compare=False, schema=schema)
    snaps = list(live.live_run(settings, every=0))
    note = "not enforced while writing (checked after the run): uniqueItems"
    assert snaps[0].constraint_notes == (note,) and snaps[-1].phase == "done"
    streaming, final = _view(snaps[0], final=False), _view(snaps[-1], final=True)
    assert note in streaming["metrics"] and note not in final["metrics"] and note in final["badge"]  # the verdict's


def test_idle_work_is_handed_again_so_a_closed_page_ends_it():
    """An experiment's point makes nothing for minutes, and Gradio closes the generator of a page
    that has gone only when it hands it something: a closed page held the engine to the host's time
    limit. With `idle`, the newest item is handed again; closing then stops the work at once."""
    from playground.ui.pacing import paced
    stopped = []

    def make(stop):
        yield "first"
        while not stop.wait(0.05):  # a long point: nothing new
            pass
        stopped.append(time.monotonic())
    items = paced(make, every=0.05, idle=0.3)
    started = time.monotonic()
    assert [next(items), next(items), next(items)] == ["first"] * 3  # handed again while idle
    assert time.monotonic() - started >= 0.5
    items.close()  # the page went away
    deadline = time.monotonic() + 10  # (the work would wait forever otherwise; 0.3 s was tight on a loaded machine)
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stopped  # the work saw it
    quiet = paced(lambda stop: iter(["a"]), every=0.05, idle=0.01)
    assert list(quiet) == ["a"]  # finished work: the last item once


def test_stop_ends_a_constraints_compile_in_a_worker(monkeypatch, tmp_path):
    """The page's Stop is read between rounds: pressed while the run's constraint compiled (up to its
    20 s, in a worker), the run waited for the compile to end. Now the worker's child is killed and
    the run ends without an error (playground_tab shows it stopped); a stand-in compile of 30 s."""
    import pytest

    from playground import stopping
    from playground.constraints import worker
    before, done = set(multiprocessing.active_children()), tmp_path / "compiled"
    monkeypatch.setattr(live.session, "constrain", lambda pair, spec: worker.bounded(sleep_then_touch, 30, str(done),
                                                                                     seconds=60))
    compiling = lambda: bool(set(multiprocessing.active_children()) - before)  # noqa: E731  (its child at work)
    with pytest.raises(stopping.Stopped, match="was stopped with its run"):  # Stop pressed while it compiles
        list(live.live_run(demo_settings(max_new_tokens=8, regex="[0-9]+"), should_stop=compiling))
    assert not done.exists() and set(multiprocessing.active_children()) <= before  # its child killed, not left


def test_the_pages_stop_during_a_compile_ends_the_run_quietly(monkeypatch, tmp_path):
    """The page's Stop pressed while the constraint compiles: the run ends "stopped", no error shown
    next to the constraint (the worker's Stopped is not a mistake of the user's)."""
    import gradio as gr

    from playground.constraints import worker
    from playground.ui import inputs, playground_tab
    request, done = gr.Request(session_hash="stop-while-compiling"), tmp_path / "compiled"

    before = set(multiprocessing.active_children())

    def stop_once_its_child_compiles() -> None:
        while not set(multiprocessing.active_children()) - before:
            time.sleep(0.01)
        playground_tab.stop_run(request)

    def compile_for_30_s(pair, spec):
        threading.Thread(target=stop_once_its_child_compiles, daemon=True).start()  # Stop pressed while it compiles
        return worker.bounded(sleep_then_touch, 30, str(done), seconds=60)
    monkeypatch.setattr(live.session, "constrain", compile_for_30_s)
    values = inputs.inputs_from_settings(demo_settings(max_new_tokens=8, regex="[0-9]+"))
    outputs = list(playground_tab.run(request, lambda *args, **kwargs: None, *values))
    assert len(outputs) == 1 and not done.exists() and set(multiprocessing.active_children()) <= before  # (ended by the
    # Stop, its compile's child killed)
    named = dict(zip(playground_tab.RUN_SLOTS, outputs[0]))
    assert "stopped before the run wrote anything" in named.pop("run_msg")  # in place of a note that the run waited
    # for an experiment, which outlived it (a review); said (it was emptied, nothing said)
    assert named.pop("status")["phase"] == "stopped" and all(v == gr.skip() for v in named.values()), outputs


def test_stop_ends_compiling_the_passes_between_graphs():
    """Stop (or a closed page) pressed while a compiled run's passes compiled (a graph per width and
    model, ~30 s each on this CPU for a new k) was read only once all of them had compiled."""
    import pytest

    from playground import session, stopping
    from playground.presets import get_preset
    demo = session.load_pair(get_preset("demo").target, get_preset("demo").draft)
    for model in (demo.target, demo.draft):  # (another file's compiled run of this pair left one pass to compile,
        model.__dict__.get("_playground_graphs", {}).clear()  # after which there was no graph to stop before)
    told = []
    pressed = lambda: any("compiling" in message for message in told)  # noqa: E731  (Stop as the first graph begins)
    with pytest.raises(stopping.Stopped, match="compiling the passes was stopped with its run"):
        list(live.live_run(demo_settings(max_new_tokens=8, k=7, compile=True), lambda f, message: told.append(message),
                           should_stop=pressed, every=0))

    assert sum("compiling" in message for message in told) == 1, told  # none after it


def test_one_costly_item_does_not_freeze_the_page():
    """The wait after each handed item was the last item's cost / PAGE_SHARE: a run's first item (outputs
    cleared, its constraint checked: 0.3-0.46 s) kept the page blank for 10-15 s of a constrained run."""
    from playground.ui.pacing import MOST_WAIT, PAGE_SHARE, next_wait
    assert next_wait([], 0.5) == 0.5
    assert next_wait([0.46], 0.5) == MOST_WAIT  # was 15.3 s
    assert next_wait([0.46, 0.03, 0.03], 0.5) == pytest.approx(0.03 / PAGE_SHARE)  # the one-off is outvoted
    assert next_wait([0.001] * 3, 0.5) == 0.5  # never more often than asked
    assert next_wait([0.03, 0.4, 0.4, 0.4, 0.4, 0.4], 0.5) == MOST_WAIT  # a page that stays costly: at most MOST_WAIT


def test_stop_ends_a_load_at_its_next_report(tmp_path, tokenizer, target, noisy_draft):
    """Stop (or the page gone) during a load: the load went on to the end, a download of a model the host had
    not got for minutes, the device's turn held. Now its next report ends it: the target's load begun, Stop
    pressed, the draft is never loaded."""
    from tests import tiny
    from playground.stopping import Stopped
    paths = [str(tiny.save(model, tokenizer, tmp_path / name)) for model, name in ((target, "target"), (noisy_draft, "draft"))]
    told, stop = [], []

    def progress(fraction: float, message: str) -> None:
        told.append(message)
        stop.append(True)  # Stop pressed once the first model has begun to load
    settings = demo_settings(target=paths[0], draft=paths[1], max_new_tokens=8, compare=False)
    with pytest.raises(Stopped, match="loading the models was stopped with its run"):
        next(live.live_run(settings, progress, allow_custom=True, should_stop=lambda: bool(stop), every=0))
    assert told and not any(paths[1] in message for message in told), told


def test_stop_ends_a_wait_for_another_runs_load(tmp_path, tokenizer, target, noisy_draft):
    """A run waiting for another's load (one model loads at a time) waited it out after Stop: now it is told
    again each second, and ends at the first after Stop."""
    from tests import tiny
    from playground.stopping import Stopped
    from playground.models import loading
    path = str(tiny.save(target, tokenizer, tmp_path / "target"))
    told = []
    settings = demo_settings(target=path, draft="ngram", max_new_tokens=8, compare=False)
    with loading.LOADING:  # another run's load, which outlasts this test
        snaps = live.live_run(settings, lambda fraction, message: told.append(message), allow_custom=True,
                              should_stop=lambda: len(told) >= 2, every=0)
        with pytest.raises(Stopped, match="waiting for another model to finish loading"):
            next(snaps)
    assert told == [f"waiting for another model to finish loading before {path}"] * 2


def test_a_constraints_compile_is_said_while_it_lasts():
    """A 59 KB schema compiled for seconds after the models loaded with nothing said (a failure review)."""
    told = []
    settings = Settings.from_preset(get_preset("demo-json"))
    live.prepare(settings, lambda fraction, message: told.append(message))
    assert told[-1] == f"compiling the JSON schema for the target's tokenizer ({settings.backend})"


@pytest.mark.parametrize("share, limit, why", [
    (0, 900, "after 0 s on the device, giving way to a run waiting for the model"),
    (900, 10, "at this host's limit of 10 s for one run")])
def test_a_run_gives_way_past_its_turn_on_the_device(monkeypatch, share, limit, why):
    """A run had no turn: a 2,048-token comparison on the CPU Space's default pair held the device 6 minutes
    while another visitor's 8-token run waited, unsaid (a hosting review). Once loaded, past the host's
    RUN_SECONDS, or past RUN_SHARE_SECONDS while a run waits, it ends as Stop ends it, keeps what it wrote,
    and says why in its badge and in the API's snapshot. Here a run comes to wait, or the clock passes
    the limit, after the turn's 20th look."""
    from playground.ui import render, turn
    looks = []
    monkeypatch.setattr(live, "RUN_SHARE_SECONDS", share)
    monkeypatch.setattr(live, "RUN_SECONDS", limit)
    monkeypatch.setattr(turn, "waiting", lambda: len(looks) >= 20)

    def clock() -> float:  # each look a half second on (held still where the share is tested)
        looks.append(1)
        return len(looks) / 2 if limit < 900 else 0.0
    monkeypatch.setattr(turn, "monotonic", clock)
    last = list(live.live_run(demo_settings(max_new_tokens=512, compare=True), every=0))[-1]
    assert last.phase == "stopped" and last.stopped_why == why and last.failure is None
    assert 0 < last.result.stats["generated_tokens"] < 512 and last.baseline is not None
    assert live.run_to_dict(last)["stopped_why"] == why
    assert html.escape(f"({why})") in render.stopped(last.result.stats["generated_tokens"], last.stopped_why)


def test_a_run_alone_keeps_the_device(monkeypatch):
    from playground.ui import turn
    monkeypatch.setattr(live, "RUN_SHARE_SECONDS", 0)
    monkeypatch.setattr(turn, "waiting", lambda: 0)
    last = list(live.live_run(demo_settings(max_new_tokens=64, compare=False), every=0))[-1]
    assert last.phase == "done" and last.stopped_why == "" and "stopped_why" not in live.run_to_dict(last)


@pytest.mark.parametrize("prompt, system, said", [
    ("x" * (MAX_PROMPT_CHARS + 1), "", "the prompt's length (characters)"),
    ("hello", "s" * (MAX_SYSTEM_CHARS + 1), "the system prompt's length (characters)"),
    ("bad \ud800 half", "", "the prompt")])
def test_runs_prompt_is_checked_before_the_models_load(monkeypatch, prompt, system, said):
    """Run checked only that the prompt was not empty before loading: a prompt past its length (or with a
    lone surrogate) was refused once the models had loaded; now as the export refuses it, with nothing loaded."""
    from playground.errors import PlaygroundError

    def loaded(*args, **kwargs):
        raise AssertionError("the models loaded before the prompt was checked")
    monkeypatch.setattr(live, "load", loaded)
    with pytest.raises(PlaygroundError, match=re.escape(said)) as refused:
        live.prepare(demo_settings(prompt=prompt, system=system))
    assert refused.value.where == "prompt"
