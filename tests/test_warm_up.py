"""The start-up warm-up (playground.ui.warm_up), run here on a CPU, with compiled passes asked for
as a GPU host does: the first visitor's run then loads and compiles nothing, and a failing warm-up
never stops the page from starting."""
import collections
import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading

import pytest
import torch

from playground import session
from playground.models import loading, room
from playground.presets import Settings
from playground.ui import inputs as page_inputs, live, warm_up

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_run_after_the_warm_up_compiles_nothing(caplog, monkeypatch):
    """Neither a pass nor a round's programs (kept with the pair, which later runs are given again:
    each run had a pair of its own, and captured its rounds again)."""
    monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})  # rounds as programs, as on a GPU
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), compile=True, max_new_tokens=24)
    with caplog.at_level(logging.INFO, logger="playground.warm_up"):
        assert warm_up.warm_up(settings) > 0
    assert any("compiling the target's" in r.getMessage() for r in caplog.records)  # progress goes to the log
    graphs = dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs")
    assert isinstance(graphs, int) and graphs > 0  # (dynamo's counter by this name: None == None held nothing)
    made = dict(session.load_pair(settings.target, settings.draft).programs)
    other = dataclasses.replace(settings, prompt=settings.prompt * 3, max_new_tokens=40)  # another prompt, same capacity
    told = []
    pair, ids, cfg, _ = live.prepare(other, progress=lambda fraction, message: told.append(message))
    result = session.run(pair, ids, cfg)
    assert dict(torch._dynamo.utils.counters["stats"]).get("unique_graphs") == graphs and result.token_ids
    assert made and pair.programs == made and not told  # nothing made again, nothing to wait for


@pytest.mark.parametrize("start, made_by, said", [
    ("warm_up", "prepare", "warming up"),  # (a host review: a 20-line traceback told nothing more)
    ("weights_on_zero_gpu", "weights_at_start", "loading the default pair"),  # (ZeroGPU loads the default pair's
])  # weights as app.py starts: a model the host cannot have stopped app.py with a traceback, the Space down for every preset)
def test_a_failing_start_is_logged_and_the_page_starts(caplog, monkeypatch, start, made_by, said):
    """A refusal (a model not here, not allowed) is one line, as a run says it; anything else keeps its traceback."""
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), target="no/such-model")
    with caplog.at_level(logging.INFO, logger="playground.warm_up"):
        assert getattr(warm_up, start)(settings) is None
    refused = [r for r in caplog.records if r.getMessage().startswith(f"{said} refused: ")]
    assert len(refused) == 1 and "no/such-model" in refused[0].getMessage() and not refused[0].exc_text
    caplog.clear()
    monkeypatch.setattr(warm_up, made_by, lambda *args: 1 / 0)
    with caplog.at_level(logging.INFO, logger="playground.warm_up"):
        assert getattr(warm_up, start)(Settings.from_preset(page_inputs.PRESETS["demo"])) is None
    assert any(f"{said} failed" in r.getMessage() and "ZeroDivisionError" in r.exc_text for r in caplog.records)
    monkeypatch.undo()
    monkeypatch.setattr(loading, "PAIRS", {})
    demo = Settings.from_preset(page_inputs.PRESETS["demo"])
    assert warm_up.weights_on_zero_gpu(demo) is not None  # the real load, on the CPU
    assert (demo.target, demo.draft) in {key[:2] for key in loading.PAIRS}


def test_every_host_but_zero_gpu_warms_up_unless_told_not_to(monkeypatch):
    """A CPU host too: the first visitor's Run waited 30 s while SmolLM2 was converted on a fresh
    machine. ZeroGPU loads the default pair as app.py is imported."""
    assert warm_up.wanted()
    monkeypatch.setenv("PLAYGROUND_WARM_UP", "0")
    assert not warm_up.wanted()
    monkeypatch.delenv("PLAYGROUND_WARM_UP")
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert not warm_up.wanted()


