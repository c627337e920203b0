"""row_layers: a float32 model's decoder layers in two C calls around their attention (row_layer.c), on tiny Llama,
Qwen2 (biased q/k/v) and Qwen3 (per-head norms) models: near transformers' own layers, a wide pass's rows bitwise a
one-token pass's at any thread count, no second copy of the weights, the layer's own forward where the C one does not
take a pass."""
import copy
import ctypes
import dataclasses
import logging
import shutil

import pytest
import torch
from transformers import AutoModelForCausalLM, MistralConfig

from playground.engine.runner import ModelRunner
from playground.models import batch_invariant, row_layers, row_products
from playground.models.batch_invariant import ROW_INVARIANT
from tests import tiny

pytestmark = pytest.mark.skipif(not row_products.wanted() or not shutil.which("cc"),
                                reason="the row kernel is built on Linux x86-64 with AVX2, FMA and a C compiler only")


def exact(model):
    """The model as a float32 CPU model past SMALL_MODEL is loaded: row-invariant attention, products by the kernel."""
    model.config._attn_implementation = ROW_INVARIANT
    return batch_invariant.make_batch_invariant(model)


def model_of(arch: str, halved: bool, hidden: int = 76, **config):
    """A tiny model whose widths have tails past the eights (hidden 76, head size 18, MLP 100; the query heads' 72
    columns are not the hidden width), its weights off their initial values, bfloat16 values where halved."""
    torch.manual_seed(0)
    fields = dict(vocab_size=320, hidden_size=hidden, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=18, intermediate_size=100, max_position_embeddings=512, tie_word_embeddings=False)
    cfg = (MistralConfig if arch == "mistral" else tiny.CONFIGS[arch])(**(fields | config))
    model = AutoModelForCausalLM.from_config(cfg).float().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)  # norms' weights off 1, biases off 0: each is seen
            if halved:
                p.copy_(p.bfloat16().float())  # (held in bfloat16, as SmolLM2's)
    return model


@pytest.fixture
def c_calls(monkeypatch):
    """The C layers' first halves called so far (a count), the kernels otherwise the library's."""
    calls = []
    kernels = row_products.kernel()
    counted = dataclasses.replace(kernels, layer_in=lambda *a: calls.append(1) or kernels.layer_in(*a))
    monkeypatch.setattr(row_products, "kernel", lambda: counted)
    return calls


def runner_after(model, ids: torch.Tensor) -> ModelRunner:
    runner = ModelRunner(model, model.config.vocab_size)
    runner.forward(ids, keep=1)
    return runner


@pytest.mark.parametrize("arch, config", [("llama", {}), ("qwen2", {}), ("qwen3", {}),
                                          ("llama", {"attention_bias": True, "mlp_bias": True})])
@pytest.mark.parametrize("halved", [False, True])
def test_c_layers_are_transformers_layers_up_to_rounding_and_row_invariant(arch, config, halved, c_calls):
    plain = model_of(arch, halved, **config)
    model = exact(copy.deepcopy(plain))
    layers = model.model.layers
    assert all(not row_layers.uninstalled(layer) for layer in layers)
    assert (layers[0].self_attn.q_proj.weight.dtype == torch.bfloat16) == halved
    joined = layers[0].__dict__[row_layers.ATTR]
    assert layers[0].self_attn.k_proj.weight.data_ptr() == joined.qkv[4 * 18:].data_ptr()  # views, no second copy
    assert layers[0].mlp.up_proj.weight.data_ptr() == joined.gate_up[100:].data_ptr()
    ids = torch.arange(3, 40)
    threads = torch.get_num_threads()
    try:
        with torch.inference_mode():
            torch.set_num_threads(2)
            c_calls.clear()
            wide = runner_after(model, ids[:30]).forward(ids[30:], keep=7)  # [7, V]
            assert len(c_calls) == 2 * len(layers)  # (both passes through the C layers)
            torch.set_num_threads(1)
            runner = runner_after(model, ids[:30])
            ones = torch.cat([runner.forward(ids[i:i + 1], keep=1) for i in range(30, 37)])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(wide, ones)
    plain.config._attn_implementation = "eager"
    with torch.inference_mode():
        eager = runner_after(plain, ids[:30]).forward(ids[30:], keep=7)
    torch.testing.assert_close(wide, eager, rtol=2e-5, atol=2e-5)


def test_the_c_layers_take_every_pass_and_give_new_tensors(monkeypatch, c_calls):
    """Every pass goes through the C layers (a run's first, a chain's; a tree's: test_batch_invariant's greedy runs),
    none through transformers' layer forward; the layers' outputs are new tensors (the feature draft reads them as
    hidden states); a pass while a load elsewhere has set torch's default dtype to bfloat16 gives the same logits
    (its buffers were of the default dtype once: four bytes an element written into two)."""
    model = exact(model_of("qwen2", True))
    c_calls.clear()  # (the check at install's)
    monkeypatch.setattr(type(model.model.layers[0]), "forward", lambda *a, **k: 1 / 0)
    ids = torch.arange(3, 40)
    with torch.inference_mode():
        runner = ModelRunner(model, model.config.vocab_size)
        runner.prefill(ids[:30])
        runner.forward(ids[30:34], keep=4)
        hidden = model(ids[None, :5], output_hidden_states=True).hidden_states
        assert len(c_calls) == 3 * 3 and len({h.data_ptr() for h in hidden}) == len(hidden)
        before = model(ids[None]).logits
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            during = model(ids[None]).logits
        finally:
            torch.set_default_dtype(default)
    assert torch.equal(during, before)


