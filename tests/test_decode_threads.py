"""A small model's decode thread count is measured on this machine, not assumed: one thread made the
demo target alone 1.25x slower on a 2-core Xeon with AMX (slower than transformers' generate), where
it had been faster for the demo draft on a 2-core AMD EPYC."""
import os
import pytest
import torch

from playground.errors import PlaygroundError
from playground.models import decode_threads
from tests import tiny


@pytest.fixture(autouse=True)
def two_threads():
    """Two threads to choose from, whatever an earlier test in this worker left (one: nothing to choose)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_all_threads_only_where_measured_clearly_faster(monkeypatch, tokenizer):
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=1)
    monkeypatch.delenv("PLAYGROUND_DECODE_THREADS", raising=False)
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) == 1
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype: (1.0, 0.95))  # within the noise: one thread
    assert decode_threads.fastest_decode_threads(model) == 1  # (it holds up when other work takes the cores)
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype: (1.0, 0.8))
    assert decode_threads.fastest_decode_threads(model) is None
    for asked, threads in (("1", 1), ("all", None)):  # a host's own choice, unmeasured
        monkeypatch.setenv("PLAYGROUND_DECODE_THREADS", asked)
        assert decode_threads.fastest_decode_threads(model) == threads
    monkeypatch.setenv("PLAYGROUND_DECODE_THREADS", "2")
    with pytest.raises(PlaygroundError, match="PLAYGROUND_DECODE_THREADS must be 1 or all"):
        decode_threads.fastest_decode_threads(model)
    monkeypatch.delenv("PLAYGROUND_DECODE_THREADS")
    monkeypatch.setattr(decode_threads, "TIMED_UP_TO", 10)  # a model past it: all threads, unmeasured
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) is None
    monkeypatch.setenv("PLAYGROUND_DECODE_THREADS", "1")  # unless the host asks for one
    assert decode_threads.fastest_decode_threads(model) == 1


def test_the_measurement_times_each_linear_layer_and_restores_the_thread_count(tokenizer, monkeypatch):
    model = tiny.tiny_model("llama", vocab=len(tokenizer), seed=2)
    before = torch.get_num_threads()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    monkeypatch.setattr(decode_threads, "BUDGET_S", 0.0)  # past it, after 3 timings of each
    calls = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (calls.append(n), real(n)))
    one, every = decode_threads._pass_seconds(linears, torch.float32)
    assert one > 0 and every > 0 and torch.get_num_threads() == before
    assert calls == [1, 2] * 4 + [2]  # warm-up and 3 timed turns of each, then the count restored
    monkeypatch.delenv("PLAYGROUND_DECODE_THREADS", raising=False)
    monkeypatch.setattr(torch, "set_num_threads", real)
    assert decode_threads.fastest_decode_threads(model) in (1, None) and torch.get_num_threads() == before


def test_a_loaded_model_runs_on_the_threads_measured(monkeypatch, tokenizer, tmp_path):
    from playground.models import loading
    monkeypatch.delenv("PLAYGROUND_DECODE_THREADS", raising=False)
    for seconds, threads in (((1.0, 2.0), 1), ((1.0, 0.5), None)):
        monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype, seconds=seconds: seconds)
        path = tiny.save(tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=1), tokenizer, tmp_path / str(threads))
        assert loading.load_model(str(path), torch.device("cpu"), torch.float32)[2] == threads  # (a new path: not cached)


def test_a_process_on_one_thread_has_nothing_to_choose(monkeypatch, tokenizer):
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears, dtype: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) is None


def test_openmp_threads_spin_briefly_unless_the_user_says_otherwise():
    """On 2 cores beside one busy process, libgomp's default spinning made SmolLM2's target alone 3-10x slower
    (BENCHMARKS.md): importing playground sets GOMP_SPINCOUNT before torch loads, a user's own value kept."""
    import subprocess
    import sys
    probe = "import os, playground, torch; print(os.environ['GOMP_SPINCOUNT'])"
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    assert subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout.strip() == "300"
    mine = subprocess.run([sys.executable, "-c", probe], env={**env, "GOMP_SPINCOUNT": "5000"}, capture_output=True, text=True)
    assert mine.stdout.strip() == "5000"
