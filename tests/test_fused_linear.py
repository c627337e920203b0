"""The fused product of a few rows (playground.engine.fused_linear): each prologue and epilogue
gives what transformers' modules compute (RMSNorm then a Linear; SiLU(gate) * up then a Linear; a
Linear with a bias; a residual added), to float16's rounding, for row counts up to 16 and sizes
that are no multiple of a block. Run under Triton's interpreter on the CPU in a process of its own
and in float16 (the interpreter's bfloat16 products are wrong: test_decode_attention.py)."""
import os
import subprocess
import sys

import pytest
import torch

from playground.engine.fused_linear import block_n, fused_linear

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KERNEL = """
import torch
import torch.nn.functional as F
from playground.engine.fused_linear import Blocks, fused_linear
gen = torch.Generator().manual_seed(0)
def rand(*shape, scale=1.0):
    return (torch.randn(*shape, generator=gen) * scale).half()
def rms(x, g, eps):  # transformers' Qwen2RMSNorm / LlamaRMSNorm
    h = x.float()
    return g * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).half()
SPLITS = {"tl.dot": Blocks(), "tl.dot, k 256": Blocks(block_k=256, stages=5),  # rows narrow: summed without tl.dot,
          "narrow": Blocks(narrow_rows=16, block_k=64, programs=8)}  # 1 to 16 outputs a program, rows padded to 2^i
for m, k, n in ((1, 96, 40), (3, 200, 33), (5, 200, 33), (16, 130, 1100)):
    w, b, g, res = rand(n, k, scale=k ** -0.5), rand(n), rand(k), rand(1, m, n)
    x, gate_up = rand(1, m, k, scale=3.0), rand(1, m, 2 * k)
    silu = (F.silu(gate_up[..., :k].float()).half() * gate_up[..., k:])
    for split, blocks in SPLITS.items():
        cases = {  # name: (fused, transformers' modules in float32 products, rounded as they round)
            "plain": (fused_linear(x, w, blocks=blocks), F.linear(x.float(), w.float()).half()),
            "bias": (fused_linear(x, w, b, blocks=blocks), F.linear(x.float(), w.float(), b.float()).half()),
            "norm": (fused_linear(x, w, prologue="norm", norm_weight=g, eps=1e-6, blocks=blocks),
                     F.linear(rms(x, g, 1e-6).float(), w.float()).half()),
            "gated+residual": (fused_linear(gate_up, w, prologue="gated", residual=res, blocks=blocks),
                               (res.float() + F.linear(silu.float(), w.float()).half().float()).half()),
            "norm+bias+residual": (fused_linear(x, w, b, prologue="norm", norm_weight=g, residual=res, blocks=blocks),
                                   (res.float() + F.linear(rms(x, g, 1e-6).float(), w.float(), b.float()).half().float()).half()),
        }
        for name, (got, want) in cases.items():
            assert got.shape == want.shape and got.dtype == torch.float16, (split, name, got.shape, got.dtype)
            err = (got.float() - want.float()).abs().max().item()
            assert err <= 4e-3 * want.float().abs().max().item() + 1e-3, (m, k, n, split, name, err)
        unnormed = F.linear(x.float(), w.float()).half()  # the test tells a missing prologue from a present one
        assert (cases["norm"][0].float() - unnormed.float()).abs().max() > 0.1
print("ok")
"""


def test_each_prologue_and_epilogue_is_what_the_modules_compute():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", KERNEL], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-4000:]


@pytest.mark.parametrize("call", [
    lambda x, w: fused_linear(x, w, prologue="softmax"),               # no such prologue
    lambda x, w: fused_linear(x, w, prologue="norm"),                  # a norm without its weight
    lambda x, w: fused_linear(x, w, prologue="gated"),                 # gated needs 2K inputs
    lambda x, w: fused_linear(x.expand(17, 8), w),                     # more rows than a program holds
])
def test_what_it_cannot_take_is_refused_before_a_kernel_runs(call):
    with pytest.raises(ValueError):
        call(torch.zeros(1, 8, dtype=torch.float16), torch.zeros(4, 8, dtype=torch.float16))


def test_about_one_wave_of_programs_where_the_outputs_allow():
    assert block_n(896) == 16 and block_n(1152) == 16  # a 0.5B draft's o and q/k/v: 56 and 72 programs
    assert block_n(9728) == 64  # its joined gate/up: 152 programs
    narrow = dict(least=1, most=16)  # without tl.dot: 224 programs for o and down, 144 for q/k/v
    assert block_n(896, **narrow) == 4 and block_n(1152, **narrow) == 8 and block_n(9728, **narrow) == 16