def test_what_the_c_layers_do_not_take_runs_the_layers_own_forward(monkeypatch, c_calls):
    """A batch of two sequences, gradients asked for, weights no longer the joined ones' views (a deepcopy): transformers'
    own layer forward, the same numbers up to rounding. Layers the C code cannot take are left alone: a sliding window
    (Qwen2's, Mistral's), a linear layer off the kernel (PLAYGROUND_ROW_KERNEL=0); PLAYGROUND_ROW_LAYERS=0: none."""
    model = exact(model_of("llama", False))
    ids = torch.arange(3, 12)
    with torch.inference_mode():
        one = model(ids[None]).logits
        c_calls.clear()
        two = model(ids[None].expand(2, -1)).logits
        copied = copy.deepcopy(model)(ids[None]).logits
    with torch.enable_grad():
        embeds = model.get_input_embeddings()(ids[None]).detach().requires_grad_()
        graded = model(inputs_embeds=embeds).logits
        graded.sum().backward()
    assert not c_calls and embeds.grad is not None
    for other in (two[1], copied[0], graded.detach()[0]):
        torch.testing.assert_close(other, one[0], rtol=2e-5, atol=2e-5)
    for windowed in (model_of("qwen2", False, use_sliding_window=True, sliding_window=8, max_window_layers=0),
                     model_of("mistral", False, sliding_window=8)):
        assert all(row_layers.uninstalled(layer) for layer in exact(windowed).model.layers)
    assert all(not row_layers.uninstalled(layer) for layer in exact(model_of("mistral", False, sliding_window=None)).model.layers)
    monkeypatch.setenv("PLAYGROUND_ROW_LAYERS", "0")
    assert all(row_layers.uninstalled(layer) for layer in exact(model_of("llama", False)).model.layers)
    monkeypatch.setenv("PLAYGROUND_ROW_LAYERS", "1")
    monkeypatch.undo()  # (the counting kernels too)
    monkeypatch.setenv("PLAYGROUND_ROW_KERNEL", "0")
    row_products.kernel.cache_clear()
    try:
        assert all(row_layers.uninstalled(layer) for layer in exact(model_of("llama", False)).model.layers)
    finally:
        monkeypatch.delenv("PLAYGROUND_ROW_KERNEL")
        row_products.kernel.cache_clear()


def test_plain_kernels_take_the_c_layers_away_and_give_them_back():
    model = exact(model_of("qwen3", True))
    layers = model.model.layers
    forwards = [layer.__dict__["forward"] for layer in layers]
    ids = torch.arange(3, 20)
    with batch_invariant.plain_kernels(model):
        assert all("forward" not in layer.__dict__ for layer in layers)
        assert layers[0].self_attn.q_proj.weight.dtype == torch.float32
        with torch.inference_mode():
            plain = model(ids[None]).logits
    assert [layer.__dict__["forward"] for layer in layers] == forwards
    joined = layers[0].__dict__[row_layers.ATTR]
    assert layers[0].self_attn.q_proj.weight.data_ptr() == joined.qkv.data_ptr()  # views again
    with torch.inference_mode():
        torch.testing.assert_close(model(ids[None]).logits, plain, rtol=2e-5, atol=2e-5)


def test_the_silu_is_near_zero_far_below_zero_and_keeps_a_nan():
    """Through row_layer_out with a gate of chosen values (x ones, no attention, gate = g, up = 1, down the identity):
    out = 1 + silu(g), 0 for a gate far below -87 (exp8's floor: -3e38 once gave -5.6); a NaN gate gives NaN (the
    down product spreads it over the row)."""
    def out_of(g: torch.Tensor) -> torch.Tensor:
        width = len(g)
        w_gu = torch.cat([torch.diag(g), torch.eye(width)])  # rms(ones) = ones: gate = g, up = 1
        return row_layers.second_half(row_products.kernel(), torch.ones(1, width), torch.zeros(1, width),
                                      torch.zeros(width, width), None, torch.ones(width), 0.0, w_gu, None,
                                      torch.eye(width), None)[0]

    g = torch.tensor([-3e38, -1e4, -100.0, -87.5, -3.0, 0.0, 50.0, 3e38, -86.0])  # (eight and a tail of one)
    torch.testing.assert_close(out_of(g), 1 + torch.nn.functional.silu(g), rtol=1e-6, atol=1e-6)
    assert out_of(torch.tensor([1.0, float("nan"), -2.0])).isnan().all()


def test_a_build_that_computes_otherwise_is_not_used(monkeypatch, caplog):
    """The check at install (once per library): a second half whose first output is a few bits off in a pass of more
    than one row fails it, with a warning, and the layers stay transformers' (the products still the kernel's)."""
    kernels = row_products.kernel()

    def wide_rows_otherwise(*args):  # (x, attended, ..., out, M, D, A, I, threads)
        kernels.layer_out(*args)
        if args[17] > 1:
            first = ctypes.c_float.from_address(args[16])
            first.value += abs(first.value) * 2 ** -20  # (a few float32 steps: still near the double-precision layer)

    broken = dataclasses.replace(kernels, layer_out=wide_rows_otherwise)
    with caplog.at_level(logging.WARNING, logger="playground.row_layers"):
        assert not row_layers._agrees(broken)
    assert "row_layer.c failed its check" in caplog.text
    monkeypatch.setattr(row_products, "kernel", lambda: broken)
    model = exact(model_of("llama", False))
    assert all(row_layers.uninstalled(layer) for layer in model.model.layers)
    assert all(m.forward.func is row_products.module_forward for m in model.modules() if isinstance(m, torch.nn.Linear))
