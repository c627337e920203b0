"""A small model's decode thread count is measured on this machine, not assumed: one thread made the
demo target alone 1.25x slower on a 2-core Xeon with AMX (slower than transformers' generate), where
it had been faster for the demo draft on a 2-core AMD EPYC."""
import torch

from playground.models import decode_threads
from tests import tiny


def test_one_thread_only_where_measured_clearly_faster(monkeypatch, tokenizer):
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=1)
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) == 1
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears: (0.97, 1.0))  # within the noise: all threads
    assert decode_threads.fastest_decode_threads(model) is None
    monkeypatch.setattr(decode_threads, "SMALL_MODEL", 10)  # a big model: all threads, unmeasured
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) is None


def test_the_measurement_times_each_linear_layer_and_restores_the_thread_count(tokenizer):
    model = tiny.tiny_model("llama", vocab=len(tokenizer), seed=2)
    before = torch.get_num_threads()
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    one, every = decode_threads._pass_seconds(linears)
    assert one > 0 and every > 0 and torch.get_num_threads() == before
    assert decode_threads.fastest_decode_threads(model) in (1, None) and torch.get_num_threads() == before


def test_a_process_on_one_thread_has_nothing_to_choose(monkeypatch, tokenizer):
    model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setattr(decode_threads, "_pass_seconds", lambda linears: (1.0, 2.0))
    assert decode_threads.fastest_decode_threads(model) is None