def test_a_cpu_warm_up_loads_the_pair_the_first_run_uses(monkeypatch):
    settings = dataclasses.replace(Settings.from_preset(page_inputs.PRESETS["demo"]), compile=False)

    def first_run_told() -> list[str]:  # what a first visitor's run says while it waits, in a fresh process
        told = []
        live.prepare(settings, progress=lambda fraction, message: told.append(message))
        return told

    def fresh_process():
        monkeypatch.setattr(room.CACHE, "entries", collections.OrderedDict())
        monkeypatch.setattr(loading, "PAIRS", {})
    fresh_process()
    assert any("loading demo-target" in message for message in first_run_told())
    fresh_process()
    assert warm_up.warm_up(settings) > 0
    assert first_run_told() == []  # nothing to load: the first visitor's run starts at once


TEAMS = """
import dataclasses, json, os, threading
import torch
torch.set_num_threads(2)
from playground.presets import Settings, get_preset
from playground.ui import live, warm_up

def workers_started_here() -> int:  # OpenMP workers a parallel product on this thread starts (0: it has its team)
    before = len(os.listdir("/proc/self/task"))
    torch.randn(512, 512).softmax(-1)
    return len(os.listdir("/proc/self/task")) - before

settings = dataclasses.replace(Settings.from_preset(get_preset("smollm2")), max_new_tokens=8, compare=True)
assert warm_up.warm_up(settings) is not None  # as app.py does on the main thread, before serving
main = workers_started_here()
handler = []
def serve_a_run() -> None:  # as Gradio does, on a thread of its own
    snapshots = list(live.live_run(settings))
    handler.append((workers_started_here(), len(snapshots[-1].result.token_ids)))
thread = threading.Thread(target=serve_a_run)
thread.start()
thread.join()
print(json.dumps({"main": main, "handler": handler[0]}))
"""


def test_the_app_multiplies_on_its_engine_threads_alone():
    """torch's OpenMP gives each thread that runs a parallel product a team of workers, and with
    more workers than cores it stops spinning between products (playground.ui.pacing): a SmolLM2
    pass took 58 ms on the main thread and 100 ms on a second thread after the main one had a team
    (2-core Xeon), and the page made 0.60-0.64x the CLI's tokens/s while the warm-up loaded the pair
    on the main thread, 0.84-0.85x once it loaded on the engine thread. After the warm-up and a run,
    neither the main thread nor the serving thread has a team: a product there starts its worker.
    (The default CPU preset, as app.py warms it up: the toy pair's loading is too small to be split.)"""
    if "OpenMP" not in torch.__config__.parallel_info():
        pytest.skip("this torch has no OpenMP threads, hence no teams")
    done = subprocess.run([sys.executable, "-c", TEAMS], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, OMP_NUM_THREADS="2", CUDA_VISIBLE_DEVICES=""))  # a CPU host's start
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["handler"][1] > 0  # the run made tokens
    assert seen == {"main": 1, "handler": [1, seen["handler"][1]]}, seen


def test_on_engine_runs_at_once_when_called_on_an_engine_thread(monkeypatch):
    """One engine thread (the default): waiting there for work queued behind itself would never end."""
    from concurrent.futures import ThreadPoolExecutor

    from playground.ui import pacing
    # an engine of its own: should it wait for itself, no other test's runs wait behind it
    monkeypatch.setattr(pacing, "_engine", ThreadPoolExecutor(1, thread_name_prefix=pacing.ENGINE_THREADS))
    names = []
    caller = threading.Thread(target=lambda: names.append(
        pacing.on_engine(lambda: pacing.on_engine(lambda: threading.current_thread().name))), daemon=True)
    caller.start()
    caller.join(timeout=60)  # fail, not hang, if it waits
    assert not caller.is_alive() and names[0].startswith(pacing.ENGINE_THREADS), names
