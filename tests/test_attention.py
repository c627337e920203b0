"""Grouped-query attention folded into the query axis (playground.engine.attention, on by default
for static caches on a GPU): the same attention as transformers' SDPA with repeated key/value
heads, through a model's passes on a static cache, eager and compiled, and greedy runs unchanged."""
import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from playground import session
from playground.engine import attention
from playground.engine.static import StaticRunner
from playground.models import loading
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy


class Grouped(torch.nn.Module):
    is_causal = True

    def __init__(self, groups: int):
        super().__init__()
        self.num_key_value_groups = groups


@pytest.mark.parametrize("groups, kv_heads", [(2, 2), (7, 4)])  # the demo pair's grouping, Qwen2.5-7B's
@pytest.mark.parametrize("n", [1, 5])  # a draft step, a k = 4 verify pass
@pytest.mark.parametrize("additive", [False, True])
@pytest.mark.parametrize("way", ["matmul", "sdpa"])  # the default, SDPA's kernel (Triton's kernels: test_decode_attention,
def test_folded_heads_attend_as_repeated_ones(groups, kv_heads, n, additive, way, monkeypatch):  # under its interpreter)
    monkeypatch.setattr(attention, "WAY", way)
    gen = torch.Generator().manual_seed(groups * 10 + n)
    length, dim = 40, 16
    query = torch.randn(1, kv_heads * groups, n, dim, generator=gen)
    key, value = (torch.randn(1, kv_heads, length, dim, generator=gen) for _ in range(2))
    seen = torch.ones(1, 1, n, length, dtype=torch.bool).tril(diagonal=length - n - 9)  # the last 9 unwritten
    mask = torch.zeros(seen.shape).masked_fill(~seen, torch.finfo(torch.float32).min) if additive else seen
    expected, _ = sdpa_attention_forward(Grouped(groups), query, key, value, mask, scaling=0.25)
    got, _ = attention.folded_attention(Grouped(groups), query, key, value, mask, scaling=0.25)
    assert got.shape == expected.shape == (1, n, kv_heads * groups, dim)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("way", ["matmul", "sdpa"])
def test_a_folded_model_passes_as_before_on_a_static_cache(tokenizer, way, monkeypatch):
    monkeypatch.setattr(attention, "WAY", way)
    stock = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=5)  # 4 query heads, 2 key/value heads
    folded = tiny.perturbed_copy(stock, noise=0.0)
    assert attention.fold_grouped_heads(folded) and folded.config._attn_implementation == attention.NAME
    prompt = torch.tensor(tokenizer(PROMPT).input_ids)
    outputs = []
    for model, shapes in ((stock, set()), (folded, set()), (folded, {(5, 5)})):  # eager, eager, compiled
        runner = StaticRunner(model, len(tokenizer), 64, shapes)
        outputs.append([runner.forward(prompt, keep=1), runner.forward(prompt[:5], keep=5)])
        del runner
    for got in outputs[1:]:
        for a, b in zip(got, outputs[0]):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-4)
    assert not stock.config._attn_implementation == attention.NAME  # compared with the stock attention
    if way == "sdpa":  # eager, the same kernel on folded rows: the very same numbers
        assert torch.equal(outputs[1][1], outputs[0][1])


def test_a_folded_pair_runs_compiled_as_the_target_alone(tokenizer):
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    expected = hf_greedy(target, tokenizer(PROMPT).input_ids, 30, eos_id=NO_EOS)  # before folding
    for model in (target, draft):
        assert attention.fold_grouped_heads(model)
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    result = session.run(pair, tokenizer(PROMPT).input_ids, session.spec_config(k=3, max_new_tokens=30, compile=True))
    assert result.token_ids == expected and 0 < result.stats["accepted"]


def test_models_without_grouped_heads_are_left_as_they_are():
    model = tiny.tiny_model("qwen2")
    model.config.num_key_value_heads = model.config.num_attention_heads
    assert not attention.fold_grouped_heads(model) and model.config._attn_implementation == "sdpa"
    assert not attention.folds_on(torch.device("cpu"))


def test_compiled_folded_passes_never_repeat_the_cache(tokenizer, monkeypatch):
    import transformers.integrations.sdpa_attention as sdpa
    repeated = []

    def counting_repeat_kv(states, n_rep):
        repeated.append(tuple(states.shape))
        return sdpa.__dict__["_stock_repeat_kv"](states, n_rep)
    monkeypatch.setitem(sdpa.__dict__, "_stock_repeat_kv", sdpa.repeat_kv)
    monkeypatch.setattr(sdpa, "repeat_kv", counting_repeat_kv)
    prompt = torch.tensor(tokenizer(PROMPT).input_ids)
    for fold in (False, True):
        model = tiny.tiny_model("qwen2", vocab=len(tokenizer), seed=6 + fold)  # each compiles anew
        if fold:
            attention.fold_grouped_heads(model)
        runner = StaticRunner(model, len(tokenizer), 64, {(5, 5)})
        runner.forward(prompt, keep=1)
        repeated.clear()
        runner.forward(prompt[:5], keep=5)  # compiled here: traced once
        assert bool(repeated) != fold, repeated  # stock: the whole 64-position cache repeated per layer


def test_on_a_gpu_a_pair_attends_folded_from_its_load(monkeypatch):
    """Folded from the first pass (not at a first compile, which may come while another run is
    midway through an eager one); a module that is not a transformers model is left alone."""
    from playground.presets import get_preset
    preset = get_preset("demo")
    monkeypatch.setattr(session, "folds_on", lambda device: True)  # a GPU's choice, on this CPU
    monkeypatch.setattr(loading, "PAIRS", {})  # a pair made now: the load's changes are made for it
    pair = session.load_pair(preset.target, preset.draft)
    try:
        assert {pair.target.config._attn_implementation, pair.draft.config._attn_implementation} == {attention.NAME}
        assert not attention.fold_grouped_heads(torch.nn.Linear(2, 2))  # e.g. a feature draft's module
    finally:  # the loaded models are shared with later tests
        for model in (pair.target, pair.draft):
            model.set_attn_implementation("sdpa")
