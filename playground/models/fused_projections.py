"""Each decoder layer's query/key/value projections as one matrix product, and its gate/up
projections as another: on a GPU a one-token pass is bound by how many kernels it launches (a
Qwen2.5-0.5B draft step: 24 layers of about 16 kernels, 1.64 ms on an H200 against 0.24 ms of
weights to read), and this takes 3 of them out of every layer.

    q_proj, k_proj, v_proj  [Hq*d, h], [Hkv*d, h], [Hkv*d, h] -> one weight [(Hq + 2 Hkv) d, h]
    gate_proj, up_proj      [I, h], [I, h]                    -> one weight [2 I, h]

The joined weight replaces the separate ones (no second copy). The attention module's own forward
still calls q_proj, k_proj and v_proj in that order on the same input (transformers' Llama, Qwen2,
Qwen3 and Mistral do): q_proj now computes all three and hands k and v to the two that follow
through a slot they share; the MLP's forward is replaced by one that splits the joined product.
Same products, summed over the same inputs: a row's values may round differently from the
separate products (another GEMM shape), identically in speculation and the target alone, which
run the same model. Models on a GPU are joined at load (PLAYGROUND_FUSE_PROJECTIONS=0: not): on an
H200 a Qwen2.5-7B token took 4.95 ms joined against 5.49 plain, a 0.5B draft step 1.34 ms against
1.64 (scripts/gpu_check.py --only real,joined, 2026-11-26; BENCHMARKS.md "GPU")."""
import threading
import types

import torch
import torch.nn.functional as F

from playground.limits import env_flag

ATTENTIONS = {"LlamaAttention", "Qwen2Attention", "Qwen3Attention", "MistralAttention"}
MLPS = {"LlamaMLP", "Qwen2MLP", "Qwen3MLP", "MistralMLP"}


def fuses_on(device: torch.device) -> bool:
    return device.type == "cuda" and env_flag("PLAYGROUND_FUSE_PROJECTIONS", True)


class Slot:
    """Where JoinedQKV leaves k and v for the two pieces called next: per thread in eager passes
    (runs beside each other share a model, and torch lets another thread run between two calls),
    a plain list while torch.compile traces (in the graph it is dataflow, nothing kept)."""

    def __init__(self):
        self.local = threading.local()
        self.traced: list = [None, None]

    def cells(self) -> list:
        if torch.compiler.is_compiling():
            return self.traced
        if not hasattr(self.local, "cells"):
            self.local.cells = [None, None]
        return self.local.cells


class JoinedQKV(torch.nn.Module):
    """q_proj's place: x -> q, leaving k and v in `slot` for the two pieces called next."""

    def __init__(self, q: torch.nn.Linear, k: torch.nn.Linear, v: torch.nn.Linear):
        super().__init__()
        self.sizes = [q.out_features, k.out_features, v.out_features]
        self.weight = torch.nn.Parameter(torch.cat([q.weight, k.weight, v.weight]), requires_grad=False)
        biases = [p.bias for p in (q, k, v)]
        self.bias = torch.nn.Parameter(torch.cat(biases), requires_grad=False) if biases[0] is not None else None
        self.slot = Slot()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = F.linear(x, self.weight, self.bias).split(self.sizes, dim=-1)
        cells = self.slot.cells()
        cells[0], cells[1] = k, v
        return q


class Piece(torch.nn.Module):
    """k_proj's or v_proj's place: returns what JoinedQKV left in the slot for it (once)."""

    def __init__(self, joined: JoinedQKV, index: int):
        super().__init__()
        self.index, self.slot = index, joined.slot  # the slot, not the module: no second registration

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cells = self.slot.cells()
        out = cells[self.index]
        if out is None:
            raise RuntimeError("a joined key/value projection was called before its query projection")
        cells[self.index] = None
        return out


def _joined_mlp_forward(self, x: torch.Tensor) -> torch.Tensor:
    gate, up = F.linear(x, self.playground_gate_up).chunk(2, dim=-1)  # [.., 2I] -> 2 x [.., I]
    return self.down_proj(self.act_fn(gate) * up)


def plain(*layers) -> bool:
    """Plain linear layers (not quantized, not joined already, not offloaded) on one device, of one
    dtype, all with a bias or none."""
    return (all(type(layer) is torch.nn.Linear and "forward" not in layer.__dict__ and layer.weight.device.type != "meta"
                for layer in layers)  # (a forward replaced on the instance: a hook)
            and len({(layer.weight.device, layer.weight.dtype, layer.bias is None) for layer in layers}) == 1)


def fuse_projections(model: torch.nn.Module) -> int:
    """Join the projections of every layer of a known kind (see ATTENTIONS, MLPS) whose projections
    are plain; -> modules joined now (0 when none is known, or when they were joined before)."""
    joined = 0
    for module in list(model.modules()):
        kind = type(module).__name__
        if kind in ATTENTIONS and plain(module.q_proj, module.k_proj, module.v_proj):
            qkv = JoinedQKV(module.q_proj, module.k_proj, module.v_proj)
            module.q_proj, module.k_proj, module.v_proj = qkv, Piece(qkv, 0), Piece(qkv, 1)
            joined += 1
        elif kind in MLPS and "playground_gate_up" not in module._parameters \
                and plain(module.gate_proj, module.up_proj) and module.gate_proj.bias is None:
            module.playground_gate_up = torch.nn.Parameter(
                torch.cat([module.gate_proj.weight, module.up_proj.weight]), requires_grad=False)
            del module.gate_proj, module.up_proj
            module.forward = types.MethodType(_joined_mlp_forward, module)
            joined += 1
    return joined
