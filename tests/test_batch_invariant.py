"""bfloat16 on a CPU: big models get it where the CPU multiplies bfloat16 natively, and every
half-precision CPU model is made batch-invariant, so a pass of k+1 tokens gives bitwise the logits
of one-token passes and greedy speculation stays the target alone (the real SmolLM2 case is in
test_smollm2)."""
import pytest
import torch
import torch.nn.functional as F

from playground import models, packed_linear, session
from playground.batch_invariant import two_row_linear
from playground.engine.static import StaticRunner
from tests.test_engine_greedy import hf_greedy


def test_cpu_dtype_follows_size_and_native_bf16(monkeypatch):
    big, small = 4 * models.SMALL_MODEL + 1, 4 * models.SMALL_MODEL // 10
    cpu = torch.device("cpu")
    monkeypatch.delenv("PLAYGROUND_CPU_DTYPE", raising=False)
    monkeypatch.setattr(models, "native_bf16", lambda: True)
    assert models.default_dtype(cpu, big) == torch.bfloat16
    assert models.default_dtype(cpu, small) == torch.float32  # too small to gain
    monkeypatch.setattr(models, "native_bf16", lambda: False)
    assert models.default_dtype(cpu, big) == torch.float32  # bfloat16 would be emulated
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "bfloat16")
    assert models.default_dtype(cpu, small) == torch.bfloat16
    monkeypatch.setenv("PLAYGROUND_CPU_DTYPE", "float32")
    monkeypatch.setattr(models, "native_bf16", lambda: True)
    assert models.default_dtype(cpu, big) == torch.float32
    assert models.default_dtype(torch.device("cuda"), small) == torch.bfloat16


@pytest.mark.parametrize("shape", [(48,), (1, 48), (1, 1, 48), (1, 5, 48), (3, 48)])
def test_two_row_linear_keeps_shapes_and_rows(shape):
    torch.manual_seed(0)
    layer = torch.nn.Linear(48, 32).to(torch.bfloat16)
    x = torch.randn(shape, dtype=torch.bfloat16)
    out = two_row_linear(layer, x)
    assert out.shape == F.linear(x, layer.weight, layer.bias).shape
    rows = x.reshape(-1, 48)
    wide = F.linear(torch.cat([rows, rows[:1]]) if len(rows) == 1 else rows, layer.weight, layer.bias)
    assert torch.equal(out.reshape(-1, 32), wide[: len(rows)])


def test_half_precision_cpu_models_decode_exactly(saved_pair):
    target, draft = saved_pair
    pair = models.load_pair(str(target), str(draft), "cpu", dtype=torch.bfloat16)
    for model in (pair.target, pair.draft):
        assert model.dtype == torch.bfloat16 and model.config._attn_implementation == "eager"
        assert model.playground_batch_invariant
        packed = [packed_linear.ATTR in m.__dict__ for m in model.modules() if isinstance(m, torch.nn.Linear)]
        assert packed and all(p == models.native_bf16() for p in packed)  # packed where exactness was checked
    prompt = session.encode_prompt(pair, "def parse(text):\n")
    alone = hf_greedy(pair.target, prompt, 40, eos_id=pair.tokenizer.eos_token_id)
    for k in (1, 2, 4):
        assert session.run(pair, prompt, session.settings(k=k, max_new_tokens=40)).token_ids == alone
    compiled = session.settings(k=2, compile=True)  # compiled graphs would not be batch-invariant: eager
    assert not any(isinstance(r, StaticRunner) for r in session.runners(pair, len(prompt), compiled))
    note = session.compile_fallback(pair, compiled)
    assert "the target: half precision on a CPU" in note and "the draft: half precision" in note


def test_float32_models_are_left_alone(saved_pair):
    target, _ = saved_pair
    model, _, _ = models.load_model(str(target), torch.device("cpu"), torch.float32)
    assert not getattr(model, "playground_batch_invariant", False)


@pytest.mark.skipif(not models.native_bf16(), reason="packed weights are used only on CPUs with native bfloat16")
@pytest.mark.parametrize("shape", [(1536, 576), (576, 1536), (8191, 576)])
def test_packed_rows_do_not_depend_on_the_row_count(shape):
    """What batch_invariant relies on: with packed weights, products of 2 to 16 rows agree row by row,
    bitwise (one row is computed as two), and they are the unpacked product up to rounding."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(shape[1], shape[0], bias=False).to(torch.bfloat16)
    assert packed_linear.pack_linears(layer)
    x = torch.randn(16, shape[1], dtype=torch.bfloat16)
    with torch.inference_mode():
        full = two_row_linear(layer, x)
        for n in range(1, 16):
            assert torch.equal(two_row_linear(layer, x[:n]), full[:n])
        assert torch.allclose(full.float(), F.linear(x, layer.weight).float(), rtol=0.02, atol=0.02)


def test_what_is_not_packed(monkeypatch):
    layer = torch.nn.Linear(8, 4)
    assert not packed_linear.pack_linears(layer)  # float32: stays on F.linear
    small = torch.nn.Linear(8, 4).to(torch.bfloat16)
    monkeypatch.setattr(packed_linear, "MAX_PACKED_BYTES", 8 * 4 * 2 - 1)
    assert not packed_linear.pack_linears(small)  # a second copy too big to keep
    assert packed_linear.ATTR not in small.__dict__
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    assert torch.equal(packed_linear.linear(x, small.weight, small.bias, None), F.linear(x, small.weight, small.bias))
