"""Make a CPU model's logits independent of how many tokens a pass carries, so that a verify pass
over k+1 tokens gives bitwise the logits that k+1 one-token passes give, and greedy speculation
stays identical to the target alone in bfloat16.

Why it is needed: in bfloat16 on a CPU (oneDNN), a matrix product with one input row takes another
kernel than one with two or more rows (a matrix-vector product that sums in another order), and
PyTorch's fused attention (SDPA) picks its blocking from the number of queries. Measured on
SmolLM2-135M (2-core AMD EPYC with AVX512-BF16, torch 2.13): 5-15% of greedy next tokens then
differ between passes of k+1 tokens and of one. Products of 2 to 16 rows agree row by row, bitwise,
and so does the eager attention (matmul, softmax, matmul). Hence: eager attention, and every
one-row linear computed as two identical rows, keeping the first.

What it costs: with unpacked weights, little: a bfloat16 pass of 1 to 5 tokens costs about the
same (61-73 ms for SmolLM2-135M on 2 cores; whole target-alone runs with one-row products were
1.08x faster), while float32's small products are not flat
(72 ms at one token, 109-134 ms at two to five). With packed weights (playground.packed_linear) a
one-token pass costs 38 ms with two rows against 34 ms with one (and a 4-token pass 33 ms): the
exact target alone runs about 1.18x slower than one with one-row products, whose tokens differ."""
import torch

from playground.packed_linear import ATTR, linear

ATTENTION = "eager"  # the attention implementation whose rows do not depend on the query count


def two_row_linear(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """nn.Linear.forward, with a single input row computed as the first of two equal rows (from the
    packed weight where playground.packed_linear gave the module one)."""
    packed = self.__dict__.get(ATTR)
    if x.numel() != x.shape[-1]:
        return linear(x, self.weight, self.bias, packed)
    rows = x.reshape(1, -1).expand(2, -1).contiguous()  # [2, in]
    return linear(rows, self.weight, self.bias, packed)[:1].reshape(*x.shape[:-1], -1)


def make_batch_invariant(model: torch.nn.Module) -> torch.nn.Module:
    """Patch every nn.Linear of a model loaded with attn_implementation=ATTENTION (in place)."""
    attention = getattr(model.config, "_attn_implementation", None)
    if attention != ATTENTION:
        raise ValueError(f"load the model with attn_implementation='{ATTENTION}' (it has {attention})")
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.forward = two_row_linear.__get__(module)
    model.playground_batch_invariant = True
    return model
