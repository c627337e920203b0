"""A draft's one-row matrix products compiled as reductions that absorb their neighbours
(PLAYGROUND_DRAFT_GEMV=1; an experiment until measured on a GPU).

A draft step multiplies one row by each of its layers' weights. On an H200 each such product of
the Qwen2.5-0.5B draft took cuBLAS 4-8 us (and 1.8 us more for a split-K reduction) where its
weights take 0.5-4 us to read, and every pointwise step between two products (the MLP's
activation, a bias, the residual add) is a kernel of its own: a 24-layer step is about 380 kernels,
1.34 ms against 0.24 ms of weights (BENCHMARKS.md "GPU"). Written as a sum over the input axis,

    y[n] = sum_k x[k] W[n, k]        x [1, K], W [N, K]:  (x[:, None, :] * W).sum(-1)

inductor compiles the product into a reduction kernel of its own making, reading W once (in the
layout it is stored), and fuses into it the pointwise work around it: the activation before
down_proj is computed as down_proj's reduction loads it, a bias or the residual add as it stores.
Products are summed in float32 (inductor accumulates a bfloat16 reduction so) and rounded once.

Only the draft: the target alone is the baseline every speed is a ratio to, and it stays as it
is built (its verify passes carry k+1 rows anyway). Only while torch.compile traces a pass of one
row (an eager product would first write the [N, K] elementwise product), and only for weights under
MAX_BYTES: a larger product is bound by reading its weights, which cuBLAS does near the copy
bandwidth (the 0.5B's 272 MB head: 101 us)."""
import os
import types

import torch
import torch.nn.functional as F

MAX_BYTES = 32 << 20  # ~8 us of reading at 4 TB/s: about a small cuBLAS product's fixed cost


def gemv_on(device: torch.device) -> bool:
    return device.type == "cuda" and os.environ.get("PLAYGROUND_DRAFT_GEMV") == "1"


def product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, one_row: bool) -> torch.Tensor:
    """F.linear(x, weight, bias), written as a reduction when `one_row` allows it and x is one row
    being compiled: x [.., K] (one row), weight [N, K] -> [.., N]."""
    if (one_row and torch.compiler.is_compiling() and x.numel() == x.shape[-1]
            and weight.numel() * weight.element_size() <= MAX_BYTES):
        y = (x.unsqueeze(-2) * weight).sum(-1)  # [.., 1, K] * [N, K] -> [.., N, K] -> [.., N]: fused, never stored
        return y if bias is None else y + bias
    return F.linear(x, weight, bias)


def _linear_forward(self, x: torch.Tensor) -> torch.Tensor:
    return product(x, self.weight, self.bias, True)


def reduce_row_products(model: torch.nn.Module) -> int:
    """Make the one-row products of every decoder layer of this (draft) model reductions when
    compiled: plain linear layers and the joined ones (playground.models.fused_projections, which
    ask `playground_one_row`); -> modules marked now."""
    marked = 0
    for layer in (m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")):
        for module in layer.modules():
            if getattr(module, "playground_one_row", False):
                continue
            if type(module) is torch.nn.Linear and "forward" not in module.__dict__:
                module.forward = types.MethodType(_linear_forward, module)
            elif not (hasattr(module, "playground_gate_up") or type(module).__name__ == "JoinedQKV"):
                continue
            module.playground_one_row = True
            marked += 1
    return marked
