"""row_layers: a float32 model's decoder layers in two C calls around their attention (row_layer.c), on tiny Llama,
Qwen2 (biased q/k/v) and Qwen3 (per-head norms) models: near transformers' own layers, a wide pass's rows bitwise a
one-token pass's, no second copy of the weights, the layer's own forward where the C one does not take a pass."""
import copy
import shutil

import pytest
import torch

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


def model_of(arch: str, halved: bool, **config):
    model = tiny.tiny_model(arch, hidden=72, layers=3, **config)  # head size 18: a tail past the eights
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)  # norms' weights off 1, biases off 0: each is seen
            if halved:
                p.copy_(p.bfloat16().float())  # (held in bfloat16, as SmolLM2's)
    return model


def logits(model, ids: torch.Tensor, split: int) -> torch.Tensor:
    """Logits of ids[split:] after a pass over ids[:split]: [n, V]."""
    with torch.inference_mode():
        runner = ModelRunner(model, model.config.vocab_size)
        runner.forward(ids[:split], keep=1)
        return runner.forward(ids[split:], keep=len(ids) - split)


@pytest.mark.parametrize("arch, config", [("llama", {}), ("qwen2", {}), ("qwen3", {}),
                                          ("llama", {"attention_bias": True, "mlp_bias": True})])
@pytest.mark.parametrize("halved", [False, True])
def test_c_layers_are_transformers_layers_up_to_rounding_and_row_invariant(arch, config, halved):
    plain = model_of(arch, halved, **config)
    model = exact(copy.deepcopy(plain))
    layers = model.model.layers
    assert all(not row_layers.uninstalled(layer) for layer in layers)
    held = layers[0].self_attn.q_proj.weight.dtype == torch.bfloat16
    assert held == halved
    joined = layers[0].__dict__[row_layers.ATTR]
    assert layers[0].self_attn.k_proj.weight.data_ptr() == joined.qkv[joined.heads * 18:].data_ptr()  # views
    assert layers[0].mlp.up_proj.weight.data_ptr() == joined.gate_up[joined.gate_up.shape[0] // 2:].data_ptr()
    ids = torch.arange(3, 40) % plain.config.vocab_size
    wide = logits(model, ids, 30)  # [7, V]
    with torch.inference_mode():
        runner = ModelRunner(model, model.config.vocab_size)
        runner.forward(ids[:30], keep=1)
        ones = torch.cat([runner.forward(ids[i:i + 1], keep=1) for i in range(30, 37)])
    assert torch.equal(wide, ones)
    plain.config._attn_implementation = "eager"
    torch.testing.assert_close(wide, logits(plain, ids, 30), rtol=2e-5, atol=2e-5)


def test_the_c_layers_take_the_passes(monkeypatch):
    """Every pass goes through the C layers (a run's first, a chain's; a tree's: test_batch_invariant's greedy runs),
    none through transformers' layer forward; the layers' outputs are new tensors (the feature draft reads them as hidden states)."""
    model = exact(model_of("qwen2", True))
    own = []
    cls = type(model.model.layers[0])
    monkeypatch.setattr(cls, "forward", lambda *a, **k: own.append(1) / 0)
    ids = torch.arange(3, 40)
    with torch.inference_mode():
        runner = ModelRunner(model, model.config.vocab_size)
        runner.prefill(ids[:30])
        runner.forward(ids[30:34], keep=4)
        hidden = model(ids[None, :5], output_hidden_states=True).hidden_states
    assert not own and len({h.data_ptr() for h in hidden}) == len(hidden)


def test_what_the_c_layers_do_not_take_runs_the_layers_own_forward(monkeypatch):
    """A batch of two sequences, gradients asked for, bfloat16 rows: transformers' own layer forward, the same numbers
    up to rounding; layers the C code cannot take are left alone: a sliding window, a linear layer off the kernel
    (PLAYGROUND_ROW_KERNEL=0), PLAYGROUND_ROW_LAYERS=0."""
    model = exact(model_of("llama", False))
    ids = torch.arange(3, 12)
    with torch.inference_mode():
        one = model(ids[None]).logits
        two = model(ids[None].expand(2, -1)).logits
    torch.testing.assert_close(two[1], one[0], rtol=2e-5, atol=2e-5)
    with torch.enable_grad():
        embeds = model.get_input_embeddings()(ids[None]).detach().requires_grad_()
        graded = model(inputs_embeds=embeds).logits
        graded.sum().backward()
    assert embeds.grad is not None
    torch.testing.assert_close(graded.detach(), one, rtol=2e-5, atol=2e-5)
    windowed = exact(model_of("qwen2", False, use_sliding_window=True, sliding_window=8, max_window_layers=0))
    assert all(row_layers.uninstalled(layer) for layer in windowed.model.layers)
    monkeypatch.setenv("PLAYGROUND_ROW_LAYERS", "0")
    assert all(row_layers.uninstalled(layer) for layer in exact(model_of("llama", False)).model.layers)
    monkeypatch.setenv("PLAYGROUND_ROW_LAYERS", "1")
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
    assert layers[0].self_attn.q_proj.weight.dtype == torch.bfloat16
    with torch.inference_mode():
        torch.testing.assert_close(model(ids[None]).logits, plain, rtol=2e-5, atol=2e-5)
