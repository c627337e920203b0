"""A float32 CPU model loaded from a bfloat16 checkpoint without a float32 copy of every weight on the way.

A float32 model past placement.SMALL_MODEL has its linear layers' products from row_products' kernel, which reads a
weight held in bfloat16 as the float32 one, bitwise, where every value is a bfloat16 one (row_products.hold_halved).
Loaded in float32 and then halved, Qwen2.5-7B's 7.6 billion weights peak near 30 GB (every weight in float32 at once);
loaded in bfloat16, its linear weights kept so and every other tensor widened to float32 (embeddings, norms, biases,
buffers), the same model peaks near its final 17 GB. The values are the float32 load's: bfloat16 widens exactly."""
import pathlib

import torch
from safetensors import SafetensorError, safe_open

from playground.models import placement, row_products
from playground.models.batch_invariant import LOADED_IN_HALVES


def loads_in_halves(path: pathlib.Path, device: torch.device, dtype: torch.dtype, need_bytes: int) -> bool:
    """Whether a float32 load of this checkpoint goes in halves: on a CPU, batch-invariant (placement.attention_for),
    the kernel built (it reads the bfloat16 weights), every floating tensor stored in bfloat16."""
    return (device.type == "cpu" and dtype == torch.float32 and bool(placement.attention_for(device, dtype, need_bytes))
            and row_products.kernel() is not None and stored_in_bf16(path))


def stored_in_bf16(path: pathlib.Path) -> bool:
    """Whether every floating tensor of a checkpoint is bfloat16, read from its safetensors files' headers: not where
    one cannot be read, where it holds none or other weights files (.bin), nor a quantized checkpoint (integer weights
    beside bfloat16 scales). Before the download (no weights file there yet), as config.json says."""
    if "quantization_config" in placement.config_fields(path):
        return False
    present = [f for f in (*path.glob("*.safetensors"), *path.glob("*.bin")) if f.is_file()]  # (a pruned blob: none)
    if not present:
        return placement.stored_dtype(path) == "bfloat16"
    kinds = set()
    try:
        for file in present:
            with safe_open(file, "pt") as weights:
                kinds.update(weights.get_slice(key).get_dtype() for key in weights.keys())
    except (OSError, SafetensorError):  # (a .bin file too: not safetensors)
        return False  # loading says what is wrong
    return "BF16" in kinds and kinds <= STORED_AS_IS


STORED_AS_IS = {"BF16", "I64", "I32", "BOOL"}  # bfloat16 weights and integer or boolean buffers (position ids...)


def widen_all_but_linears(model: torch.nn.Module) -> None:
    """Every floating tensor of a model loaded in bfloat16 widened to float32 in place (a tied weight stays tied: the
    tensor is replaced, not the Parameter), linear layers' weights copied out of the checkpoint's mapped file (which
    loading leaves them views of: its pages would be counted as free memory, and a file rewritten in place would end
    the process) and kept in bfloat16 for the kernel (make_batch_invariant, told by LOADED_IN_HALVES). One tensor at a
    time: the peak is the model loaded and one tensor past the result."""
    for module in model.modules():
        for name, tensor in [*module.named_parameters(recurse=False), *module.named_buffers(recurse=False)]:
            if not tensor.is_floating_point() or tensor.dtype == torch.float32:
                continue
            linear_weight = isinstance(module, torch.nn.Linear) and name == "weight"
            tensor.data = tensor.data.clone() if linear_weight else tensor.data.float()
    model.config.dtype = torch.float32
    setattr(model, LOADED_IN_HALVES, True)


def halves_bytes(path: pathlib.Path) -> int | None:
    """Memory a load in halves ends with: linear weights 2 bytes each, every other one 4, an output layer tied to the
    embedding both (its bfloat16 copy held for the kernel beside the float32 embedding); from config.json, None where
    transformers cannot build the model from it."""
    sizes = placement.config_parameters(path)
    if sizes is None:
        return None
    parameters, linear, tied = sizes
    return 2 * linear + 4 * (parameters - linear + tied)
