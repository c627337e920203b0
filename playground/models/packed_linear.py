"""bfloat16 and float32 matrix products on a CPU with weights packed once for oneDNN, the layout its
kernels read fastest (what inductor does for compiled CPU models), instead of repacked on every
call (float32: instead of MKL, whose small products cost 1.5-2.9x a one-row one on an AMD EPYC; batch-invariant
float32 models take row_products' kernel instead wherever it is built, and get no packed copy).

Measured on a 2-core AMD EPYC with AVX512-BF16 (torch 2.13, one thread): a one-row product with a
1536 x 576 weight 82 -> 45 us, with SmolLM2's 8,191-row draft head 457 -> 176 us; a whole
SmolLM2-135M pass of 1 to 8 tokens about 25% less. The packed copy is a second copy of the weights,
so only models whose linear weights fit in MAX_PACKED_BYTES get one.

Exactness: products of 2 to 16 rows agree row by row, bitwise, as with unpacked weights, so
batch_invariant (one row computed as two) keeps a pass of k+1 tokens equal to k+1 passes of one."""
import torch
import torch.nn.functional as F

MAX_PACKED_BYTES = 1 << 30  # a model's linear weights past this stay unpacked (memory)
ATTR = "playground_packed"  # a packed module's packed weight


def can_pack(weight: torch.Tensor) -> bool:
    """bfloat16 or float32 weights on the CPU, where oneDNN is built in. (Callers pack bfloat16 only
    on CPUs that multiply it natively: exactness was checked there, not on emulated bfloat16.)"""
    return (weight.device.type == "cpu" and weight.dtype in (torch.bfloat16, torch.float32)
            and torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


def pack(weight: torch.Tensor) -> torch.Tensor | None:
    """weight [out, in] -> its packed copy, or None where it cannot be packed."""
    if not can_pack(weight):
        return None
    try:
        return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), 2)  # 2: rows of a typical pass
    except RuntimeError:
        return None


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, packed: torch.Tensor | None):
    """F.linear(x, weight, bias), from the packed weight where there is one and x is on the CPU."""
    if packed is None or x.device.type != "cpu" or x.dtype != packed.dtype:
        return F.linear(x, weight, bias)
    return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "none", [], "")


def packed_forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """nn.Linear.forward through the module's packed weight."""
    return linear(x, self.weight, self.bias, self.__dict__.get(ATTR))


def pack_linears(model: torch.nn.Module) -> bool:
    """Give every nn.Linear of a bfloat16 CPU model a packed weight (in place); False where it
    cannot be packed or is too big to keep two copies of."""
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    size = sum(m.weight.numel() * m.weight.element_size() for m in layers)
    if not layers or size > MAX_PACKED_BYTES or not can_pack(layers[0].weight):
        return False
    for module in layers:
        module.__dict__[ATTR] = pack(module.weight)
        module.forward = packed_forward.__get__(module)
    return True
