"""A draft's matrix products of one or two rows compiled as reductions that absorb their neighbours
(PLAYGROUND_DRAFT_GEMV=1; an experiment until measured on a GPU).

A draft step multiplies one row by each of its layers' weights. On an H200 each such product of
the Qwen2.5-0.5B draft took cuBLAS 4-8 us (and 1.8 us more for a split-K reduction) where its
weights take 0.5-4 us to read, and every step between two products (a norm, the MLP's
activation, a bias, the residual add) is a kernel of its own: a 24-layer step is about 380
kernels, 1.34 ms against 0.24 ms of weights (BENCHMARKS.md "GPU"). Written as a sum over the
input axis,

    y[n] = sum_k x[k] W[n, k]        x [1, K], W [N, K]:  (x[:, None, :] * W).sum(-1)

inductor compiles the product into a reduction kernel of its own making, reading W once in the
layout it is stored, and fuses into it the pointwise work around it: the activation before
down_proj is computed as down_proj's reduction loads it, a bias or the residual add as it stores.
The RMS norm before q/k/v and before gate/up goes inside those products too (normed_sum): in a
layer of a known kind (LAYERS) the norm then hands its input on as it is. Products are summed in
float32 (inductor accumulates a bfloat16 reduction so) and rounded once.

Only the draft: the target alone is the baseline every speed is a ratio to, and it stays as it
is built (its verify passes carry k+1 rows anyway; a loaded model serves every pair that names it,
so a reduced draft later used as a target keeps its reductions, in its short passes only). Only
while torch.compile traces a pass of up to ROWS rows (an eager product would first write the
[N, K] elementwise product; two rows read each weight twice, the second time mostly from the GPU's
L2 cache), and only for weights under MAX_BYTES: a larger product is bound by reading its
weights, which cuBLAS does near the copy bandwidth (the 0.5B's 272 MB head: 101 us). Tested on a
CPU (inductor's C++ kernels, which fuse more than Triton's); on a GPU, scripts/gpu_check.py
`--only gemv` measures it."""
import os
import types

import torch
import torch.nn.functional as F

MAX_BYTES = 32 << 20  # ~8 us of reading at 4 TB/s: about a small cuBLAS product's fixed cost
ROWS = 2  # a draft's steps: one token, and each round's first, which feeds the last two committed tokens
LAYERS = {"LlamaDecoderLayer", "Qwen2DecoderLayer", "Qwen3DecoderLayer", "MistralDecoderLayer"}
NORMS = {"LlamaRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm", "MistralRMSNorm"}


def gemv_on(device: torch.device) -> bool:
    return device.type == "cuda" and os.environ.get("PLAYGROUND_DRAFT_GEMV") == "1"


def short(x: torch.Tensor) -> bool:
    """Whether x [.., K] is a pass of at most ROWS rows being compiled (shapes are fixed then: a Python bool)."""
    return torch.compiler.is_compiling() and x.numel() <= ROWS * x.shape[-1]


