"""Programmatic dependent launch (Hopper, compute capability 9.0, and later): a kernel launched this
way may be placed on the multiprocessors while the kernel before it on its stream is still
finishing, and waits for that one's end (griddepcontrol.wait: all its writes visible) before it
touches what that one may touch; the kernel before may let it in once it has read its inputs
(griddepcontrol.launch_dependents). What it saves is the gap between two kernels (one draining, the
next being launched and its programs set up), which a CUDA graph's replay shrinks but does not remove.

Why it may matter here: on an H200 (2026-12-04, BENCHMARKS.md "GPU") a Qwen2.5-0.5B-shaped draft
step was about 360 kernels in 1.25 ms, 24 layers of about 15, of which the four products took 22 us
a layer and the rest (attention, norms, rotary, the cache write, split-K's reduce and the gaps
between them) about 27. Whether it pays is not yet measured: scripts/gpu_check.py --only pdl builds
the pair with and without it in one process, rows interleaved.

Opt-in: PLAYGROUND_PDL=1 launches the Triton kernels of a compiled pass this way on such a GPU:
the engine's own (fused_linear, decode_attention: each program waits before its first load or
store, and lets the next kernel in after its main loop; fused_linear's first ask L2 for their
weights, where a weight fits in half of it), and inductor's (torch.compile's option
triton.enable_pdl, experimental in torch 2.11: a kernel waits before it touches a buffer the kernel
just before it touched, and before it lets the next in, which a kernel without loads never does;
tests/test_gpu.py checks that each of a compiled pair's dependent kernels waits). cuBLAS's products
and PyTorch's own kernels launch as they always do: after the kernel before them has ended."""
import functools

import torch

from playground.limits import env_flag

ON = env_flag("PLAYGROUND_PDL", False)  # read at import; scripts/gpu_check.py sets it per variant
PREFETCH = True  # launched dependent, fused_linear's programs first ask L2 for their weights (prefetch.global.L2):
# the product may stream them while the kernel before ends (gpu_check's `fused` times both); only a weight
# that fits in half of L2 (a 0.5B draft's largest, its joined gate/up, is 17 MB; a 7B's 271 MB would evict itself)


def launches_dependent(device: torch.device) -> bool:
    """Whether kernels for this device launch programmatically dependent: ON, and a GPU that has it."""
    return ON and device.type == "cuda" and _hopper_or_later(device.index if device.index is not None
                                                             else torch.cuda.current_device())


@functools.cache
def _hopper_or_later(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] >= 9


def prefetches(weight: torch.Tensor) -> bool:
    """Whether a product launched dependent asks L2 for this weight first: PREFETCH, and it fits in half of L2."""
    return PREFETCH and weight.numel() * weight.element_size() <= _l2_bytes(weight.device.index) // 2


@functools.cache
def _l2_bytes(index: int) -> int:
    return torch.cuda.get_device_properties(index).L2_cache_size


def kernel_options(device: torch.device) -> dict:
    """An engine kernel's launch arguments for this device: its PDL constant, and Triton's launch_pdl
    where that is on (only then: the interpreter, which the CPU tests run, knows no launch options)."""
    return {"PDL": True, "launch_pdl": True} if launches_dependent(device) else {"PDL": False}


def inductor_options(device: torch.device) -> dict:
    """torch.compile options that make inductor's Triton kernels launch dependent where this device's do."""
    return {"triton.enable_pdl": True} if launches_dependent(device) else {}
