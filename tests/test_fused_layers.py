"""Decoder layers through the fused products (playground.engine.fused_layers, PLAYGROUND_FUSED_LAYERS):
a tiny Qwen2 (biases on q/k/v) and a tiny Llama (none), their projections joined, give the logits
of their own forward to float16's rounding, eager, and compiled by layer (the layers' region is the
fused forward's); a prefill wider than a program holds runs the layer's own forward. Under Triton's interpreter on
the CPU, in a process of its own, in float16 (see test_fused_linear.py)."""
import os
import subprocess
import sys

import torch

from playground.engine import fused_layers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LAYERS = """
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
from playground.engine import fused_layers, layer_regions
from playground.engine import fused_linear
from playground.models.fused_projections import fuse_projections
calls, real = [], fused_linear.fused_linear
fused_linear.fused_linear = lambda *a, **kw: calls.append(kw["prologue"]) or real(*a, **kw)  # counted
torch.manual_seed(0)
shape = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=128)
for config in (Qwen2Config(**shape), LlamaConfig(**shape)):
    model = (Qwen2ForCausalLM if isinstance(config, Qwen2Config) else LlamaForCausalLM)(config).half().eval()
    for p in model.parameters():  # norms and biases not all ones and zeros: each is used where it belongs
        p.data += 0.1 * torch.randn_like(p)
    fuse_projections(model)
    calls.clear()
    short, wide = torch.randint(0, 300, (1, 6)), torch.randint(0, 300, (1, 20))
    with torch.inference_mode():
        want = [model(ids).logits.float() for ids in (short, wide)]
        assert fused_layers.fuse_layers(model) == 2 and fused_layers.fuse_layers(model) == 0  # once
        assert fused_layers.fuse_head(model) and not fused_layers.fuse_head(model)
        got = [model(short).logits.float()]
        assert calls == ["norm", "none", "norm", "gated"] * 2 + ["none"], calls  # each layer's four kernels, the head's
        got.append(model(wide).logits.float())
        assert len(calls) == 9 and torch.equal(got[1], want[1]), "20 rows: the layer's own forward, the head's own product"
        scale, err = want[0].abs().max().item(), (got[0] - want[0]).abs().max().item()
        assert err < 2e-2 * scale, (type(model).__name__, err, scale)
        assert layer_regions.mark_layer_regions(model) == 2
        compiled = torch.compile(model.forward)
        again = compiled(short).logits.float()
        assert (again - got[0]).abs().max().item() < 2e-2 * scale, type(model).__name__
print("ok")
"""


def test_fused_layers_give_the_models_logits_eager_and_compiled_by_layer():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", LAYERS], capture_output=True, text=True, timeout=900, env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout[-2000:] + done.stderr[-4000:]


def test_off_by_default_and_named_models_otherwise(monkeypatch):
    target, draft = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    monkeypatch.delenv("PLAYGROUND_FUSED_LAYERS", raising=False)
    assert fused_layers.fused_models(target, draft) == []
    monkeypatch.setenv("PLAYGROUND_FUSED_LAYERS", "draft")
    assert fused_layers.fused_models(target, draft) == [draft]
    monkeypatch.setenv("PLAYGROUND_FUSED_LAYERS", "both")
    assert fused_layers.fused_models(target, draft) == [target, draft]
    assert fused_layers.fuse_layers(target) == 0 and fused_layers.fuse_layers(None) == 0  # nothing of a known kind
    assert not fused_layers.fuse_head(target) and not fused_layers.fuse_head(None)  # (a Linear, not a model)
