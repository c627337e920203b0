"""row_attention: a pass's causal attention rows from a C kernel, each row bitwise the same in a pass of one token
and of many (what greedy speculation's identity needs of a float32 CPU model), near softmax attention."""
import shutil

import pytest
import torch

from playground.models import row_attention, row_products

needs_kernel = pytest.mark.skipif(not (row_products.wanted() and (shutil.which("cc") or shutil.which("gcc"))),
                                  reason="the kernel needs Linux on x86-64 with AVX2, FMA and a C compiler")


def attended(query, key, value, scale):
    out = torch.empty(1, query.shape[2], query.shape[1], query.shape[3])  # [1, r, H, d]
    assert row_attention.takes(query, key, value)
    row_attention.attend(query, key, value, scale, out)
    return out


def reference(query, key, value, scale, row, seen):
    """softmax(q k^T * scale) v of one query row over its first `seen` keys, in double precision -> [H, d]."""
    groups = query.shape[1] // key.shape[1]
    k, v = (t.repeat_interleave(groups, dim=1)[0, :, :seen].double() for t in (key, value))  # [H, seen, d]
    weights = torch.softmax(query[0, :, row].double()[:, None] @ k.transpose(1, 2) * scale, dim=-1)  # [H, 1, seen]
    return (weights @ v)[:, 0]


@needs_kernel
@pytest.mark.parametrize("heads, kv_heads, d, keys, rows", [(9, 3, 64, 203, 5), (14, 2, 64, 37, 4), (4, 4, 19, 9, 9),
                                                            (12, 2, 128, 1030, 3), (6, 3, 64, 1, 1), (8, 2, 72, 12, 2)])
def test_each_row_is_a_one_row_passs_row_and_near_softmax_attention(heads, kv_heads, d, keys, rows):
    """Grouped heads of 3, 7, 1, 6, 2 and 4 (SmolLM2, Qwen2.5-0.5B, none, 1.5B...: blocks of three heads and what is
    left), head sizes past 64 lanes and with a tail past the eights, key counts past and under the blocks of four and
    eight, the queries a strided view as transformers gives them: every row of a wide pass bitwise the row a pass of
    that one token gives over contiguous copies of the keys it sees, and within float32 rounding of softmax attention."""
    gen = torch.Generator().manual_seed(heads + keys)
    query = torch.randn(1, rows, heads, d, generator=gen).transpose(1, 2)  # [1, H, r, d], strided
    key, value = (torch.randn(1, kv_heads, keys, d, generator=gen) for _ in range(2))
    wide = attended(query, key, value, d ** -0.5)  # [1, r, H, d]
    for row in range(rows):
        seen = keys - rows + row + 1
        one = attended(query[:, :, row:row + 1].contiguous(), key[:, :, :seen].contiguous(),
                       value[:, :, :seen].contiguous(), d ** -0.5)
        assert torch.equal(one[0, 0], wide[0, row]), row
        torch.testing.assert_close(wide[0, row].double(), reference(query, key, value, d ** -0.5, row, seen),
                                   rtol=1e-5, atol=1e-5)


@needs_kernel
def test_a_trees_runs_attend_as_the_torch_operations_do(monkeypatch):
    """batch_invariant's row-invariant attention over a token tree's runs (the first over the keys before it, the
    second over keys gathered by index, as runner.tree_runs gives them): the kernel's rows within float32 rounding of
    the torch operations' (what it replaces, and what runs where the library cannot be built), each run's rows written
    in their place."""
    from types import SimpleNamespace
    from playground.models import batch_invariant
    gen = torch.Generator().manual_seed(7)
    query = torch.randn(1, 5, 9, 64, generator=gen).transpose(1, 2)  # [1, H, 5, d]
    key, value = (torch.randn(1, 3, 30, 64, generator=gen) for _ in range(2))
    runs = [(0, 2, 27), (2, 5, torch.tensor([0, 3, 7, 11, 27, 28, 29]))]  # (rows, keys: a count or their indices)
    module = SimpleNamespace(num_key_value_groups=3)
    by_kernel, _ = batch_invariant.row_invariant_attention(module, query, key, value, None, 0.125, tree_runs=runs)
    monkeypatch.setattr(row_attention, "takes", lambda *tensors: False)
    by_torch, _ = batch_invariant.row_invariant_attention(module, query, key, value, None, 0.125, tree_runs=runs)
    assert by_kernel.shape == by_torch.shape == (1, 5, 9, 64)
    torch.testing.assert_close(by_kernel, by_torch, rtol=1e-5, atol=1e-5)


@needs_kernel
def test_a_nan_score_stays_a_nan():
    """A NaN among the scores (a model gone wrong) comes out NaN, as torch's softmax gives it, not a finite row."""
    query, key = torch.ones(1, 1, 1, 8), torch.ones(1, 1, 9, 8)
    key[0, 0, 4, 0] = float("nan")
    assert torch.isnan(attended(query, key, torch.ones(1, 1, 9, 8), 1.0)).all()


@needs_kernel
def test_a_weight_far_below_the_largest_counts_as_nothing():
    """Scores 100 apart: the exponent clamped at -87 gives the far key a weight of nothing (under 2^-125), not a
    wrapped exponent's garbage; equal scores share the weight evenly."""
    query = torch.zeros(1, 1, 1, 8)
    query[..., 0] = 1.0
    key = torch.zeros(1, 1, 3, 8)
    key[0, 0, 0, 0], key[0, 0, 1, 0], key[0, 0, 2, 0] = -100.0, 0.0, 0.0
    value = torch.stack([torch.full((8,), 1e30), torch.ones(8), 3 * torch.ones(8)])[None, None]
    out = attended(query, key, value, 1.0)
    assert torch.allclose(out[0, 0, 0], torch.full((8,), 2.0))


def test_what_the_kernel_does_not_take_goes_back_to_torch(monkeypatch):
    """bf16 tensors, a batch of two, heads that do not group evenly, values of another size than the keys, a
    gradient asked for (the kernel keeps none), or no library (PLAYGROUND_ROW_KERNEL=0): not taken (batch_invariant's
    torch operations attend then); an output attend cannot write is refused."""
    q, k = torch.randn(1, 6, 2, 16), torch.randn(1, 3, 5, 16)
    assert row_attention.takes(q, k, k) == (row_products.kernel() is not None)
    assert not row_attention.takes(q.bfloat16(), k.bfloat16(), k.bfloat16())
    assert not row_attention.takes(q.expand(2, -1, -1, -1), k.expand(2, -1, -1, -1), k.expand(2, -1, -1, -1))
    assert not row_attention.takes(torch.randn(1, 5, 2, 16), k, k)
    assert not row_attention.takes(q, k, torch.randn(1, 3, 5, 8))
    assert not row_attention.takes(q.requires_grad_(), k, k)
    if row_products.kernel() is not None:
        with pytest.raises(ValueError, match="contiguous float32"):
            row_attention.attend(q.detach(), k, k, 1.0, torch.empty(1, 6, 2, 16))
    monkeypatch.setenv("PLAYGROUND_ROW_KERNEL", "0")
    row_products.kernel.cache_clear()
    try:
        assert not row_attention.takes(q, k, k)
    finally:
        monkeypatch.delenv("PLAYGROUND_ROW_KERNEL")
        row_products.kernel.cache_clear()