def module_product(module: torch.nn.Module, x: torch.Tensor, weight: torch.Tensor,
                   bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear(x, weight, bias) for this module: as a reduction when it is marked and x is a short
    pass being compiled, with its norm applied inside when the norm before it is deferred to it.
    x [.., K], weight [N, K] -> [.., N]."""
    if not (getattr(module, "playground_reduce", False) and short(x)):
        return F.linear(x, weight, bias)
    norm = module.__dict__.get("playground_norm")
    if norm is None:
        y = (x.float().unsqueeze(-2) * weight).sum(-1)  # [.., 1, K] * [N, K] -> [.., N] float32
    else:
        y = normed_sum(x, norm, weight)
    return (y if bias is None else y + bias).to(x.dtype)  # rounded once; the [N, K] products are never stored


def normed_sum(x: torch.Tensor, norm: torch.nn.Module, weight: torch.Tensor) -> torch.Tensor:
    """The product of RMSNorm(x) = g * x * r, r = rsqrt(mean_k x_k^2 + eps), with weight [N, K]:

        y[n] = sum_k g_k x_k r W[n, k] = r * sum_k g_k x_k W[n, k]

    The sum of squares is reduced again for every output row, beside the product over the same
    [N, K] range, so the two reductions are one kernel (reading x K times more is nothing beside W)."""
    n, k = weight.shape
    xf = x.float()
    squares = (xf * xf).unsqueeze(-2).expand(*x.shape[:-1], n, k).sum(-1)  # [.., N]: the same sum in every row
    dot = ((xf * norm.weight).unsqueeze(-2) * weight).sum(-1)  # [.., N]
    return dot * torch.rsqrt(squares / k + norm.variance_epsilon)  # [.., N] float32


def _linear_forward(self, x: torch.Tensor) -> torch.Tensor:
    return module_product(self, x, self.weight, self.bias)


def _deferred_norm_forward(self, x: torch.Tensor) -> torch.Tensor:
    """The norm; or, for a short pass being compiled, its input as it is: the products reading it apply it.
    (Nothing runs between a norm and its products in the layers of LAYERS, so a graph break elsewhere
    never leaves one traced and the other eager; a wrong draft would cost acceptance, not exactness.)"""
    return x if short(x) else type(self).forward(self, x)


def reduce_row_products(model: torch.nn.Module) -> int:
    """Make the short passes' products of every decoder layer of this (draft) model reductions when
    compiled (plain linear layers and the joined ones of playground.models.fused_projections), and
    in layers of a known kind fold each RMS norm into the products that read it; -> products marked
    now. Not a model compiled already: its graphs would not see it (they guard on their arguments)."""
    if "_playground_compiled" in model.__dict__:
        return 0
    marked = 0
    for layer in (m for m in model.modules() if is_decoder_layer(m)):
        for module in layer.modules():
            if reducible(module) and not getattr(module, "playground_reduce", False) and small(module):
                if type(module) is torch.nn.Linear:
                    module.forward = types.MethodType(_linear_forward, module)
                module.playground_reduce = True
                marked += 1
        if type(layer).__name__ in LAYERS:
            defer_norm(layer.input_layernorm, readers(layer.self_attn, ("q_proj", "k_proj", "v_proj")))
            defer_norm(layer.post_attention_layernorm, readers(layer.mlp, ("gate_proj", "up_proj")))
    return marked


def is_decoder_layer(module: torch.nn.Module) -> bool:
    """A transformers decoder layer (Qwen2DecoderLayer, LlamaDecoderLayer, ...)."""
    return type(module).__name__.endswith("DecoderLayer")


def reducible(module: torch.nn.Module) -> bool:
    """A plain linear layer (its forward not replaced: accelerate's hooks), or a joined product."""
    return ((type(module) is torch.nn.Linear and "forward" not in module.__dict__)
            or type(module).__name__ == "JoinedQKV" or "playground_gate_up" in module._parameters)


def small(module: torch.nn.Module) -> bool:
    weight = module.playground_gate_up if "playground_gate_up" in module._parameters else module.weight
    return weight.numel() * weight.element_size() <= MAX_BYTES


def readers(block: torch.nn.Module, names: tuple[str, ...]) -> list:
    """The products that read the block's input: the joined one (fused_projections), or the named ones."""
    if "playground_gate_up" in block._parameters:
        return [block]
    modules = [getattr(block, name, None) for name in names]
    return modules[:1] if type(modules[0]).__name__ == "JoinedQKV" else modules


def defer_norm(norm: torch.nn.Module, products: list) -> None:
    """Leave this norm to its products, when every one of them is a marked reduction."""
    if type(norm).__name__ not in NORMS or "forward" in norm.__dict__:
        return
    if not all(p is not None and getattr(p, "playground_reduce", False) for p in products):
        return
    for p in products:
        p.__dict__["playground_norm"] = norm  # not registered as a submodule: the model's tree is unchanged
    norm.forward = types.MethodType(_deferred_norm_forward, norm)
