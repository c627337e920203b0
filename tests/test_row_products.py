"""A draft's products of one or two rows compiled as reductions (playground.models.row_products,
PLAYGROUND_DRAFT_GEMV=1): inductor then writes its own kernels for a layer's products and fuses
their neighbours into them; the logits stay the model's; wider passes keep the library's products;
speculation with such a draft stays identical to the target's greedy decoding. Real torch.compile."""
import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from playground import session
from playground.models import row_products
from playground.models.fused_projections import fuse_projections
from tests import tiny
from tests.test_engine_greedy import NO_EOS, PROMPT, hf_greedy

KERNEL_CALL = re.compile(r"^\s+(cpp_fused_\w+|extern_kernels\.\w+)\(", re.M)


def compiled_pass(model, rows: int) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """-> (eager logits, compiled logits, the kernels the compiled pass calls, in order)."""
    ids = torch.arange(3, 3 + rows)[None]
    torch._dynamo.reset()
    with torch.inference_mode():
        eager = model(input_ids=ids).logits
        out, codes = run_and_get_code(torch.compile(lambda i: model(input_ids=i).logits, dynamic=False), ids)
    calls = [c[c.index("def call"):] for c in codes]
    return eager, out, [m.group(1) for c in calls for m in KERNEL_CALL.finditer(c)]


def deferred(model) -> list[bool]:
    """For each layer: whether its two norms are left to the products that read them."""
    return [all("forward" in norm.__dict__ for norm in (layer.input_layernorm, layer.post_attention_layernorm))
            for layer in model.model.layers]


@pytest.mark.parametrize("joined", [False, True])
def test_short_passes_products_become_reductions_with_their_norms_inside(joined):
    model = tiny.tiny_model("qwen2", vocab=320, layers=2, seed=4)
    if joined:
        assert fuse_projections(model) == 4
    _, _, before = compiled_pass(model, 1)
    assert row_products.reduce_row_products(model) == (8 if joined else 14)  # per layer: qkv, o, MLP, down / 7 linears
    assert row_products.reduce_row_products(model) == 0 and deferred(model) == [True, True]
    for rows in (1, 2):  # a draft's step, and a round's first (the last two committed tokens)
        with torch.inference_mode():
            plain = model(input_ids=torch.arange(3, 3 + rows)[None]).logits  # an eager pass: as before
        eager, out, after = compiled_pass(model, rows)
        assert torch.equal(plain, eager)
        torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)
        assert [c for c in after if c.startswith("extern")] == ["extern_kernels.mm"], rows  # the head (not a layer's)
        assert len(after) < len(before) / 2, (before, after)  # the products' neighbours fused into them
    eager, out, wide = compiled_pass(model, 3)  # more rows: the library's products and the norms, as before
    torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)
    assert len([c for c in wide if c.startswith("extern")]) == 1 + 2 * (4 if joined else 7)


def test_half_precision_logits_stay_close():
    model = tiny.tiny_model("qwen2", vocab=320, layers=2, seed=4, dtype=torch.bfloat16)
    fuse_projections(model)
    row_products.reduce_row_products(model)
    eager, out, _ = compiled_pass(model, 1)
    assert (out.float() - eager.float()).abs().max() < 0.02 * eager.float().abs().max()  # a few bf16 roundings apart


def test_large_weights_keep_the_librarys_product_and_their_norm(monkeypatch):
    monkeypatch.setattr(row_products, "MAX_BYTES", 64 * 64 * 4)  # a 64x64 float32 weight: q, k, v, o reduce
    model = tiny.tiny_model("qwen2", vocab=320, layers=1, seed=4)
    assert row_products.reduce_row_products(model) == 4
    layer = model.model.layers[0]  # the attention's norm goes into q, k and v; the MLP's stays (gate, up are 128x64)
    assert "forward" in layer.input_layernorm.__dict__ and "forward" not in layer.post_attention_layernorm.__dict__
    eager, out, calls = compiled_pass(model, 1)
    torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)
    assert len([c for c in calls if c.startswith("extern")]) == 1 + 3  # the head, and gate, up and down


def test_layers_of_an_unknown_kind_keep_their_norms(monkeypatch):
    monkeypatch.setattr(row_products, "LAYERS", set())  # whether a norm feeds only those products is not known
    model = tiny.tiny_model("llama", vocab=320, layers=2, seed=4)
    assert row_products.reduce_row_products(model) == 14 and deferred(model) == [False, False]
    eager, out, _ = compiled_pass(model, 1)
    torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)


def test_switched_on_for_cuda_drafts_only(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_DRAFT_GEMV", "1")
    assert row_products.gemv_on(torch.device("cuda")) and not row_products.gemv_on(torch.device("cpu"))
    monkeypatch.delenv("PLAYGROUND_DRAFT_GEMV")
    assert not row_products.gemv_on(torch.device("cuda"))


@pytest.mark.parametrize("fused", [False, True])
def test_speculation_with_a_reduced_draft_is_exact(fused, tokenizer, monkeypatch):
    """Per-pass graphs (a CPU's path) and whole rounds as programs (a GPU's); the target untouched."""
    if fused:
        monkeypatch.setattr(session.choice, "FUSED_DEVICES", {"cpu", "cuda"})
    target = tiny.tiny_model("qwen2", vocab=len(tokenizer), layers=2, seed=11, eos_id=tokenizer.eos_token_id)
    draft = tiny.perturbed_copy(target, noise=0.4, seed=3)
    fuse_projections(draft)
    assert row_products.reduce_row_products(draft) == 8
    pair = tiny.make_pair(target, draft, tokenizer, eos_ids=[])
    prompt = tokenizer(PROMPT).input_ids
    result = session.run(pair, prompt, session.settings(k=3, max_new_tokens=30, compile=True))
    assert result.token_ids == hf_greedy(target, prompt, 30, eos_id=NO_EOS)
    assert 0 < result.stats["accepted"] < result.stats["proposed"]


def test_a_model_compiled_already_is_left_as_it_is():
    """Its graphs guard only on their arguments (playground.engine.static): they would not see the change."""
    from playground.engine.static import StaticRunner
    model = tiny.tiny_model("qwen2", vocab=320, layers=1, seed=4)
    StaticRunner(model, 320, 64, {(1, 1)})
    assert row_products.reduce_row_products(model) == 0
    assert not any(getattr(m, "playground_reduce", False) for m in model.modules())
